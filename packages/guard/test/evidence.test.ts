import { describe, expect, it, vi } from 'vitest';
import { ResumeDecision, guardedFetch } from '../src/index.js';
import type { GuardOptions, GuardedFetch } from '../src/index.js';
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

// Every byte scripted over loopback HTTP: priming events, retry fields, replays across streams and sessions.

const scripted = scriptedServerPerFile();
const { call, get } = scripted;
const SESSION = SCRIPTED_SESSION;

function setup(extra: GuardOptions = {}): { fetch: GuardedFetch; seen: GuardRecord } {
  const seen = recordGuard(extra);
  return { fetch: guardedFetch(seen.options), seen };
}

describe('SEP-1699 polling', () => {
  it('takes a clean empty end after a priming event as a poll, ten times over, and the result once', async () => {
    const { fetch, seen } = setup();
    await call(fetch, 1, [sse({ id: 'p0', retry: 10, data: '' })]);
    for (let i = 0; i < 10; i++) await get(fetch, [], 'p0');
    const text = await get(fetch, [sse({ id: 'p1', data: result(1, 'done') })], 'p0');
    expect(text).toContain('"done"');
    expect(seen.decisions.map((d) => d.decision)).toEqual([
      ...Array(10).fill(ResumeDecision.POLL_NO_ACTION),
      ResumeDecision.CONTINUATION_VALID,
    ]);
    expect(seen.decisions.slice(0, 10).every((d) => d.outcome === 'poll' && d.evidence === 'body_end')).toBe(true);
    expect(seen.failed).toEqual([]);
    expect(fetch.listener.stats()).toEqual({
      silentResumes: 0,
      unsettledRequests: 0,
      brokenRequests: 0,
      tasks: 0,
      taskHandles: 0,
      refusedSessions: 0,
      refusedListeningStreams: 0,
      deadSessionAnswers: 0,
      listeningRefusalAnswers: 0,
      evictions: 0,
    });
  });

  it('reports a polled request that never gets its result by its deadline (evidence deadline)', async () => {
    const { fetch, seen } = setup({ requestDeadlineMs: 400 });
    await call(fetch, 2, [sse({ id: 'q0', data: '' })]);
    await get(fetch, [], 'q0');
    expect(seen.failed).toEqual([]);
    await vi.waitFor(() => expect(seen.failed).not.toHaveLength(0), WAIT);
    expect(seen.failed.map((f) => [f.requestId, f.outcome, f.evidence, f.decision])).toEqual([
      ['2', 'empty_replay', 'deadline', ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY],
    ]);
  });

  it('reads a clean empty end without polling announced as an empty replay at once', async () => {
    const { fetch, seen } = setup();
    await call(fetch, 3, [sse({ id: 'r1', data: progress(1) })]);
    await get(fetch, [sse({ id: 'r1x', data: {} })], 'r1');
    expect(seen.failed.map((f) => [f.requestId, f.outcome, f.evidence, f.replayedMessages])).toEqual([
      ['3', 'empty_replay', 'body_end', 0],
    ]);
  });
});

describe('the listening stream and foreign terminals', () => {
  it('drops a terminal replayed into a resumed listening stream and attributes the resume to no request', async () => {
    const { fetch, seen } = setup();
    await call(fetch, 4, [sse({ id: 'c1', data: result(4, 'four') })]);
    await get(fetch, [sse({ id: 'l1', data: progress(1) })]);
    const text = await get(
      fetch,
      [sse({ id: 'c1', data: result(4, 'four') }), sse({ id: 'l2', data: progress(2) })],
      'l1',
    );
    expect(text).not.toContain('"four"');
    expect(seen.dropped.map((d) => [d.requestId, d.foreign, d.action])).toEqual([
      ['4', true, 'duplicate_terminal_dropped'],
    ]);
    expect(seen.decisions.map((d) => [d.requestId, d.outcome, d.decision])).toEqual([
      [undefined, 'continuation', ResumeDecision.CONTINUATION_VALID],
    ]);
    // The foreign terminal did not make the listening stream a stream of that (finished) request:
    // resuming it again is not refused as a resume after the terminal.
    await get(fetch, [sse({ id: 'l3', data: progress(3) })], 'l2');
    expect(scripted.server.seen.at(-1)?.lastEventId).toBe('l2');
    expect(seen.refused).toEqual([]);
    expect(seen.failed).toEqual([]);
  });

  it('never reports a failure for the listening stream, even on an empty replay', async () => {
    const { fetch, seen } = setup();
    await get(fetch, [sse({ id: 'm1', data: progress(1) })]);
    await get(fetch, [], 'm1');
    expect(seen.decisions.map((d) => [d.requestId, d.outcome])).toEqual([[undefined, 'empty_replay']]);
    expect(seen.failed).toEqual([]);
  });

  it('delivers a foreign first terminal (the only result the client has)', async () => {
    const { fetch, seen } = setup();
    await call(fetch, 5, [sse({ id: 'd1', data: progress(1) })]);
    const text = await call(fetch, 6, [
      sse({ id: 'd2', data: result(5, 'five') }),
      sse({ id: 'd3', data: result(6, 'six') }),
    ]);
    expect(text).toContain('"five"');
    expect(fetch.observer.getRequest(SESSION, 5)?.finished).toBe(true);
    expect(seen.dropped).toEqual([]);
  });
});

describe('conflicting terminals', () => {
  it('removes a terminal that differs from the delivered one and tells the application, with both places', async () => {
    const { fetch, seen } = setup();
    // The first result the client receives is another session's (a store keyed by request id only).
    await call(fetch, 7, [sse({ id: 'g1', data: progress(1) })]);
    const first = await get(fetch, [sse({ id: 'other-9', data: result(7, 'Echo: from session B') })], 'g1');
    expect(first).toContain('from session B');
    // The client's own result then arrives (here on a resume from a cursor this process never gave out).
    const second = await get(fetch, [sse({ id: 'g2', data: result(7, 'mine') })], 'from-another-process');
    expect(second).not.toContain('"mine"');
    const post = fetch.observer.getSession(SESSION)!.streams;
    expect(
      seen.conflicts.map((c) => [
        c.action,
        c.requestId,
        c.delivered.eventId,
        c.conflicting.eventId,
        c.removed,
        c.foreign,
      ]),
    ).toEqual([['conflicting_terminal_reported', '7', 'other-9', 'g2', true, false]]);
    expect(seen.conflicts[0]!.delivered.streamId).toBe(post[1]!.id);
    expect(seen.conflicts[0]!.conflicting.streamId).toBe(post[2]!.id);
    expect(seen.dropped).toEqual([]);
  });

  it('still drops a same-content duplicate silently (reported as dropped, not as a conflict)', async () => {
    const { fetch, seen } = setup();
    await call(fetch, 8, [sse({ id: 'h1', data: progress(1) })]);
    await get(fetch, [sse({ id: 'h2', data: result(8, 'same') })], 'h1');
    const again = await get(fetch, [sse({ id: 'h2', data: result(8, 'same') })], 'unknown-to-this-process');
    expect(again).toBe('');
    expect(seen.conflicts).toEqual([]);
    expect(seen.dropped.map((d) => d.requestId)).toEqual(['8']);
  });
});
