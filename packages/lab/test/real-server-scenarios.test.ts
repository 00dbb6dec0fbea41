import { setTimeout as sleep } from 'node:timers/promises';
import { HEADER_LAST_EVENT_ID, type FetchLike } from '@resumewatch/wire';
import { describe, expect, it } from 'vitest';
import { runScenario } from '../src/index.js';
import { POLLING_CLOSES } from '../src/scenarios/polling.js';
import { labServerPerFile } from './helpers/lab-per-file.js';

const lab = labServerPerFile();

describe('polling with a client slower to come back than the server polls', () => {
  it('every close of the server finds its client connected: twelve polls, the result on the last', async () => {
    // Each resume leaves 300 ms after it was due, longer than the task's 250 ms between closes.
    const slow: FetchLike = async (input, init) => {
      const headers = new Headers(init?.headers);
      if ((init?.method ?? 'GET') === 'GET' && headers.has(HEADER_LAST_EVENT_ID)) await sleep(300);
      return fetch(input, init);
    };
    const summary = await runScenario('polling', { serverUrl: lab.server.url, fetch: slow });
    const polls = summary.details.polls as Array<{ messages: number }>;
    expect(polls).toHaveLength(POLLING_CLOSES);
    expect(polls.at(-1)!.messages).toBe(1);
    expect(summary.terminalDeliveries).toBe(1);
  });
});

