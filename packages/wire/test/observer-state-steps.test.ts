import { GuardProof } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import {
  SNAPSHOT_STEP_BYTES,
  WireObserver,
  restoreObserver,
  snapshotObserverSteps,
  snapshotObserverText,
} from '../src/index.js';
import type { FetchLike, ObserverState } from '../src/index.js';
import { progress, result, scriptedServerPerFile, sse } from './helpers/scripted-server.js';

// The periodic snapshot of the wire observer's state (the gateway's --state-file every
// --snapshot-interval) is taken in steps, the event loop running between two: no step writes more than
// SNAPSHOT_STEP_BYTES and one session past it, however many sessions the observer holds. What changes
// between two steps fails safe: the file never says a record was proven that was not when it was written.

const scripted = scriptedServerPerFile();

const STREAMS = 32;
const EVENTS = 8;
/** Event ids of 60 bytes: the ring's arena (64 bytes a delivery) kept near full. */
const eventId = (session: string, stream: number, event: number) => `${session}/${stream}/${event}/`.padEnd(60, 'x');

function proxyObserver(maxSessions: number): WireObserver {
  return new WireObserver({ confirmDelivery: true, releaseOnTransportClose: false, maxSessions });
}

/** POSTs tools/call `id` in `session`, answered by `chunks` under that session's id. */
async function call(fetch: FetchLike, session: string, id: number, chunks: string[]): Promise<string> {
  scripted.server.script.push({ chunks, headers: { 'mcp-session-id': session } });
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow' } });
  const headers = { 'mcp-session-id': session, 'content-type': 'application/json' };
  return (await fetch(scripted.server.url, { method: 'POST', headers, body })).text();
}

/** GETs `session`'s stream from `lastEventId` (a resume), answered by `chunks`. */
async function resume(fetch: FetchLike, session: string, lastEventId: string, chunks: string[] = []) {
  scripted.server.script.push({ chunks, headers: { 'mcp-session-id': session } });
  const headers = { 'mcp-session-id': session, 'last-event-id': lastEventId };
  return (await fetch(scripted.server.url, { headers })).text();
}

/**
 * A full session: STREAMS tools/calls, each answered by EVENTS events (progress, then its result), so
 * its streams and its ring (STREAMS × EVENTS = 256 deliveries) are at their caps, every result
 * delivered and none proven yet (each awaits the client's proof).
 */
async function fullSession(fetch: FetchLike, session: string): Promise<void> {
  for (let s = 1; s <= STREAMS; s++) {
    const events = [];
    for (let e = 1; e < EVENTS; e++) events.push(sse({ id: eventId(session, s, e), data: progress(e) }));
    events.push(sse({ id: eventId(session, s, EVENTS), data: result(s, `result ${s}`) }));
    await call(fetch, session, s, events);
  }
}

/** A session's row in the file, by its id. */
const rowOf = (state: ObserverState, session: string) => state.sessions.find((s) => s.id === session)!;

