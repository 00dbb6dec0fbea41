// Tasks at the wire's edges, over a hand-written server on loopback HTTP (every byte under the test's
// control): the 2026-07-28 extension's shape (resultType task, tasks/get with the outcome inline, a task
// gone), and the re-issue of a task call whose reply was lost, in both eras, with and without the same
// idempotency key: a client's (instrumentFetch), and a proxy's (the recorder on the observer's proxy door).
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_TASK_GONE,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_REQUESTED,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  EXTENSION_TASKS,
  META_CLIENT_CAPABILITIES,
  META_IDEMPOTENCY_KEY,
  STATELESS_PROTOCOL_VERSION,
  TaskGone,
  TaskMethod,
  TaskShape,
  TaskStatus,
} from '@resumewatch/semconv';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WireObserver } from '@resumewatch/wire';
import { tracerSource } from '../src/instrument-fetch.js';
import { SpanRecorder } from '../src/span-recorder.js';
import { attr, captureSpans, capturedFetch } from './helpers/spans.js';

const SESSION_VERSION = '2025-11-25';

interface Rpc {
  id: number;
  method: string;
  params?: { name?: string; taskId?: string };
}

/** Per tool name: how many calls to cut before one is answered (`headers`: after the SSE headers and an event). */
const cuts = new Map<string, { left: number; after: 'nothing' | 'headers' }>();
let url = '';

function answer(res: ServerResponse, rpc: Rpc, body: object): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, ...body }));
}

function handle(req: IncomingMessage, res: ServerResponse, rpc: Rpc): void {
  const task = { taskId: 'E1', status: TaskStatus.WORKING, ttlMs: 30_000, pollIntervalMs: 250 };
  if (rpc.method === 'tools/call') {
    const cut = cuts.get(rpc.params?.name ?? '');
    if (cut && cut.left > 0) {
      cut.left--;
      // The connection drops before the handle was read: before any byte, or mid-stream.
      if (cut.after === 'nothing') req.socket.destroy();
      else {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(
          'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n',
        );
        setTimeout(() => req.socket.destroy(), 20);
      }
      return;
    }
    return answer(res, rpc, { result: { resultType: 'task', ...task } });
  }
  if (rpc.method === 'tasks/get' && rpc.params?.taskId === 'E1')
    return answer(res, rpc, {
      result: { resultType: 'complete', ...task, status: TaskStatus.COMPLETED, result: { content: [] } },
    });
  if (rpc.method === 'tasks/get') return answer(res, rpc, { error: { code: -32602, message: 'Task has expired' } });
  answer(res, rpc, { result: {} });
}

const server = createServer((req, res) => {
  let text = '';
  req.on('data', (chunk: Buffer) => (text += chunk.toString()));
  req.on('end', () => handle(req, res, JSON.parse(text) as Rpc));
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => cuts.clear());

function client(version: string) {
  const { capture, fetch } = capturedFetch();
  let id = 1;
  const post = async (method: string, params: object, headers: Record<string, string> = {}) => {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          'mcp-protocol-version': version,
          ...(version === SESSION_VERSION ? { 'mcp-session-id': 'session-1' } : {}),
          ...headers,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }),
      });
      return await res.text();
    } catch {
      return undefined; // the connection dropped
    }
  };
  return { capture, post };
}

const extensionMeta = { [META_CLIENT_CAPABILITIES]: { extensions: { [EXTENSION_TASKS]: {} } } };

describe('tasks, 2026-07-28 extension shape', () => {
  it('the handle (resultType task), tasks/get with the outcome inline, and a task gone', async () => {
    const { capture, post } = client(STATELESS_PROTOCOL_VERSION);
    await post('tools/call', { name: 'work', arguments: {}, _meta: extensionMeta });
    await post('tasks/get', { taskId: 'E1' }, { 'mcp-name': 'E1' });
    await post('tasks/get', { taskId: 'E0' }, { 'mcp-name': 'E0' });

    const [call] = capture.spans('tools/call work');
    expect(attr(call!, ATTR_MCP_TASK_REQUESTED)).toBe(true);
    expect(attr(call!, ATTR_MCP_TASK_ID)).toBe('E1');
    expect(attr(call!, ATTR_MCP_TASK_SHAPE)).toBe(TaskShape.EXTENSION);
    expect(attr(call!, ATTR_MCP_TASK_TTL_MS)).toBe(30_000);
    expect(attr(call!, ATTR_MCP_TASK_POLL_INTERVAL_MS)).toBe(250);
    const [done, gone] = capture.spans('tasks/get');
    expect(attr(done!, ATTR_MCP_TASK_ID)).toBe('E1');
    expect(attr(done!, ATTR_MCP_TASK_STATUS)).toBe(TaskStatus.COMPLETED);
    // 2026-07-28: a completed tasks/get carries the result inline: the outcome reached the client.
    expect(attr(done!, ATTR_MCP_TASK_OUTCOME_DELIVERED)).toBe(true);
    expect(attr(gone!, ATTR_MCP_TASK_ID)).toBe('E0');
    expect(attr(gone!, ATTR_MCP_TASK_GONE)).toBe(TaskGone.EXPIRED);
  });
});

