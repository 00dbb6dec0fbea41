import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { WireObserver, canonicalJson, digestOfTerminal, parseJsonBody, requestWorkDigest } from '../src/index.js';
import type { JsonRpcRequest, JsonRpcResponse } from '../src/index.js';

/*
 * JSON as deep as a body can carry, and JSON after a byte order mark: what the observer reads of a
 * server's or a client's body never recurses over it (issue 37), and a defect of observation never
 * reaches the body's reader: the body stands aside, its bytes unchanged.
 */

const URL_ = 'http://127.0.0.1:1/mcp';

/** JSON text nested `depth` objects deep, two members each. */
function nested(depth: number): string {
  return '{"b":0,"a":'.repeat(depth) + '"leaf"' + '}'.repeat(depth);
}

const response = (result: unknown): JsonRpcResponse => ({ jsonrpc: '2.0', id: 1, result });

describe('JSON.parse', () => {
  it("takes 100,000 levels (V8's parser is iterative on Node 20): what it gives, the walkers must take", () => {
    const parsed = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000)) as unknown;
    let depth = 0;
    for (let v = parsed; Array.isArray(v) && v.length > 0; v = v[0] as unknown) depth++;
    expect(depth).toBe(99_999);
  });
});

describe('the terminal digest', () => {
  it('takes a result nested 100,000 deep in bounded work: a difference within its budget counts, one past it not', () => {
    const text = nested(100_000);
    const digest = (json: string) => digestOfTerminal(response(JSON.parse(json)));
    expect(digest(text)).toBe(digest(nested(100_000)));
    // Within the budget of values walked (65,536: about 32,000 of these levels of two values each).
    expect(digest(text.replace('{"b":0,', '{"b":1,'))).not.toBe(digest(text));
    const level = 20_000 * '{"b":0,"a":'.length;
    expect(digest(text.slice(0, level) + text.slice(level).replace('{"b":0,', '{"b":1,'))).not.toBe(digest(text));
    // Past it, what is left is not walked (as the text digest hashed a bounded prefix): the same digest.
    expect(digest(text.replace('"leaf"', '"fig"'))).toBe(digest(text));
    expect(digest(nested(1_000).replace('"leaf"', '"fig"'))).not.toBe(digest(nested(1_000)));
  });

  it('is independent of object key order, and only of it', () => {
    const a = { content: [{ type: 'text', text: 'done' }], structuredContent: { x: 1, y: [1, 2] }, isError: false };
    const reordered = {
      isError: false,
      structuredContent: { y: [1, 2], x: 1 },
      content: [{ text: 'done', type: 'text' }],
    };
    expect(digestOfTerminal(response(reordered))).toBe(digestOfTerminal(response(a)));
    // Array order counts; a value moved to another key counts; a string is not its number; result is not error.
    for (const different of [
      { ...a, structuredContent: { x: 1, y: [2, 1] } },
      { ...a, structuredContent: { x: [1, 2], y: 1 } },
      { ...a, structuredContent: { x: '1', y: [1, 2] } },
      { ...a, structuredContent: { x: 1, y: [1, 2], z: null } },
      { ...a, structuredContent: { xy: 1, y: [1, 2] } },
    ])
      expect(digestOfTerminal(response(different))).not.toBe(digestOfTerminal(response(a)));
    expect(digestOfTerminal({ jsonrpc: '2.0', id: 1, error: a as never })).not.toBe(digestOfTerminal(response(a)));
  });

  it('makes a replay whose server wrote the keys in another order a duplicate, not a conflict', () => {
    const observer = new WireObserver();
    const terminals: { duplicate: boolean; conflict: boolean }[] = [];
    observer.addListener({ onEvent: (event) => void terminals.push(...event.terminals) });
    const headers = { 'content-type': 'application/json', 'mcp-session-id': 's1' };
    const call = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'store' } };
    const post = observer.proxyRequest(URL_, { method: 'POST', headers, body: Buffer.from(JSON.stringify(call)) });
    const sink = { enqueue: () => undefined };
    const body = observer.proxyResponse(post, 200, { 'content-type': 'text/event-stream' }, true)!;
    body.chunk(Buffer.from('id: e1\ndata: {"jsonrpc":"2.0","id":3,"result":{"a":1,"b":{"c":2,"d":3}}}\n\n'), sink);
    body.end(sink);
    const resume = observer.proxyRequest(URL_, { headers: { 'mcp-session-id': 's1', 'last-event-id': 'e0' } });
    const replay = observer.proxyResponse(resume, 200, { 'content-type': 'text/event-stream' }, true)!;
    replay.chunk(Buffer.from('id: e1\ndata: {"result":{"b":{"d":3,"c":2},"a":1},"id":3,"jsonrpc":"2.0"}\n\n'), sink);
    replay.chunk(Buffer.from('id: e2\ndata: {"jsonrpc":"2.0","id":3,"result":{"a":1,"b":{"c":2,"d":4}}}\n\n'), sink);
    expect(terminals.map((t) => [t.duplicate, t.conflict])).toEqual([
      [false, false],
      [true, false],
      [false, true],
    ]);
  });
});

