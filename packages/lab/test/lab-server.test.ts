import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LabControlClient, McpHttpSession, isResponseTo, startFaultProxy, startLabServer } from '../src/index.js';
import type { LabServer } from '../src/index.js';

let lab: LabServer;
let control: LabControlClient;

beforeAll(async () => {
  lab = await startLabServer();
  control = new LabControlClient(lab.controlUrl);
});

afterAll(async () => {
  await lab.close();
});

describe('lab server', () => {
  it('keeps the replayed response open while the request is still running, and ends it with the result', async () => {
    const session = await McpHttpSession.open(lab.url);
    const drop = new AbortController();
    const call = session.toolCall('stream_progress', { count: 6, delay: 40 });
    const first = await session.post(call.message, {
      signal: drop.signal,
      onEvent: (event) => event.message && 'method' in event.message && drop.abort(),
    });
    const cursor = first.events.filter((event) => event.id !== undefined).at(-1)!.id!;
    // Until the server has noticed the dropped connection, the SDK answers 409 (stream still active).
    const resumed = await vi.waitFor(
      async () => {
        const answer = await session.get(cursor);
        if (answer.status === 409) throw new Error('the server still holds the dropped stream (409)');
        return answer;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(resumed.status).toBe(200);
    expect(resumed.end).toBe('clean');
    expect(resumed.events.filter((event) => isResponseTo(event.message, call.id))).toHaveLength(1);
    const progress = [...first.events, ...resumed.events].filter((event) => event.message && 'method' in event.message);
    expect(progress).toHaveLength(6);
  });

  it('a restart keeps session ids, drops buffers, and leaves the side-effect ledger alone', async () => {
    const session = await McpHttpSession.open(lab.url);
    const charged = await session.callTool('side_effect', { key: 'restart-ledger' });
    const cursor = charged.read.events.at(-1)!.id!;
    const before = await control.state();
    const report = await control.restart();
    expect(report.generation).toBe(before.generation + 1);
    // The old cursor names a stream the new buffer never had: 200, nothing replayed.
    const resumed = await session.get(cursor);
    expect(resumed.status).toBe(200);
    expect(resumed.events).toEqual([]);
    const again = await session.callTool('side_effect', { key: 'restart-ledger' });
    expect(again.read.status).toBe(200);
    expect(await control.sideEffectCount('restart-ledger')).toBe(2);
    const state = await control.state();
    expect(state.restarts).toBe(before.restarts + 1);
    expect(state.liveSessions).toBeGreaterThanOrEqual(1);
  });

  it('answers an unknown session with 404 and a malformed cursor with the SDK 400', async () => {
    const session = await McpHttpSession.open(lab.url);
    const unknown = await fetch(lab.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': 'no-such-session' },
    });
    await unknown.body?.cancel();
    expect(unknown.status).toBe(404);
    const malformed = await session.get('not-a-cursor');
    expect(malformed.status).toBe(400);
  });

  it('control endpoint: evict a cursor, read requests, reject unknown routes', async () => {
    const session = await McpHttpSession.open(lab.url);
    const { read } = await session.callTool('stream_progress', { count: 2, delay: 0 });
    const cursor = read.events[0]!.id!;
    const eviction = await control.evict(session.sessionId, cursor);
    expect(eviction.evictedEvents).toBe(read.events.length);
    expect((await session.get(cursor)).status).toBe(404);
    const requests = await control.requests(session.sessionId);
    expect(requests.map((entry) => entry.method)).toEqual(['POST', 'POST', 'POST', 'GET']);
    const missing = await fetch(`${lab.controlUrl}/nothing`);
    await missing.body?.cancel();
    expect(missing.status).toBe(404);
    await expect(control.evict('no-such-session', cursor)).rejects.toThrow(/404/);
  });

  const external = Object.values(networkInterfaces())
    .flat()
    .find((address) => address && address.family === 'IPv4' && !address.internal)?.address;

  it.skipIf(external === undefined)('refuses control requests that do not come from loopback', async () => {
    const open = await startLabServer({ host: '0.0.0.0' });
    try {
      const viaExternal = await fetch(`http://${external}:${open.port}/control/state`);
      await viaExternal.body?.cancel();
      expect(viaExternal.status).toBe(403);
      const session = await McpHttpSession.open(`http://${external}:${open.port}/mcp`);
      expect(session.sessionId).toEqual(expect.any(String));
    } finally {
      await open.close();
    }
  });

  it('hands the event store and transport of each session to the wrap hooks, again when a restart re-creates the session', async () => {
    const stores: { sessionId: string; replays: number }[] = [];
    const transports: string[] = [];
    const hooked = await startLabServer({
      wrapEventStore: (store, sessionId) => {
        const entry = { sessionId, replays: 0 };
        stores.push(entry);
        // A wrapper object, not the store itself: the SDK transport must replay through it.
        return {
          storeEvent: (streamId, message) => store.storeEvent(streamId, message),
          getStreamIdForEventId: (eventId) => store.getStreamIdForEventId(eventId),
          replayEventsAfter: (lastEventId, options) => {
            entry.replays++;
            return store.replayEventsAfter(lastEventId, options);
          },
        };
      },
      onTransport: (_transport, sessionId) => transports.push(sessionId),
    });
    try {
      const session = await McpHttpSession.open(hooked.url);
      const charged = await session.callTool('side_effect', { key: 'hooked' });
      expect(stores).toEqual([{ sessionId: session.sessionId, replays: 0 }]);
      expect(transports).toEqual([session.sessionId]);
      await new LabControlClient(hooked.controlUrl).restart();
      const resumed = await session.get(charged.read.events.at(-1)!.id!);
      expect(resumed.status).toBe(200);
      expect(stores.map((entry) => entry.sessionId)).toEqual([session.sessionId, session.sessionId]);
      expect(stores[1]!.replays).toBe(1);
      expect(transports).toEqual([session.sessionId, session.sessionId]);
      await session.close();
    } finally {
      await hooked.close();
    }
  });

  it('can listen on all interfaces while its control URL stays on loopback', async () => {
    const open = await startLabServer({ host: '0.0.0.0' });
    try {
      expect(new URL(open.controlUrl).hostname).toBe('127.0.0.1');
      const state = await new LabControlClient(open.controlUrl).state();
      expect(state.generation).toBe(1);
    } finally {
      await open.close();
    }
  });
});

describe('fault proxy', () => {
  it('cuts after N bytes of a matching response and passes everything else through', async () => {
    const proxy = await startFaultProxy({ target: lab.url });
    try {
      const session = await McpHttpSession.open(proxy.url);
      proxy.armCut({ method: 'POST', afterBytes: 10 });
      const { read } = await session.callTool('stream_progress', { count: 3, delay: 20 });
      expect(read.end).toBe('error');
      expect(read.events).toEqual([]);
      expect(proxy.cuts).toHaveLength(1);
      expect(proxy.cuts[0]!.bytesForwarded).toBe(10);
      const { read: whole } = await session.callTool('stream_progress', { count: 3, delay: 0 });
      expect(whole.end).toBe('clean');
      expect(whole.events).toHaveLength(5);
    } finally {
      await proxy.close();
    }
  });

  it('resets the connection in reset mode', async () => {
    const proxy = await startFaultProxy({ target: lab.url });
    try {
      const session = await McpHttpSession.open(proxy.url);
      proxy.armCut({ method: 'POST', afterEvents: 2, mode: 'reset' });
      const { read } = await session.callTool('stream_progress', { count: 5, delay: 30 });
      expect(read.end).toBe('error');
      expect(read.events.length).toBeLessThanOrEqual(2);
      expect(proxy.cuts[0]!.mode).toBe('reset');
    } finally {
      await proxy.close();
    }
  });
});
