import { GuardAction, GuardProof } from '@resumewatch/semconv';
import { WireObserver } from '@resumewatch/wire';
import type { StreamRecord, WireEvent, WireListener, WireRequest } from '@resumewatch/wire';
import { describe, expect, it, vi } from 'vitest';
import { InvalidResumptionError, createGuardListener } from '../src/index.js';
import type { GuardListener, GuardOptions } from '../src/index.js';
import { recordGuard } from './helpers/record-guard.js';
import type { GuardRecord } from './helpers/record-guard.js';
import { WAIT } from './helpers/wait.js';
import {
  SCRIPTED_SESSION,
  progress,
  result,
  scriptedServerPerFile,
  sse,
} from '../../wire/test/helpers/scripted-server.js';

// The guard listener (listener.ts) on a real observer over loopback: it reads whether a request is
// finished from the observer, and writes what it did on the request or event it decided.

const scripted = scriptedServerPerFile();
const { call, get } = scripted;

/** A listener added before the guard: what it sees of the guard's decisions when its own hook runs. */
function bystander(): WireListener & { events: (WireEvent['guardAction'] | boolean)[]; refused: unknown[] } {
  const events: (WireEvent['guardAction'] | boolean)[] = [];
  const refused: unknown[] = [];
  return {
    events,
    refused,
    onEvent: (event) => void (event.terminals.length > 0 && events.push(event.guardAction)),
    onRefused: (request: WireRequest) => void refused.push(request.guardAction),
  };
}

function setup(
  extra: GuardOptions = {},
  wire: ConstructorParameters<typeof WireObserver>[0] = {},
): { observer: WireObserver; guard: GuardListener; seen: GuardRecord; before: ReturnType<typeof bystander> } {
  const seen = recordGuard(extra);
  const observer = new WireObserver(wire);
  const before = bystander();
  const guard = createGuardListener(seen.options);
  observer.addListener(before).addListener(guard, { filters: true });
  return { observer, guard, seen, before };
}