describe('the work digest', () => {
  it('takes arguments nested 100,000 deep: the canonical text and its SHA-256, as for any arguments', () => {
    const text = nested(100_000);
    const sorted = '{"a":'.repeat(100_000) + '"leaf"' + ',"b":0}'.repeat(100_000);
    expect(canonicalJson(JSON.parse(text))).toBe(sorted);
    const call: JsonRpcRequest = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'store', arguments: JSON.parse(text) as unknown },
    };
    const expected = createHash('sha256').update(`tools/call\nstore\n${sorted}`).digest('hex');
    expect(requestWorkDigest(call)).toBe(expected);
    // Arguments on the fast path (keys in order, shallow) give the digest of their text as before.
    const flat: JsonRpcRequest = { ...call, params: { name: 'store', arguments: { a: 1, b: [true] } } };
    expect(requestWorkDigest(flat)).toBe(
      createHash('sha256').update('tools/call\nstore\n{"a":1,"b":[true]}').digest('hex'),
    );
  });
});

describe('a JSON body after a byte order mark', () => {
  it('is parsed, as res.json() and json.loads(bytes) parse it; one mark only', () => {
    const result = '{"jsonrpc":"2.0","id":1,"result":{}}';
    expect(parseJsonBody(`\uFEFF${result}`)).toEqual([JSON.parse(result)]);
    expect(parseJsonBody(`\uFEFF\uFEFF${result}`)).toEqual([]);
  });

  it('is read by the observer: its request gets its terminal', () => {
    const observer = new WireObserver();
    const terminals: unknown[] = [];
    observer.addListener({ onEvent: (event) => void terminals.push(...event.terminals) });
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'store' } };
    const request = observer.proxyRequest(URL_, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': 's1' },
      // A request body after a mark as well (a TextDecoder drops it).
      body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(call))]),
    });
    expect(request.requests.map((r) => r.id)).toEqual(['1']);
    const body = observer.proxyResponse(request, 200, { 'content-type': 'application/json' }, true)!;
    const sink = { enqueue: () => undefined };
    body.chunk(Buffer.from([0xef, 0xbb, 0xbf]), sink);
    body.chunk(Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'), sink);
    body.end(sink);
    expect(terminals).toHaveLength(1);
  });
});

describe('an SSE event whose data starts with a byte order mark', () => {
  it("is no message, as the SDK's JSON.parse(event.data) refuses it (a stream-start mark is skipped)", () => {
    const observer = new WireObserver();
    const terminals: unknown[] = [];
    observer.addListener({ onEvent: (event) => void terminals.push(...event.terminals) });
    const request = observer.proxyRequest(URL_, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': 's1' },
      body: Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'),
    });
    const body = observer.proxyResponse(request, 200, { 'content-type': 'text/event-stream' }, true)!;
    const sink = { enqueue: () => undefined };
    const result = '{"jsonrpc":"2.0","id":1,"result":{}}';
    expect(() => JSON.parse(`\uFEFF${result}`) as unknown).toThrow(SyntaxError);
    body.chunk(Buffer.from(`id: a\ndata: \uFEFF${result}\n\n`), sink);
    expect(terminals).toHaveLength(0);
    // The mark at the stream's start is the event stream's own, skipped as the WHATWG rules say.
    const second = observer.proxyResponse(
      observer.proxyRequest(URL_, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'mcp-session-id': 's1' },
        body: Buffer.from('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}'),
      }),
      200,
      { 'content-type': 'text/event-stream' },
      true,
    )!;
    second.chunk(Buffer.from(`\uFEFFid: b\ndata: ${result.replace('"id":1', '"id":2')}\n\n`), sink);
    expect(terminals).toHaveLength(1);
  });
});