describe('the real failure modes of real servers, raw client', () => {
  it('quiet-resume: the resumed stream is silent for seconds, then carries the result once', async () => {
    const summary = await runScenario('quiet-resume', { serverUrl: lab.server.url });
    expect(summary.details.firstStreamEnd).toBe('error');
    // The priming event and the one progress update, then the cut.
    expect(summary.details.firstStreamEvents).toBe(2);
    expect(summary.resumeStatuses).toEqual([200]);
    expect(summary.details.resumedEvents).toBe(1);
    expect(summary.details.resumedMessages).toBe(1);
    expect(summary.details.resumeEnd).toBe('clean');
    expect(summary.details.quietHeardMs as number).toBeGreaterThanOrEqual(2000);
    expect(summary.details.silentMs as number).toBeGreaterThan(0);
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.distinctTerminalStreams).toBe(1);
    expect(summary.resultsPerRequest).toEqual({ '1': 1 });
    expect(lab.resumesAtServer(summary.sessionId).map((entry) => [entry.path, entry.status])).toEqual([
      ['/mcp/bounded', 200],
    ]);
  });

  it('polling: ten polls and more, all 200, most without a message; the result once, on the last poll', async () => {
    const summary = await runScenario('polling', { serverUrl: lab.server.url });
    const polls = summary.details.polls as Array<{ status: number; messages: number; end: string }>;
    expect(summary.details.primingEvent).toBe(true);
    expect(summary.details.retryMs).toBe(100);
    expect(summary.details.firstStreamEvents).toBe(1);
    expect(summary.details.firstStreamEnd).toBe('clean');
    expect(polls.length).toBeGreaterThanOrEqual(10);
    expect(summary.resumeStatuses).toEqual(polls.map(() => 200));
    expect(polls.every((poll) => poll.end === 'clean')).toBe(true);
    expect(polls.slice(0, -1).every((poll) => poll.messages === 0)).toBe(true);
    expect(polls.at(-1)!.messages).toBe(1);
    expect(summary.details.emptyPolls).toBe(polls.length - 1);
    expect(summary.details.terminalOnPoll).toBe(polls.length);
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.distinctTerminalStreams).toBe(1);
    expect(summary.resultsPerRequest).toEqual({ '1': 1 });
    expect(lab.resumesAtServer(summary.sessionId)).toHaveLength(polls.length);
  });

  it('listening-replay: the resumed listening stream receives results already delivered on their POST streams, and a data: {} event', async () => {
    const summary = await runScenario('listening-replay', { serverUrl: lab.server.url });
    expect(summary.details.listeningEventsBeforeCut).toEqual([
      { id: summary.details.cursor, kind: 'notifications/tools/list_changed' },
    ]);
    expect(summary.resumeStatuses).toEqual([200]);
    const replayed = (summary.details.replayedOnListening as Array<{ kind: string; requestId?: number }>).map(
      ({ kind, requestId }) => ({ kind, requestId }),
    );
    expect(replayed).toEqual([
      { kind: 'response', requestId: 1 },
      { kind: 'not a message: "{}"', requestId: undefined },
      { kind: 'response', requestId: 2 },
    ]);
    expect(summary.details.emptyDataEvents).toBe(1);
    // Request 1 on its POST stream and on the listening stream; request 2 likewise.
    expect(summary.terminalDeliveries).toBe(2);
    expect(summary.distinctTerminalStreams).toBe(2);
    expect(summary.resultsPerRequest).toEqual({ '1': 2, '2': 2 });
    expect(
      lab.resumesAtServer(summary.sessionId).map((entry) => [entry.path, entry.lastEventId, entry.status]),
    ).toEqual([['/mcp/replay-all-streams', summary.details.cursor, 200]]);
  });

  it('endless-loop: the never-evicting store replays the final result on every reconnect; only the client cap stops it', async () => {
    const evictedBefore = lab.server.state().eventStore.evicted['replay-limit'];
    const summary = await runScenario('endless-loop', { serverUrl: lab.server.url, maxReconnects: 8 });
    expect(summary.resumeStatuses).toEqual(Array(8).fill(200));
    expect(summary.reconnects).toBe(8);
    expect(summary.terminalDeliveries).toBe(9);
    expect(summary.distinctTerminalStreams).toBe(9);
    expect(summary.resultsPerRequest).toEqual({ '1': 9 });
    expect(summary.details.stoppedBecause).toBe('max-reconnects');
    // The same event (same id) every time, on nine responses; nothing evicted.
    expect(new Set(summary.details.terminalEventIds as string[]).size).toBe(1);
    expect(lab.server.state().eventStore.evicted['replay-limit']).toBe(evictedBefore);
    const replays = lab.server.state().recentReplays.filter((replay) => replay.sessionId === summary.sessionId);
    expect(replays.map((replay) => [replay.sent, replay.streamFinished, replay.closed])).toEqual(
      Array(8).fill([1, true, true]),
    );
  });

  it('cancellation: notifications/cancelled (202) ends the call without a result; so does closing the transport', async () => {
    const summary = await runScenario('cancellation', { serverUrl: lab.server.url });
    const notified = summary.details.notified as Record<string, unknown>;
    const closed = summary.details.transportClosed as Record<string, unknown>;
    expect(notified).toMatchObject({
      requestId: 1,
      progressBefore: 1,
      cancelStatus: 202,
      streamEnd: 'error',
      terminals: 0,
    });
    expect(closed).toMatchObject({
      requestId: 1,
      progressBefore: 1,
      cancelStatus: undefined,
      streamEnd: 'error',
      terminals: 0,
    });
    expect(summary.terminalDeliveries).toBe(0);
    expect(summary.resultsPerRequest).toEqual({});
    const methods = (sessionId: unknown) => lab.server.requestLog(sessionId as string).map((entry) => entry.method);
    // initialize, initialized, tools/call, notifications/cancelled, DELETE (logged as each response closed).
    expect(methods(notified.sessionId).sort()).toEqual(['DELETE', 'POST', 'POST', 'POST', 'POST']);
    expect(methods(closed.sessionId)).not.toContain('DELETE');
  });

  it("cross-session-store: session A's resume receives session B's result (same request id), then its own: a conflicting terminal", async () => {
    const summary = await runScenario('cross-session-store', { serverUrl: lab.server.url });
    expect(summary.resumeStatuses).toEqual([200]);
    expect(summary.details.sessionB).not.toBe(summary.sessionId);
    expect(summary.details.sessionBRequestId).toBe(1);
    expect(summary.details.sessionBResults).toEqual({ '1': 1 });
    expect(summary.details.terminalTextsOnResume).toEqual(['Echo: from session B', 'from session A']);
    expect(summary.details.emptyDataEventsOnResume).toBe(1);
    expect(summary.details.sessionAReceivedSessionBResult).toBe(true);
    expect(summary.details.conflictingTerminals).toBe(true);
    expect(summary.details.resumeEnd).toBe('clean');
    expect(summary.terminalDeliveries).toBe(2);
    expect(summary.distinctTerminalStreams).toBe(1);
    expect(summary.resultsPerRequest).toEqual({ '1': 2 });
  });
});

describe('resume-loses-result: the store names the resumed stream after its last replayed event (the everything server)', () => {
  it('raw: the resume replays the missed progress, then nothing; the result is sent after it and goes nowhere', async () => {
    const summary = await runScenario('resume-loses-result', { serverUrl: lab.server.url });
    expect(summary.details.firstStreamEnd).toBe('error');
    expect(summary.resumeStatuses).toEqual([200]);
    // Progress the client missed while it was away, then silence until it deleted its session.
    expect(summary.details.replayedMessages as number).toBeGreaterThan(0);
    expect(summary.details.replay).toEqual({
      sent: summary.details.replayedMessages,
      streamFinished: false,
      closed: false,
    });
    expect(summary.terminalDeliveries).toBe(0);
    expect(summary.resultsPerRequest).toEqual({});
    expect(summary.details.resultLost).toBe(true);
    expect(lab.resumesAtServer(summary.sessionId).map((entry) => [entry.path, entry.status])).toEqual([
      ['/mcp/misnames-resumed-stream', 200],
    ]);
  });
});

