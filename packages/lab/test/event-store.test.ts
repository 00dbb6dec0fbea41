import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { BoundedEventStore } from '../src/event-store.js';
import type { ReplayRecord } from '../src/event-store.js';
import { parseEventId } from '../src/event-id.js';

const progress = (n: number): JSONRPCMessage => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: 't', progress: n },
});
const result = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: { content: [] } });

async function replay(
  store: BoundedEventStore,
  cursor: string,
): Promise<{ streamId: string; sent: Array<[string, JSONRPCMessage]> }> {
  const sent: Array<[string, JSONRPCMessage]> = [];
  const streamId = await store.replayEventsAfter(cursor, {
    send: async (id, message) => void sent.push([id, message]),
  });
  return { streamId, sent };
}

describe('BoundedEventStore', () => {
  it('replays only the events of the cursor stream, after the cursor, in order', async () => {
    const store = new BoundedEventStore();
    const a1 = await store.storeEvent('A', progress(1));
    await store.storeEvent('B', progress(100));
    const a2 = await store.storeEvent('A', progress(2));
    await store.storeEvent('B', progress(101));
    const a3 = await store.storeEvent('A', result(7));
    const { streamId, sent } = await replay(store, a1);
    expect(streamId).toBe('A');
    expect(sent.map(([id]) => id)).toEqual([a2, a3]);
    expect(sent[1]![1]).toEqual(result(7));
  });

  it('maps event ids to stream ids, including the SDK standalone stream id and ids it no longer holds', async () => {
    const store = new BoundedEventStore();
    const standalone = await store.storeEvent('_GET_stream', progress(1));
    const uuid = await store.storeEvent('0b7f2a9e-1c1d-4d6e-9c1a-3f8f6f0e2b11', progress(1));
    expect(await store.getStreamIdForEventId(standalone)).toBe('_GET_stream');
    expect(await store.getStreamIdForEventId(uuid)).toBe('0b7f2a9e-1c1d-4d6e-9c1a-3f8f6f0e2b11');
    expect(parseEventId(standalone)?.streamId).toBe('_GET_stream');
    // A cursor from another store instance (a restarted server) still names its stream.
    const other = new BoundedEventStore();
    expect(await other.getStreamIdForEventId(standalone)).toBe('_GET_stream');
    expect(other.cursorState(standalone)).toBe('unknown');
    expect(await other.getStreamIdForEventId('not-an-id')).toBeUndefined();
    expect(other.cursorState('not-an-id')).toBe('invalid');
  });

  it('replays the standalone stream of one session after its own cursor', async () => {
    const store = new BoundedEventStore();
    const first = await store.storeEvent('_GET_stream', progress(1));
    const second = await store.storeEvent('_GET_stream', progress(2));
    const { streamId, sent } = await replay(store, first);
    expect(streamId).toBe('_GET_stream');
    expect(sent.map(([id]) => id)).toEqual([second]);
  });

  it('evicts the oldest events beyond its capacity and then reports their cursors evicted', async () => {
    const store = new BoundedEventStore({ capacity: 3 });
    const ids: string[] = [];
    for (let n = 1; n <= 5; n++) ids.push(await store.storeEvent('A', progress(n)));
    expect(store.stats().events).toBe(3);
    expect(store.stats().evicted.capacity).toBe(2);
    expect(store.cursorState(ids[0]!)).toBe('evicted');
    expect(store.cursorState(ids[2]!)).toBe('present');
    const { sent } = await replay(store, ids[2]!);
    expect(sent.map(([id]) => id)).toEqual([ids[3], ids[4]]);
  });

  it('evicts events older than its TTL', async () => {
    let now = 1_000;
    const store = new BoundedEventStore({ ttlMs: 100, now: () => now });
    const old = await store.storeEvent('A', progress(1));
    now += 50;
    const young = await store.storeEvent('B', progress(1));
    now += 60;
    expect(store.cursorState(old)).toBe('evicted');
    expect(store.cursorState(young)).toBe('present');
    expect(store.stats().evicted.ttl).toBe(1);
    now += 100;
    expect(store.stats().events).toBe(0);
  });

  it('reports each replay, and whether the stream had finished', async () => {
    const records: ReplayRecord[] = [];
    const store = new BoundedEventStore({ onReplay: (record) => records.push(record), finishedStreamReplayLimit: 0 });
    const p1 = await store.storeEvent('A', progress(1));
    await replay(store, p1);
    await store.storeEvent('A', result(1));
    await replay(store, p1);
    await replay(store, `${store.epoch}.999.Z`);
    expect(records.map((r) => [r.streamId, r.sent, r.cursorFound, r.streamFinished])).toEqual([
      ['A', 0, true, false],
      ['A', 1, true, true],
      ['Z', 0, false, false],
    ]);
    expect(store.isStreamFinished('A')).toBe(true);
  });

  it('evicts a finished stream after it has been replayed the configured number of times', async () => {
    const store = new BoundedEventStore({ finishedStreamReplayLimit: 2 });
    const p1 = await store.storeEvent('A', progress(1));
    await store.storeEvent('A', result(1));
    expect((await replay(store, p1)).sent).toHaveLength(1);
    expect(store.cursorState(p1)).toBe('present');
    expect((await replay(store, p1)).sent).toHaveLength(1);
    expect(store.cursorState(p1)).toBe('evicted');
    expect(store.stats().evicted['replay-limit']).toBe(2);
  });

  it('never evicts an unfinished stream for being replayed', async () => {
    const store = new BoundedEventStore({ finishedStreamReplayLimit: 1 });
    const p1 = await store.storeEvent('A', progress(1));
    await store.storeEvent('A', progress(2));
    for (let i = 0; i < 5; i++) await replay(store, p1);
    expect(store.cursorState(p1)).toBe('present');
  });

  it('evicts the stream of a cursor on request', async () => {
    const store = new BoundedEventStore();
    const p1 = await store.storeEvent('A', progress(1));
    await store.storeEvent('A', progress(2));
    const b1 = await store.storeEvent('B', progress(1));
    expect(store.evictCursor(p1)).toBe(2);
    expect(store.cursorState(p1)).toBe('evicted');
    expect(store.cursorState(b1)).toBe('present');
    // Events stored on an evicted stream afterwards do not resurrect the lost cursor.
    await store.storeEvent('A', progress(3));
    expect(store.cursorState(p1)).toBe('evicted');
  });

  it('issues ids that never collide across store instances', async () => {
    const a = new BoundedEventStore();
    const b = new BoundedEventStore();
    expect(await a.storeEvent('_GET_stream', progress(1))).not.toBe(await b.storeEvent('_GET_stream', progress(1)));
  });
});