describe('the guard listener', () => {
  it('refuses a resume of a finished request, and the refusal is on the request before any other listener hears of it', async () => {
    const { observer, seen, before } = setup();
    const fetch = observer.wrap();
    await call(fetch, 1, [sse({ id: 'a1', data: progress(1) }), sse({ id: 'a2', data: result(1, 'one') })]);
    const error = await get(fetch, [], 'a1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResumptionError);
    expect(seen.refused.map((r) => [r.requestIds, r.request.guardAction])).toEqual([
      [['1'], GuardAction.RESUME_REFUSED],
    ]);
    expect(before.refused).toEqual([GuardAction.RESUME_REFUSED]);
  });

  it('lets a resume of an unfinished request through', async () => {
    const { observer, seen } = setup();
    const fetch = observer.wrap();
    await call(fetch, 2, [sse({ id: 'b1', data: progress(1) })]);
    expect(await get(fetch, [sse({ id: 'b2', data: result(2, 'two') })], 'b1')).toContain('"two"');
    expect(seen.refused).toEqual([]);
    expect(observer.getRequest(SCRIPTED_SESSION, 2)?.finished).toBe(true);
  });

  it('removes a copy of a delivered terminal, its action on the event', async () => {
    const { observer, seen, before } = setup();
    const fetch = observer.wrap();
    await call(fetch, 3, [sse({ id: 'c1', data: result(3, 'three') })]);
    // The listening stream replays it (the guard does not refuse a GET without a cursor).
    const replay = await get(fetch, [sse({ id: 'c2', data: result(3, 'three') })]);
    expect(replay).not.toContain('"three"');
    expect(seen.dropped.map((d) => [d.requestId, d.foreign, d.event.guardAction])).toEqual([
      ['3', true, GuardAction.DUPLICATE_TERMINAL_DROPPED],
    ]);
    expect(before.events).toEqual([undefined, GuardAction.DUPLICATE_TERMINAL_DROPPED]);
  });

  it('reports a terminal with other content as a conflict, its action on the event', async () => {
    const { observer, seen, before } = setup();
    const fetch = observer.wrap();
    await call(fetch, 4, [sse({ id: 'd1', data: result(4, 'four') })]);
    expect(await get(fetch, [sse({ id: 'd2', data: result(4, 'not four') })])).not.toContain('not four');
    expect(seen.conflicts.map((c) => [c.requestId, c.removed])).toEqual([['4', true]]);
    expect(before.events).toEqual([undefined, GuardAction.CONFLICTING_TERMINAL_REPORTED]);
  });

  it('with the observer confirming delivery, passes the replay of a terminal no client proved it read, then removes the next', async () => {
    const streams: StreamRecord[] = [];
    const { observer, seen } = setup({}, { confirmDelivery: true });
    observer.addListener({ onStreamEnd: (_request, stream) => void streams.push(stream) });
    const fetch = observer.wrap();
    await call(fetch, 5, [sse({ id: 'e1', data: progress(1) }), sse({ id: 'e2', data: result(5, 'five') })]);
    // Written whole, but the client proved nothing: its resume from before the result, and the replay, pass.
    expect(await get(fetch, [sse({ id: 'e2', data: result(5, 'five') })], 'e1')).toContain('"five"');
    expect(seen.refused).toEqual([]);
    expect(seen.dropped).toEqual([]);
    // Its next request on the same connection proves it read that replay whole.
    observer.proveReceived(streams[1]!);
    expect(await get(fetch, [sse({ id: 'e3', data: result(5, 'five') })])).not.toContain('"five"');
    expect(seen.dropped.map((d) => [d.requestId, d.proof])).toEqual([['5', GuardProof.NEXT_REQUEST]]);
  });

  it('with the observer confirming delivery, refuses a resume whose cursor names the result, naming that proof', async () => {
    const { observer, seen } = setup({}, { confirmDelivery: true });
    const fetch = observer.wrap();
    await call(fetch, 9, [sse({ id: 'i1', data: progress(1) }), sse({ id: 'i2', data: result(9, 'nine') })]);
    const error = await get(fetch, [], 'i2').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResumptionError);
    expect(seen.refused.map((r) => [r.requestIds, r.proof, r.request.guardProof])).toEqual([
      [['9'], GuardProof.CURSOR, GuardProof.CURSOR],
    ]);
  });

  it('with the observer confirming delivery, forwards a differing replay of an unproven result and reports it, removing nothing', async () => {
    const { observer, seen } = setup({}, { confirmDelivery: true });
    const fetch = observer.wrap();
    await call(fetch, 10, [sse({ id: 'j1', data: progress(1) }), sse({ id: 'j2', data: result(10, 'ten') })]);
    // The client never proved it read the first result: a differing copy may be the only one it gets.
    expect(await get(fetch, [sse({ id: 'j2', data: result(10, 'TEN') })], 'j1')).toContain('"TEN"');
    expect(seen.conflicts.map((c) => [c.requestId, c.removed, c.proof])).toEqual([['10', false, GuardProof.NONE]]);
  });

  it('removes only the duplicate message of a batch event and forwards the rest of the event', async () => {
    const { observer, seen } = setup();
    const fetch = observer.wrap();
    await call(fetch, 11, [sse({ id: 'k1', data: result(11, 'eleven') })]);
    // A replay of 11's delivered result and 12's first result in one event.
    const text = await scripted.batch(
      fetch,
      [12],
      [sse({ id: 'k2', data: [result(11, 'eleven'), result(12, 'twelve')] })],
    );
    expect(text).not.toContain('"eleven"');
    expect(text).toContain('"twelve"');
    expect(text).toMatch(/^id: k2\n/);
    expect(seen.dropped.map((d) => d.requestId)).toEqual(['11']);
    expect(observer.getRequest(SCRIPTED_SESSION, 12)?.finished).toBe(true);
  });

  it('removes a batch event whole when every message of it is a duplicate', async () => {
    const { observer } = setup();
    const fetch = observer.wrap();
    await scripted.batch(fetch, [13, 14], [sse({ id: 'l1', data: [result(13, 'a'), result(14, 'b')] })]);
    const text = await get(fetch, [sse({ id: 'l2', data: [result(13, 'a'), result(14, 'b')] }), sse({ id: 'l3' })]);
    expect(text).toBe(sse({ id: 'l3' }));
  });

  it('takes ids 1 and "1" for two requests: the second one’s result is neither a duplicate nor a conflict', async () => {
    const { observer, seen } = setup();
    const fetch = observer.wrap();
    await scripted.batch(fetch, [1], [sse({ id: 'm1', data: result(1, 'number') })]);
    const text = await scripted.batch(fetch, ['1'], [sse({ id: 'm2', data: result('1', 'string') })]);
    expect(text).toContain('"string"');
    expect(seen.dropped).toEqual([]);
    expect(seen.conflicts).toEqual([]);
    expect(observer.getRequest(SCRIPTED_SESSION, '1')?.finished).toBe(true);
  });

  it('puts a failed resumption on the request it reports', async () => {
    const { observer, seen } = setup();
    const fetch = observer.wrap();
    await call(fetch, 6, [sse({ id: 'f1', data: progress(1) })]);
    scripted.server.script.push({ status: 404, chunks: [] });
    const headers = { 'mcp-session-id': SCRIPTED_SESSION, 'last-event-id': 'f1' };
    await (await fetch(scripted.server.url, { headers })).text();
    await vi.waitFor(() => expect(seen.failed).toHaveLength(1), WAIT);
    expect(seen.failed[0]!.request.guardAction).toBe(GuardAction.RESUMPTION_FAILED_REPORTED);
  });
});