describe.each(['sdk', 'sdk-v2'] as const)('the same with the unmodified %s client', (client) => {
  it('resume-loses-result: the SDK resumes (200), reports the replayed progress, and the call fails at its timeout', async () => {
    const summary = await runScenario('resume-loses-result', { serverUrl: lab.server.url, client });
    expect(summary.resumeStatuses).toEqual([200]);
    const progress = summary.details.progress as number[];
    // More progress than the one update before the cut: the resume replayed what the client missed.
    expect(progress.length).toBeGreaterThan(1);
    expect(summary.details.callError).toMatch(/timed out|timeout/i);
    expect(summary.terminalDeliveries).toBe(0);
    expect(summary.details.resultLost).toBe(true);
  });

  it('quiet-resume: the SDK resumes once (200) and the quiet stream delivers the result once', async () => {
    const summary = await runScenario('quiet-resume', { serverUrl: lab.server.url, client });
    expect(summary.resumeStatuses).toEqual([200]);
    expect(summary.details.resultText).toBe('quiet for 2500 ms');
    expect(summary.details.terminalOnResume).toBe(true);
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.resultsPerRequest).toEqual({ '1': 1 });
  });

  it('polling: ten polls and more, all 200, the result once', async () => {
    const summary = await runScenario('polling', { serverUrl: lab.server.url, client });
    expect(summary.resumeStatuses.length).toBeGreaterThanOrEqual(10);
    expect(summary.resumeStatuses.every((status) => status === 200)).toBe(true);
    expect(summary.details.resultText).toMatch(/^polled task done after \d+ stream close\(s\)$/);
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.resultsPerRequest).toEqual({ '1': 1 });
  });

  it('listening-replay: the resumed listening stream receives both completed results and a data: {}; the SDK reports unknown ids', async () => {
    const summary = await runScenario('listening-replay', { serverUrl: lab.server.url, client });
    expect(summary.details.results).toEqual(['notified the listening stream', 'Echo: after the cut']);
    expect(summary.resumeStatuses).toEqual([200]);
    expect(summary.details.cursor).toMatch(/\._GET_stream$/);
    expect(summary.details.replayedResponseIds).toEqual([1, 2]);
    expect(summary.details.nonMessageEventsOnResume).toBe(1);
    expect(summary.resultsPerRequest).toEqual({ '1': 2, '2': 2 });
    expect(
      (summary.details.sdkErrors as string[]).filter((error) =>
        error.startsWith('Received a response for an unknown message ID'),
      ),
    ).toHaveLength(2);
  });

  it('cancellation: the SDK sends notifications/cancelled (202) and rejects the call; closing the client rejects the other', async () => {
    const summary = await runScenario('cancellation', { serverUrl: lab.server.url, client });
    expect(summary.details.notified).toMatchObject({
      requestId: 1,
      progressBefore: 1,
      cancelStatus: 202,
      terminals: 0,
    });
    expect((summary.details.notified as { outcome: string }).outcome).toMatch(/^rejected: .*the client gave up/);
    expect(summary.details.transportClosed).toMatchObject({
      requestId: 1,
      progressBefore: 1,
      cancelStatus: undefined,
      terminals: 0,
    });
    expect((summary.details.transportClosed as { outcome: string }).outcome).toMatch(/^rejected: .*Connection closed/);
    expect(summary.terminalDeliveries).toBe(0);
  });

  it("cross-session-store: session A's callTool resolves with session B's result", async () => {
    const summary = await runScenario('cross-session-store', { serverUrl: lab.server.url, client });
    expect(summary.details.resolvedWith).toBe('Echo: from session B');
    expect(summary.details.sessionBRequestId).toBe(1);
    expect(summary.details.terminalTextsOnResume).toEqual(['Echo: from session B', 'from session A']);
    expect(summary.resumeStatuses).toEqual([200]);
    expect(summary.terminalDeliveries).toBe(2);
    expect(summary.distinctTerminalStreams).toBe(1);
  });
});

describe('client choice', () => {
  it('a scenario an SDK client cannot run says so', async () => {
    await expect(runScenario('endless-loop', { serverUrl: lab.server.url, client: 'sdk' })).rejects.toThrow(
      'scenario endless-loop runs with the raw client only (clients: raw)',
    );
  });
});
