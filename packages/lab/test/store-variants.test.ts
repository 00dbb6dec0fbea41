import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import {
  McpHttpSession,
  ReplayAllStreamsEventStore,
  RequestIdKeyedEventStore,
  startLabServer,
  storeVariantUrl,
} from '../src/index.js';
import type { BoundedEventStore } from '../src/index.js';
import { MisnamesResumedStreamEventStore } from '../src/misnames-resumed-stream-store.js';
import { labRequestContext } from '../src/request-context.js';

const progress = (n: number): JSONRPCMessage => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: 't', progress: n },
});
const result = (id: number, text: string): JSONRPCMessage => ({
  jsonrpc: '2.0',
  id,
  result: { content: [{ type: 'text', text }] },
});
const priming = {} as JSONRPCMessage;

async function replay(store: BoundedEventStore, cursor: string): Promise<{ streamId: string; sent: string[] }> {
  const sent: string[] = [];
  const streamId = await store.replayEventsAfter(cursor, { send: async (id) => void sent.push(id) });
  return { streamId, sent };
}

/** Stores an event as the lab does: inside the context of the HTTP request that carries JSON-RPC request `requestId`. */
function storeFor(
  store: BoundedEventStore,
  requestId: string | undefined,
  streamId: string,
  message: JSONRPCMessage,
): Promise<string> {
  return labRequestContext.run({ sessionId: undefined, jsonRpcRequestId: requestId }, () =>
    store.storeEvent(streamId, message),
  );
}

describe('storeVariantUrl', () => {
  it('appends the variant to the MCP path, replacing a variant already there', () => {
    expect(storeVariantUrl('http://127.0.0.1:8080/mcp', 'never-evict')).toBe('http://127.0.0.1:8080/mcp/never-evict');
    expect(storeVariantUrl('http://127.0.0.1:8080/mcp/', 'bounded')).toBe('http://127.0.0.1:8080/mcp/bounded');
    expect(storeVariantUrl('http://127.0.0.1:8080/mcp/never-evict', 'replay-all-streams')).toBe(
      'http://127.0.0.1:8080/mcp/replay-all-streams',
    );
  });
});

describe('ReplayAllStreamsEventStore (the everything server defect)', () => {
  it('replays every stream of the session after the cursor, priming events included, and names the cursor stream', async () => {
    const store = new ReplayAllStreamsEventStore();
    const g1 = await store.storeEvent('_GET_stream', progress(1));
    const a0 = await store.storeEvent('A', priming);
    const a1 = await store.storeEvent('A', result(1, 'a'));
    const g2 = await store.storeEvent('_GET_stream', progress(2));
    const b1 = await store.storeEvent('B', result(2, 'b'));
    const { streamId, sent } = await replay(store, g1);
    expect(streamId).toBe('_GET_stream');
    expect(sent).toEqual([a0, a1, g2, b1]);
  });
});

describe('RequestIdKeyedEventStore (the Python SDK example store defect)', () => {
  it('replays the events of every stream filed under the same request id, across sessions, and nothing else', async () => {
    const store = new RequestIdKeyedEventStore();
    // Session A's POST for request 1 (stream SA), session B's POST for request 1 (SB), B's request 2 (SB2).
    await storeFor(store, '1', 'SA', priming);
    const a1 = await storeFor(store, '1', 'SA', progress(1));
    const b0 = await storeFor(store, '1', 'SB', priming);
    await storeFor(store, '2', 'SB2', result(2, 'other request'));
    // Later events of a stream keep its key, whatever context stores them.
    const b1 = await storeFor(store, undefined, 'SB', result(1, 'from session B'));
    const a2 = await storeFor(store, undefined, 'SA', result(1, 'from session A'));
    expect(store.keyOf('SA')).toBe('1');
    expect(store.keyOf('SB2')).toBe('2');
    const { streamId, sent } = await replay(store, a1);
    expect(streamId).toBe('SA');
    expect(sent).toEqual([b0, b1, a2]);
  });

  it('files every listening stream under _GET_stream', async () => {
    const store = new RequestIdKeyedEventStore();
    await storeFor(store, '5', '_GET_stream', progress(1));
    expect(store.keyOf('_GET_stream')).toBe('_GET_stream');
  });
});

describe('MisnamesResumedStreamEventStore', () => {
  it("replays the cursor's stream, and names the resumed stream after the last event it replayed", async () => {
    const store = new MisnamesResumedStreamEventStore();
    const cursor = await store.storeEvent('post-1', progress(1));
    const second = await store.storeEvent('post-1', progress(2));
    const third = await store.storeEvent('post-1', progress(3));
    await store.storeEvent('other', progress(9));
    const { streamId, sent } = await replay(store, cursor);
    expect(sent).toEqual([second, third]);
    // Not `post-1`: what the request sends next goes to `post-1`, which the resumed connection is not.
    expect(streamId).toBe(third);
    expect(await store.getStreamIdForEventId(cursor)).toBe('post-1');
    // Nothing to replay: named after the cursor itself.
    expect((await replay(store, third)).streamId).toBe(third);
  });
});

describe('store variants on the lab server', () => {
  it('serves every variant under /mcp/<variant>, 404 for an unknown one, and restores a session on its own path', async () => {
    const lab = await startLabServer();
    try {
      const unknown = await fetch(`${lab.url}/no-such-store`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(unknown.status).toBe(404);
      const session = await McpHttpSession.open(
        storeVariantUrl(lab.url, 'replay-all-streams'),
        fetch,
        'variant-restore',
      );
      await lab.restart();
      // The restart destroyed the client's pooled keep-alive socket; the first request may hit it.
      const call = () => session.callTool('echo', { text: 'after restart' });
      const { read } = await call().catch(call);
      expect(read.status).toBe(200);
      const restores = lab.requestLog(session.sessionId).filter((entry) => entry.restore);
      expect(restores.map((entry) => [entry.method, entry.path])).toEqual([
        ['POST', '/mcp/replay-all-streams'],
        ['POST', '/mcp/replay-all-streams'],
      ]);
    } finally {
      await lab.close();
    }
  });

  it('rejects an unknown default store with a clear error', async () => {
    await expect(startLabServer({ store: 'nope' as never })).rejects.toThrow('unknown store variant nope');
  });
});
