import { GuardAction, GuardProof } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import type { WireEvent, WireListener } from '../src/index.js';
import { SCRIPTED_SESSION, progress, result, scriptedServerPerFile, sse } from './helpers/scripted-server.js';

// RequestRecord.finished: the one answer to "is this request finished?", owned by the observer.

const scripted = scriptedServerPerFile();
const { call, get } = scripted;

/** A listener that records, at each terminal event, whether its request was finished then. */
function finishedAtEvent(): WireListener & { seen: boolean[] } {
  const seen: boolean[] = [];
  return { seen, onEvent: (event: WireEvent) => void seen.push(...event.terminals.map((t) => t.request.finished)) };
}

describe('RequestRecord.finished', () => {
  it('is set once the event carrying the terminal reached the reader, after every listener saw it', async () => {
    const observer = new WireObserver();
    const listener = finishedAtEvent();
    observer.addListener(listener);
    const fetch = observer.wrap();
    await call(fetch, 1, [sse({ id: 'a1', data: progress(1) }), sse({ id: 'a2', data: result(1, 'one') })]);
    expect(listener.seen).toEqual([false]);
    expect(observer.getRequest(SCRIPTED_SESSION, 1)?.finished).toBe(true);
    // A replay of it: the listeners see the request finished before that event.
    await get(fetch, [sse({ id: 'a2', data: result(1, 'one') })], 'a1');
    expect(listener.seen).toEqual([false, true]);
  });

  it('is not set by a terminal a deciding listener removed', async () => {
    const observer = new WireObserver();
    observer.addListener({ onEvent: (event) => event.terminals.length === 0 }, { filters: true });
    const fetch = observer.wrap();
    const text = await call(fetch, 2, [sse({ id: 'b1', data: result(2, 'two') })]);
    expect(text).not.toContain('"two"');
    const record = observer.getRequest(SCRIPTED_SESSION, 2)!;
    expect([record.terminalCount, record.finished]).toEqual([1, false]);
  });

  it('with confirmDelivery, is set only on the client’s proof: a cursor at or past the terminal’s event', async () => {
    const observer = new WireObserver({ confirmDelivery: true });
    const fetch = observer.wrap();
    await call(fetch, 3, [sse({ id: 'c1', data: progress(1) }), sse({ id: 'c2', data: result(3, 'three') })]);
    // Written whole to the reader, a clean end: no proof the client read it.
    expect(observer.getRequest(SCRIPTED_SESSION, 3)?.finished).toBe(false);
    // A cursor before the terminal proves nothing of it.
    await get(fetch, [sse({ id: 'c2', data: result(3, 'three') })], 'c1');
    expect(observer.getRequest(SCRIPTED_SESSION, 3)?.finished).toBe(false);
    // A cursor naming the terminal's own event: the client holds it.
    await get(fetch, [], 'c2');
    const record = observer.getRequest(SCRIPTED_SESSION, 3)!;
    expect([record.finished, record.proof]).toEqual([true, GuardProof.CURSOR]);
  });

  it('with confirmDelivery, a cursor on a later event of the same stream proves the terminals before it, not after', async () => {
    const observer = new WireObserver({ confirmDelivery: true });
    const fetch = observer.wrap();
    // One POST carrying two requests: 7's result, then an event, then 8's result.
    await scripted.batch(
      fetch,
      [7, 8],
      [
        sse({ id: 'g1', data: result(7, 'seven') }),
        sse({ id: 'g2', data: progress(8) }),
        sse({ id: 'g3', data: result(8, 'eight') }),
      ],
    );
    await get(fetch, [], 'g2');
    expect(observer.getRequest(SCRIPTED_SESSION, 7)?.proof).toBe(GuardProof.CURSOR);
    expect(observer.getRequest(SCRIPTED_SESSION, 8)?.finished).toBe(false);
  });

  it('with confirmDelivery, proveReceived (the next request on the connection) sets it, and it stays set once released', async () => {
    const observer = new WireObserver({ confirmDelivery: true, streamsPerSession: 1 });
    const streams: Parameters<WireObserver['proveReceived']>[0][] = [];
    observer.addListener({ onStreamEnd: (_request, stream) => void streams.push(stream) });
    const fetch = observer.wrap();
    await call(fetch, 3, [sse({ id: 'c1', data: result(3, 'three') })]);
    expect(observer.getRequest(SCRIPTED_SESSION, 3)?.finished).toBe(false);
    observer.proveReceived(streams[0]!);
    const record = observer.getRequest(SCRIPTED_SESSION, 3)!;
    expect([record.finished, record.proof]).toEqual([true, GuardProof.NEXT_REQUEST]);
    // The call's stream left the session's recent streams: what is kept of the request is its compact record.
    await call(fetch, 4, [sse({ id: 'd1', data: result(4, 'four') })]);
    const compact = observer.getRequest(SCRIPTED_SESSION, 3)!;
    expect([compact.released, compact.finished, compact.proof]).toEqual([true, true, GuardProof.NEXT_REQUEST]);
  });

  it('is a new request’s own when its id is used again', async () => {
    const observer = new WireObserver({ streamsPerSession: 1 });
    const fetch = observer.wrap();
    await call(fetch, 5, [sse({ id: 'e1', data: result(5, 'five') })]);
    await call(fetch, 6, [sse({ id: 'f1', data: result(6, 'six') })]);
    expect(observer.getRequest(SCRIPTED_SESSION, 5)?.finished).toBe(true);
    await call(fetch, 5, [sse({ id: 'e2', data: progress(1) })]);
    expect(observer.getRequest(SCRIPTED_SESSION, 5)?.finished).toBe(false);
  });
});

describe('deciding listeners', () => {
  it('are called before the others whatever the order they were added in, and their action travels on the event', async () => {
    const observer = new WireObserver();
    const order: string[] = [];
    const actions: unknown[] = [];
    observer.addListener({ onEvent: (event) => void (order.push('observer'), actions.push(event.guardAction)) });
    observer.addListener(
      {
        onEvent: (event) => {
          order.push('decider');
          if (event.terminals.some((t) => t.duplicate)) {
            event.guardAction = GuardAction.DUPLICATE_TERMINAL_DROPPED;
            return false;
          }
          return true;
        },
      },
      { filters: true },
    );
    const fetch = observer.wrap();
    await call(fetch, 7, [sse({ id: 'g1', data: result(7, 'seven') })]);
    await get(fetch, [sse({ id: 'g2', data: result(7, 'seven') })], 'g1');
    expect(order).toEqual(['decider', 'observer', 'decider', 'observer']);
    expect(actions).toEqual([undefined, GuardAction.DUPLICATE_TERMINAL_DROPPED]);
  });
});