describe('a body whose observation throws', () => {
  /** An observer with a listener that throws at the event whose data holds "boom" (a defect of a listener). */
  function failing(filters: boolean) {
    const failures: unknown[] = [];
    const observer = new WireObserver({ onObservationFailure: (e) => void failures.push(e) });
    let told = 0;
    observer.addListener(
      {
        onEvent: (event) => {
          told++;
          if (event.sse?.data.includes('boom')) throw new Error('a listener defect');
          return !event.sse?.data.includes('drop');
        },
      },
      { filters },
    );
    const request = observer.proxyRequest(URL_, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': 's1' },
      body: Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'),
    });
    const body = observer.proxyResponse(request, 200, { 'content-type': 'text/event-stream' }, true)!;
    const out: Buffer[] = [];
    const sink = { enqueue: (bytes: Uint8Array) => void out.push(Buffer.from(bytes)) };
    return { observer, body, sink, out, failures, told: () => told };
  }

  for (const filters of [false, true]) {
    it(`stands aside: every byte from there passes as it came, nothing more observed, counted (${filters ? 'filtering' : 'observing'})`, () => {
      const { observer, body, sink, out, failures, told } = failing(filters);
      const chunks = [
        'data: one\n\ndata: drop\n\ndata: two',
        ' continued\n\ndata: boom\n\ndata: drop',
        ' again\n\n',
        'data: three\n\n',
      ];
      for (const chunk of chunks) body.chunk(Buffer.from(chunk), sink);
      body.end(sink);
      // Filtering: the event removed before the failure stays removed; from the failing chunk on, all passes.
      const before = filters ? 'data: one\n\n' : 'data: one\n\ndata: drop\n\ndata: two';
      expect(Buffer.concat(out).toString()).toBe(
        filters ? before + chunks.join('').slice(chunks[0]!.indexOf('data: two')) : chunks.join(''),
      );
      expect([failures.length, observer.observationFailures, told()]).toEqual([1, 1, 4]);
      expect(observer.stats().heldBytes).toBe(0);
    });
  }
});

describe('a batch event some of whose messages a filtering listener removes', () => {
  it('is rewritten from the kept messages as the server wrote them, at any depth', () => {
    const observer = new WireObserver();
    observer.addListener(
      {
        onEvent: (event) => {
          if (event.messages.length > 1) event.removeMessage(0);
          return true;
        },
      },
      { filters: true },
    );
    const request = observer.proxyRequest(URL_, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': 's1' },
      body: Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'),
    });
    const body = observer.proxyResponse(request, 200, { 'content-type': 'text/event-stream' }, true)!;
    const out: Buffer[] = [];
    const sink = { enqueue: (bytes: Uint8Array) => void out.push(Buffer.from(bytes)) };
    const deep = `{"jsonrpc":"2.0","id":1,"result":${nested(10_000)}}`;
    const note = '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"a \\"quoted\\" ], text"}}';
    // Multi-line data: the lines join with a line break, which the rewritten event's one line must not hold.
    body.chunk(Buffer.from(`id: b1\ndata: [${note},\ndata:  "not a message", ${deep} ]\n\n`), sink);
    body.end(sink);
    expect(Buffer.concat(out).toString()).toBe(`id: b1\ndata: [${deep}]\n\n`);
  });
});

describe('a fetch body whose observation throws', () => {
  it("stands aside: the application reads the server's bytes, and no exception", async () => {
    const text = 'data: one\n\ndata: boom\n\ndata: drop\n\n';
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(text.slice(0, 15));
      setImmediate(() => res.end(text.slice(15)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const failures: unknown[] = [];
      const observer = new WireObserver({ onObservationFailure: (e) => void failures.push(e) });
      observer.addListener(
        {
          onEvent: (event) => {
            if (event.sse?.data === 'boom') throw new Error('a listener defect');
            return event.sse?.data !== 'drop';
          },
        },
        { filters: true },
      );
      const response = await observer.wrap()(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}',
      });
      expect(await response.text()).toBe(text);
      expect([failures.length, observer.observationFailures]).toEqual([1, 1]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
