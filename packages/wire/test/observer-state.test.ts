import { GuardProof } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { WireObserver, restoreObserver, snapshotObserverText } from '../src/index.js';
import type { ObserverState, WireObserverOptions, WireRequest } from '../src/index.js';
import { SCRIPTED_SESSION, progress, result, scriptedServerPerFile, sse } from './helpers/scripted-server.js';

// The wire observer's state across a restart (the gateway's --state-file): what a snapshot keeps is
// what the next process decides with, within the same caps, and a section it cannot read leaves it empty.

const scripted = scriptedServerPerFile();
const { call, get } = scripted;

/** An observer as the gateway runs it (the client's proof finishes a request), and the requests it described. */
function proxyObserver(options: WireObserverOptions = {}): { observer: WireObserver; requests: WireRequest[] } {
  const observer = new WireObserver({ confirmDelivery: true, releaseOnTransportClose: false, ...options });
  const requests: WireRequest[] = [];
  observer.addListener({ onRequest: (request) => void requests.push(request) });
  return { observer, requests };
}

/** Through a file: what the next process reads is JSON. */
const throughFile = (state: ObserverState): unknown => JSON.parse(JSON.stringify(state));
/** The observer's section now, as the file holds it. */
const snapshot = (observer: WireObserver): ObserverState => JSON.parse(snapshotObserverText(observer)) as ObserverState;

/**
 * Request 1's result proven received (a cursor at it), request 2's delivered and not proven, request 3
 * without its result (its stream ended after its progress), request 4 on a stream that repeats ids.
 */
async function traffic(observer: WireObserver): Promise<void> {
  const fetch = observer.wrap();
  await call(fetch, 1, [sse({ id: 'a1', data: progress(1) }), sse({ id: 'a2', data: result(1, 'one') })]);
  await get(fetch, [], 'a2');
  await call(fetch, 2, [sse({ id: 'b1', data: progress(1) }), sse({ id: 'b2', data: result(2, 'two') })]);
  await call(fetch, 3, [sse({ id: 'c1', data: progress(1) })]);
  await call(fetch, 4, [sse({ id: 'r4', data: progress(1) }), sse({ id: 'r4', data: result(4, 'four') })]);
}