describe('the observer snapshot in steps', () => {
  it(
    'at a full observer, no step writes more than SNAPSHOT_STEP_BYTES and one session past it; the steps together are the whole section',
    { timeout: 120_000 },
    async () => {
      const sessions = 12;
      const observer = proxyObserver(sessions);
      const fetch = observer.wrap();
      for (let k = 0; k < sessions; k++) await fullSession(fetch, `session-${k}`);
      expect(observer.stats()).toMatchObject({ sessions });
      const session = observer.getSession('session-0')!;
      expect(session.streams).toHaveLength(STREAMS);
      expect(session.cursors.size).toBe(STREAMS * EVENTS);

      const steps = [...snapshotObserverSteps(observer)].map((text) => Buffer.byteLength(text));
      const whole = snapshotObserverText(observer);
      const state = JSON.parse(whole) as ObserverState;
      expect(state.sessions).toHaveLength(sessions);
      // The largest session's text: what a step may write past its share.
      const sessionBytes = Math.max(...state.sessions.map((s) => Buffer.byteLength(JSON.stringify(s))));
      expect(sessionBytes).toBeGreaterThan(16 * 1024);
      expect(sessionBytes).toBeLessThan(48 * 1024);
      const total = Buffer.byteLength(whole);
      expect(steps.reduce((a, b) => a + b, 0)).toBe(total);
      // Taken in one pass (as before), the section is one step of every session's text.
      expect(total).toBeGreaterThan(sessions * 16 * 1024);
      for (const bytes of steps) expect(bytes).toBeLessThanOrEqual(SNAPSHOT_STEP_BYTES + sessionBytes + 16);
      expect(steps.length).toBeGreaterThanOrEqual(Math.ceil(total / (SNAPSHOT_STEP_BYTES + sessionBytes)));

      // A smaller share: one session a step, whatever the count.
      const small = [...snapshotObserverSteps(observer, { stepBytes: 1 })];
      expect(small.length).toBeGreaterThanOrEqual(sessions);
      for (const text of small.slice(0, sessions))
        expect(Buffer.byteLength(text)).toBeLessThanOrEqual(sessionBytes + 32);
      expect(small.join('')).toBe(whole);
    },
  );

  it('a proof that comes between two steps is not in the file: the record restores unproven, and its replay is forwarded', async () => {
    const observer = proxyObserver(8);
    const fetch = observer.wrap();
    const call1 = [sse({ id: 'a1', data: progress(1) }), sse({ id: 'a2', data: result(1, 'one') })];
    await call(fetch, 'session-a', 1, call1);
    await call(fetch, 'session-b', 7, [sse({ id: 'b1', data: result(7, 'seven') })]);
    expect(observer.getRequest('session-a', 1)).toMatchObject({ terminalCount: 1, finished: false });

    // One session a step: session-a is written, then the client's cursor at its result proves it.
    const steps = snapshotObserverSteps(observer, { stepBytes: 1 });
    let text = steps.next().value as string;
    expect(text).toContain('"session-a"');
    await resume(fetch, 'session-a', 'a2');
    expect(observer.getRequest('session-a', 1)).toMatchObject({ finished: true, proof: GuardProof.CURSOR });
    // And session-a leaves before the steps end: it was written whole at its step.
    for (let step = steps.next(); !step.done; step = steps.next()) text += step.value;
    const state = JSON.parse(text) as ObserverState;
    expect(rowOf(state, 'session-a').records).toHaveLength(1);
    expect(rowOf(state, 'session-a').records[0]).toMatchObject({ fin: false, p: null });

    const next = proxyObserver(8);
    restoreObserver(next, JSON.parse(text));
    // Unproven, as when it was written: fail safe (a later proof is not made up, nor half kept).
    expect(next.getRequest('session-a', 1)).toMatchObject({ terminalCount: 1, finished: false });
    expect(next.getRequest('session-a', 1)?.proof).toBeUndefined();
    expect(next.getRequest('session-b', 7)).toMatchObject({ terminalCount: 1, finished: false });
    // Its proof after the restart proves it again.
    await resume(next.wrap(), 'session-a', 'a2');
    expect(next.getRequest('session-a', 1)).toMatchObject({ finished: true, proof: GuardProof.CURSOR });
  });

  it('a session that leaves between two steps, and one that comes: neither is in the file, the others are whole', async () => {
    const observer = proxyObserver(3);
    const fetch = observer.wrap();
    await call(fetch, 'session-a', 1, [sse({ id: 'a1', data: result(1, 'one') })]);
    await call(fetch, 'session-b', 2, [sse({ id: 'b1', data: result(2, 'two') })]);
    const steps = snapshotObserverSteps(observer, { stepBytes: 1 });
    let text = steps.next().value as string;
    expect(text).toContain('"session-a"');
    // Before session-b's step, its client ends it, and session-c begins.
    scripted.server.script.push({ status: 200, chunks: [], headers: { 'mcp-session-id': 'session-b' } });
    await fetch(scripted.server.url, { method: 'DELETE', headers: { 'mcp-session-id': 'session-b' } });
    expect(observer.getSession('session-b')).toBeUndefined();
    await call(fetch, 'session-c', 3, [sse({ id: 'c1', data: result(3, 'three') })]);
    for (let step = steps.next(); !step.done; step = steps.next()) text += step.value;
    const state = JSON.parse(text) as ObserverState;
    expect(state.sessions.map((s) => s.id)).toEqual(['session-a']);
    const next = proxyObserver(3);
    expect(restoreObserver(next, state)).toMatchObject({ sessions: 1 });
    expect(next.getRequest('session-a', 1)).toMatchObject({ terminalCount: 1 });
    expect(next.getRequest('session-b', 2)).toBeUndefined();
    expect(next.getRequest('session-c', 3)).toBeUndefined();
  });
});