describe('task ids under the id policy', () => {
  it('omit: no span records a task id; the rest of the task stays', async () => {
    const { capture, fetch } = capturedFetch({ idPolicy: 'omit' });
    for (const [method, params] of [
      ['tools/call', { name: 'work', _meta: extensionMeta }],
      ['tasks/get', { taskId: 'E1' }],
    ] as const)
      await (
        await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'mcp-protocol-version': STATELESS_PROTOCOL_VERSION },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        })
      ).text();
    const spans = [...capture.spans('tools/call work'), ...capture.spans('tasks/get')];
    expect(spans).toHaveLength(2);
    for (const span of capture.spans()) expect(attr(span, ATTR_MCP_TASK_ID)).toBeUndefined();
    for (const span of spans) {
      expect(attr(span, ATTR_MCP_TASK_ID)).toBeUndefined();
      expect(attr(span, ATTR_MCP_TASK_SHAPE)).toBe(TaskShape.EXTENSION);
    }
  });
});

describe('a task call re-issued after its reply was lost', () => {
  for (const after of ['nothing', 'headers'] as const) {
    it(`session era (connection dropped after ${after}): linked to its first attempt, same key marked`, async () => {
      const { capture, post } = client(SESSION_VERSION);
      const name = `task-${after}`;
      cuts.set(name, { left: 1, after });
      const params = { name, arguments: { n: 1 }, task: { ttl: 1000 }, _meta: { [META_IDEMPOTENCY_KEY]: 'k1' } };
      expect(await post('tools/call', params)).toBeUndefined();
      await post('tools/call', params);
      const [first, second] = capture.spans(`tools/call ${name}`);
      expect(attr(first!, ATTR_MCP_TASK_ID)).toBeUndefined();
      expect(attr(second!, ATTR_MCP_TASK_ID)).toBe('E1');
      expect(attr(second!, ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID)).toBe(first!.spanContext().traceId);
      expect(attr(second!, ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID)).toBe(first!.spanContext().spanId);
      expect(attr(second!, ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY)).toBe(true);
      expect(second!.links.map((l) => l.context.spanId)).toEqual([first!.spanContext().spanId]);
    });
  }

  it('session era: no link for a call that asked no task, nor for a different key', async () => {
    const { capture, post } = client(SESSION_VERSION);
    cuts.set('plain', { left: 1, after: 'headers' });
    await post('tools/call', { name: 'plain', arguments: {} });
    await post('tools/call', { name: 'plain', arguments: {} });
    expect(capture.spans('tools/call plain').map((s) => attr(s, ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID))).toEqual([
      undefined,
      undefined,
    ]);

    cuts.set('keyed', { left: 1, after: 'headers' });
    const params = (key: string) => ({ name: 'keyed', task: {}, _meta: { [META_IDEMPOTENCY_KEY]: key } });
    await post('tools/call', params('k1'));
    await post('tools/call', params('k2'));
    const [, second] = capture.spans('tools/call keyed');
    expect(attr(second!, ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID)).toBeDefined();
    expect(attr(second!, ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY)).toBeUndefined();
  });

  it('2026-07-28: the re-issue link says when both attempts carry the same key', async () => {
    const { capture, post } = client(STATELESS_PROTOCOL_VERSION);
    cuts.set('modern', { left: 1, after: 'headers' });
    const params = { name: 'modern', arguments: {}, _meta: { [META_IDEMPOTENCY_KEY]: 'k9' } };
    await post('tools/call', params);
    await post('tools/call', params);
    const [first, second] = capture.spans('tools/call modern');
    expect(attr(second!, ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID)).toBe(first!.spanContext().spanId);
    expect(attr(second!, ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY)).toBe(true);
  });
});