describe('snapshotObserver / restoreObserver', () => {
  it('round trip: the next observer refuses, proves and ties as the first one would have', async () => {
    const first = proxyObserver();
    await traffic(first.observer);
    expect(first.observer.getRequest(SCRIPTED_SESSION, 1)?.proof).toBe(GuardProof.CURSOR);
    const state = snapshot(first.observer);

    const next = proxyObserver();
    const restored = restoreObserver(next.observer, throughFile(state));
    expect(restored.sessions).toBe(1);
    // Taken again, the snapshot is the same: nothing lost, nothing made up.
    expect(throughFile(snapshot(next.observer))).toEqual(throughFile(state));
    const record = (id: number) => next.observer.getRequest(SCRIPTED_SESSION, id);
    expect(record(1)).toMatchObject({ terminalCount: 1, finished: true, proof: GuardProof.CURSOR });
    expect(record(2)).toMatchObject({ terminalCount: 1, finished: false });
    expect(record(3)).toMatchObject({ terminalCount: 0, finished: false, method: 'tools/call' });

    const fetch = next.observer.wrap();
    // A stale cursor of request 1 is placed on its stream: every request there finished (the guard refuses it).
    await get(fetch, [], 'a1');
    const stale = next.requests.at(-1)!.resume!;
    expect(stale.requests.map((r) => r.id)).toEqual(['1']);
    expect(stale.requests.every((r) => r.finished)).toBe(true);
    // Request 2's result, delivered before the snapshot, is proven by a cursor after it.
    await get(fetch, [], 'b2');
    expect(record(2)).toMatchObject({ finished: true, proof: GuardProof.CURSOR });
    // Request 3's resume is placed on its stream, and the result it brings is request 3's.
    await get(fetch, [sse({ id: 'c2', data: result(3, 'three') })], 'c1');
    expect(next.requests.at(-1)!.resume!.requests.map((r) => r.id)).toEqual(['3']);
    expect(record(3)?.terminalCount).toBe(1);
    // A replay of request 2's result now is a duplicate, as it would have been.
    const duplicates: boolean[] = [];
    next.observer.addListener({ onEvent: (e) => void duplicates.push(...e.terminals.map((t) => t.duplicate)) });
    await get(fetch, [sse({ id: 'b2', data: result(2, 'two') })], 'b1');
    expect(duplicates).toEqual([true]);
  });

  it('fails safe where the restart leaves a doubt: a stream that repeats ids places no cursor as proof', async () => {
    const first = proxyObserver();
    await traffic(first.observer);
    const next = proxyObserver();
    restoreObserver(next.observer, throughFile(snapshot(first.observer)));
    // `r4` named both the progress and the result: the reader may have read only the first.
    await get(next.observer.wrap(), [], 'r4');
    expect(next.observer.getRequest(SCRIPTED_SESSION, 4)).toMatchObject({ terminalCount: 1, finished: false });
  });

  it('bounded: the next observer keeps its own caps, the oldest going first', async () => {
    const first = proxyObserver();
    await traffic(first.observer);
    // A second request without its result: requests 3 and 5 are in flight.
    await call(first.observer.wrap(), 5, [sse({ id: 'e1', data: progress(1) })]);
    const state = snapshot(first.observer);
    expect(state.live).toHaveLength(2);
    const next = proxyObserver({ maxRequests: 1, streamsPerSession: 2, cursorsPerSession: 3 });
    restoreObserver(next.observer, throughFile(state));
    const session = next.observer.getSession(SCRIPTED_SESSION)!;
    expect(session.streams).toHaveLength(2);
    expect(session.cursors.size).toBe(3);
    expect(next.observer.stats().requests).toBe(1);
    // The latest ones stay: request 5, its stream and its cursor; request 3 went with the cap.
    expect(session.streams.map((s) => s.requests.map((r) => r.id))).toEqual([['4'], ['5']]);
    expect(session.cursors.get('e1')).toBe(session.streams.at(-1));
    expect(session.cursors.get('a1')).toBeUndefined();
    expect(next.observer.getRequest(SCRIPTED_SESSION, 5)?.terminalCount).toBe(0);
    expect(next.observer.getRequest(SCRIPTED_SESSION, 3)).toBeUndefined();
  });

  it('a section of another version, a corrupt one, or an observer that saw exchanges: an error, and nothing put back', async () => {
    const first = proxyObserver();
    await traffic(first.observer);
    const state = throughFile(snapshot(first.observer)) as ObserverState;
    const [session] = state.sessions;
    const broken: [unknown, RegExp][] = [
      [{ ...state, v: 1 }, /^version 1, this observer reads 2$/],
      [null, /section is not an object/],
      [{ v: 2 }, /session list is not an array/],
      [{ ...state, sessions: [{ ...session, streams: session!.streams.slice(1) }] }, /out of range/],
      [
        {
          ...state,
          sessions: [
            { ...session, records: [{ ...session!.records[0], p: 'trust_me' }, ...session!.records.slice(1)] },
          ],
        },
        /record proof/,
      ],
      [
        {
          ...state,
          sessions: [{ ...session, records: [{ ...session!.records[0], x: 'a span' }, ...session!.records.slice(1)] }],
        },
        /extra/,
      ],
      [{ ...state, sessions: [{ ...session, id: 'x'.repeat(2000) }] }, /session id/],
    ];
    for (const [section, why] of broken) {
      const next = proxyObserver();
      expect(() => restoreObserver(next.observer, section)).toThrow(why);
      expect(next.observer.stats()).toMatchObject({ sessions: 0, requests: 0 });
      expect(next.observer.getRequest(SCRIPTED_SESSION, 1)).toBeUndefined();
    }
    expect(() => restoreObserver(first.observer, state)).toThrow(/seen exchanges/);
  });
});
