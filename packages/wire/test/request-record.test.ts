// A request's record keeps what later decisions need of it (ids, method, target, digests), computed
// when the request is described, never its body: records live for minutes whatever a client sent.
import { META_IDEMPOTENCY_KEY } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { WireObserver, keyedArgumentsDigest, requestArgumentsDigest, requestWorkDigest } from '../src/index.js';
import type { JsonRpcRequest, RequestRecord } from '../src/index.js';

const URL_ = 'http://127.0.0.1:1/mcp';
const KEY = 'a key of sixteen bytes or more';
const MiB = 1024 * 1024;

function proxyPost(observer: WireObserver, body: unknown, sessionId = 's1'): RequestRecord[] {
  const request = observer.proxyRequest(URL_, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-session-id': sessionId },
    body: Buffer.from(JSON.stringify(body)),
  });
  return [...request.requests];
}

/** Every string the record holds is short, and it holds no object but its first terminal's stream. */
function expectNoBody(record: RequestRecord): void {
  for (const [field, value] of Object.entries(record)) {
    if (typeof value === 'string') expect(value.length, field).toBeLessThanOrEqual(256);
    else if (field !== 'firstTerminalStream') expect(typeof value === 'object' && value !== null, field).toBe(false);
  }
}

describe('a request record', () => {
  it("keeps the digest of the work, the input round and the idempotency key, not the call's arguments", () => {
    const observer = new WireObserver();
    const call: JsonRpcRequest = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: {
        name: 'upload',
        arguments: { blob: 'b'.repeat(MiB), mode: 'x' },
        inputResponses: { confirm: {} },
        _meta: { [META_IDEMPOTENCY_KEY]: 'key-1' },
      },
    };
    const [record] = proxyPost(observer, call);
    expectNoBody(record!);
    expect(record).toMatchObject({ id: '7', method: 'tools/call', target: 'upload', idempotencyKey: 'key-1' });
    expect(record!.inputRound).toBe(true);
    expect(record!.workDigest).toBe(requestWorkDigest(call));
    // Keyed later, it is the keyed digest of the request itself.
    expect(keyedArgumentsDigest(record!.workDigest!, KEY)).toBe(requestArgumentsDigest(call, KEY));

    // A request that names no work has no digest; an idempotency key too long to keep is not kept.
    const [list, long] = proxyPost(observer, [
      { jsonrpc: '2.0', id: 8, method: 'tools/list' },
      {
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'upload', _meta: { [META_IDEMPOTENCY_KEY]: 'k'.repeat(MiB) } },
      },
    ]);
    expect(list!.workDigest).toBeUndefined();
    expect(list!.inputRound).toBe(false);
    expectNoBody(long!);
    expect(long!.idempotencyKey).toBeUndefined();
  });

  it('keeps a long id, method or name as a bounded stand-in, one per string: a response with the id still finds its request', () => {
    const observer = new WireObserver();
    const longId = (n: number) => `${'i'.repeat(MiB)}${n}`;
    const [first, second] = proxyPost(observer, [
      { jsonrpc: '2.0', id: longId(1), method: `m${'m'.repeat(MiB)}`, params: { name: 'n'.repeat(MiB) } },
      { jsonrpc: '2.0', id: longId(2), method: 'tools/call', params: { name: 'upload' } },
    ]);
    expectNoBody(first!);
    expectNoBody(second!);
    expect(first!.id).not.toBe(second!.id);
    expect(first!.id.startsWith('iiii')).toBe(true);
    // Whatever a body holds where a string belongs (a method that is a number) is kept as text.
    expect(proxyPost(observer, { jsonrpc: '2.0', id: 3, method: 5, result: 1 })[0]!.method).toBe('5');
    expect(observer.getRequest('s1', longId(1))).toBe(first);

    const request = observer.proxyRequest(URL_, { method: 'POST', headers: { 'mcp-session-id': 's1' } });
    const body = observer.proxyResponse(request, 200, { 'content-type': 'application/json' }, true)!;
    const sink = { enqueue: () => undefined };
    body.chunk(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: longId(2), result: {} })), sink);
    body.end(sink);
    expect(second!.terminalCount).toBe(1);
    expect(first!.terminalCount).toBe(0);
  });
});