describe('at a proxy (the gateway runs the same recorder), session era', () => {
  const sink = { enqueue: () => undefined };

  /** As the gateway runs it (gateway/src/observation.ts). */
  function proxy() {
    const capture = captureSpans();
    const observer = new WireObserver({
      releaseOnTransportClose: false,
      sessionlessApart: true,
      confirmDelivery: true,
    });
    observer.addListener(
      new SpanRecorder({ tracer: tracerSource(capture.provider), observer, requestTimeoutMs: 60_000 }),
    );
    const send = (id: number, client: string, params: object, method = 'tools/call') =>
      observer.proxyRequest(
        'http://127.0.0.1:1/mcp',
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'mcp-session-id': 'session-p',
            'mcp-protocol-version': SESSION_VERSION,
          },
          body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        },
        client,
      );
    /** The client's connection drops before the reply: the proxy aborts the exchange. */
    const dropped = (id: number, client: string, params: object) => {
      const body = observer.proxyResponse(
        send(id, client, params),
        200,
        { 'content-type': 'text/event-stream' },
        true,
      )!;
      body.fail(Object.assign(new Error('client_gone'), { name: 'AbortError' }));
    };
    /** Answered with a handle, whole. */
    const answered = (id: number, client: string, params: object) => {
      const body = observer.proxyResponse(send(id, client, params), 200, { 'content-type': 'application/json' }, true)!;
      const handle = { task: { taskId: `T${id}`, status: TaskStatus.WORKING, ttl: 1000, pollInterval: 100 } };
      body.chunk(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, result: handle })), sink);
      body.end(sink);
    };
    /** A tasks/result answered with the task's result: its outcome delivered. */
    const resultFetched = (id: number, client: string, taskId: string) => {
      const body = observer.proxyResponse(
        send(id, client, { taskId }, TaskMethod.RESULT),
        200,
        { 'content-type': 'application/json' },
        true,
      )!;
      body.chunk(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, result: { content: [] } })), sink);
      body.end(sink);
    };
    return { capture, dropped, answered, resultFetched };
  }

  it("a task call whose client dropped, re-issued by the same client: linked, same key marked; another client's is not", () => {
    const { capture, dropped, answered } = proxy();
    const params = { name: 'work', arguments: { a: 1 }, task: {}, _meta: { [META_IDEMPOTENCY_KEY]: 'k1' } };
    dropped(1, 'client-a', params);
    // Another client asking for the same work is no re-issue.
    answered(2, 'client-b', params);
    answered(3, 'client-a', params);
    const spans = capture.spans('tools/call work');
    const first = spans.find((s) => attr(s, ATTR_JSONRPC_REQUEST_ID) === '1')!;
    const other = spans.find((s) => attr(s, ATTR_JSONRPC_REQUEST_ID) === '2')!;
    const reissue = spans.find((s) => attr(s, ATTR_JSONRPC_REQUEST_ID) === '3')!;
    expect(attr(other, ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID)).toBeUndefined();
    expect(attr(reissue, ATTR_MCP_TASK_ID)).toBe('T3');
    expect(attr(reissue, ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID)).toBe(first.spanContext().spanId);
    expect(attr(reissue, ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY)).toBe(true);
    expect(reissue.links.map((l) => l.context.spanId)).toEqual([first.spanContext().spanId]);
  });

  it('a keyed task call answered whole, repeated by its client with the key: linked, same key marked (the key is the evidence)', () => {
    // The proxy wrote the whole handle: it cannot know its client never read it. The key says the repeat
    // is the same work, so the second task is a duplicate whatever became of the first reply.
    const { capture, answered } = proxy();
    const keyed = (key: string) => ({
      name: 'charge',
      arguments: { a: 1 },
      task: {},
      _meta: { [META_IDEMPOTENCY_KEY]: key },
    });
    answered(1, 'client-a', keyed('k1'));
    answered(2, 'client-b', keyed('k1'));
    answered(3, 'client-a', keyed('k2'));
    answered(4, 'client-a', { name: 'charge', arguments: { a: 1 }, task: {} });
    answered(5, 'client-a', keyed('k1'));
    const spans = capture.spans('tools/call charge');
    const byId = (id: string) => spans.find((s) => attr(s, ATTR_JSONRPC_REQUEST_ID) === id)!;
    // Another client, another key, no key: not re-issues.
    for (const id of ['2', '3', '4']) expect(attr(byId(id), ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID), id).toBeUndefined();
    const reissue = byId('5');
    expect(attr(reissue, ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID)).toBe(byId('1').spanContext().spanId);
    expect(attr(reissue, ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID)).toBe(byId('1').spanContext().traceId);
    expect(attr(reissue, ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY)).toBe(true);
  });

  it('a keyed task whose outcome was delivered: the key makes new work again, no link', () => {
    const { capture, answered, resultFetched } = proxy();
    const params = { name: 'charge', arguments: { a: 2 }, task: {}, _meta: { [META_IDEMPOTENCY_KEY]: 'k7' } };
    answered(1, 'client-a', params);
    resultFetched(2, 'client-a', 'T1');
    answered(3, 'client-a', params);
    const [, again] = capture.spans('tools/call charge');
    expect(attr(again!, ATTR_MCP_TASK_ID)).toBe('T3');
    expect(attr(again!, ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID)).toBeUndefined();
  });

  it('a call that asked no task, re-issued after its client dropped: given up as before, no link', () => {
    const { capture, dropped, answered } = proxy();
    const params = { name: 'plain', arguments: { a: 1 } };
    dropped(1, 'client-a', params);
    answered(2, 'client-a', params);
    const spans = capture.spans('tools/call plain');
    expect(spans).toHaveLength(2);
    expect(spans.map((s) => attr(s, ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID))).toEqual([undefined, undefined]);
  });
});
