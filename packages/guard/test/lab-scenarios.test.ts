import { runScenario, startLabServer } from '@resumewatch/lab';
import type { LabServer, ScenarioClient, ScenarioName } from '@resumewatch/lab';
import { ResumeEvidence, ResumeOutcome } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResumeDecision, guardedFetch } from '../src/index.js';
import type { GuardOptions } from '../src/index.js';
import { recordGuard } from './helpers/record-guard.js';

let lab: LabServer;
beforeAll(async () => {
  lab = await startLabServer();
});
afterAll(async () => {
  await lab.close();
});

async function withGuard(name: ScenarioName, extra: GuardOptions = {}, client?: ScenarioClient, resultWaitMs?: number) {
  const seen = recordGuard(extra);
  const fetch = guardedFetch(seen.options);
  const summary = await runScenario(name, {
    serverUrl: lab.url,
    fetch,
    client,
    ...(resultWaitMs !== undefined ? { resultWaitMs } : {}),
  });
  fetch.listener.dispose();
  // Last-Event-ID requests that reached the lab server for the scenario's session.
  const serverResumes = lab
    .requestLog(summary.sessionId)
    .filter((r) => r.lastEventId !== undefined && !r.restore).length;
  return { summary, seen, serverResumes };
}

describe('the lab scenarios through guardedFetch, over real HTTP against the lab server', () => {
  it('seed-loop: the final result reaches the application once, and no resume reaches the server after it', async () => {
    const { summary, seen, serverResumes } = await withGuard('seed-loop');
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.distinctTerminalStreams).toBe(1);
    expect(summary.resumeStatuses).toEqual([]);
    expect(serverResumes).toBe(0);
    expect(seen.failed).toEqual([]);
    // The stale cursor (from before the final result) is refused locally, once.
    expect(seen.refused.map((r) => r.requestIds)).toEqual([[String(summary.details.requestId)]]);
  });

  it('per-stream-dedup: the side effect runs once', async () => {
    const { summary, serverResumes } = await withGuard('per-stream-dedup');
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.sideEffectCount).toBe(1);
    expect(serverResumes).toBe(0);
  });

  it('network-cut: every event arrives exactly once, as without the guard', async () => {
    const plain = await runScenario('network-cut', { serverUrl: lab.url });
    const { summary, seen } = await withGuard('network-cut');
    expect(plain.details.everyEventExactlyOnce).toBe(true);
    expect(summary.details.everyEventExactlyOnce).toBe(true);
    expect(summary.terminalDeliveries).toBe(1);
    expect(seen.refused).toEqual([]);
    expect(seen.dropped).toEqual([]);
    expect(seen.decisions.map((d) => d.decision)).toContain(ResumeDecision.CONTINUATION_VALID);
  });

  it('server-restart: the lab server announced polling, so the clean empty replay is a poll, not a failure; the deadline decides', async () => {
    const { summary, seen } = await withGuard('server-restart', { requestDeadlineMs: 60_000 });
    expect(summary.details.emptyReplayOnUnfinishedRequest).toBe(true);
    expect(seen.decisions.map((d) => [d.sessionId, d.requestId, d.status, d.outcome, d.evidence, d.decision])).toEqual([
      [summary.sessionId, String(summary.details.requestId), 200, 'poll', 'body_end', ResumeDecision.POLL_NO_ACTION],
    ]);
    // The scenario deletes its session after waiting 3 s for the result, well before the 60 s deadline:
    // the client gave the request up, nothing is reported.
    expect(seen.failed).toEqual([]);
  });

  it('cursor-evicted: the application is told the cursor is lost', async () => {
    const { summary, seen } = await withGuard('cursor-evicted');
    const status = summary.resumeStatuses[0]!;
    expect([400, 404, 409]).toContain(status);
    expect(seen.failed.map((f) => [f.sessionId, f.requestId, f.status, f.decision])).toEqual([
      [summary.sessionId, String(summary.details.requestId), status, ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH],
    ]);
  });

  // The server replays the missed progress and routes nothing live to the resumed stream: a continuation
  // on the wire, and the result never comes. At the request's deadline (3 s here, before the client's own
  // 5 s wait or timeout, and late enough for the replay to arrive on a loaded machine) the guard tells the
  // application the resumption failed: retry with idempotency.
  it.each(['raw', 'sdk', 'sdk-v2'] as const)(
    'resume-loses-result (%s client): a continuation, then the deadline without the result: a failed resumption',
    async (client) => {
      const { summary, seen } = await withGuard('resume-loses-result', { requestDeadlineMs: 3_000 }, client, 5_000);
      expect(summary.terminalDeliveries).toBe(0);
      const requestId = String(summary.details.requestId);
      expect(seen.decisions.map((d) => [d.requestId, d.outcome, d.decision])).toEqual([
        [requestId, ResumeOutcome.CONTINUATION, ResumeDecision.CONTINUATION_VALID],
      ]);
      expect(seen.failed.map((f) => [f.sessionId, f.requestId, f.status, f.outcome, f.evidence, f.decision])).toEqual([
        [
          summary.sessionId,
          requestId,
          200,
          ResumeOutcome.PARTIAL_REPLAY,
          ResumeEvidence.DEADLINE,
          ResumeDecision.PARTIAL_REPLAY_RETRY_WITH_IDEMPOTENCY,
        ],
      ]);
    },
  );

  it('resume-loses-result, the raw client deleting its session before the deadline: a failed resumption at that end', async () => {
    const { seen } = await withGuard('resume-loses-result', { requestDeadlineMs: 60_000 });
    expect(seen.failed.map((f) => [f.outcome, f.evidence, f.decision])).toEqual([
      [ResumeOutcome.PARTIAL_REPLAY, ResumeEvidence.REQUEST_END, ResumeDecision.PARTIAL_REPLAY_RETRY_WITH_IDEMPOTENCY],
    ]);
  });

  it('resume-loses-result, the client cancelling first (its own timeout before the deadline): nothing is reported', async () => {
    const { seen } = await withGuard('resume-loses-result', { requestDeadlineMs: 60_000 }, 'sdk');
    expect(seen.decisions.map((d) => d.decision)).toEqual([ResumeDecision.CONTINUATION_VALID]);
    expect(seen.failed).toEqual([]);
  });
});
