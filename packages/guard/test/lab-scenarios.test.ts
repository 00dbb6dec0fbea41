import type { ScenarioSummary } from '@resumewatch/lab';
import { beforeAll, describe, expect, it } from 'vitest';
import { ResumeDecision } from '../src/index.js';
import { runFixture } from './fixtures/run.js';

interface Brief {
  sessionId: string | undefined;
  requestId: string | undefined;
  status: number;
  decision: string;
}
interface Run {
  name: string;
  guarded: boolean;
  summary: ScenarioSummary;
  refused: { requestIds: string[]; lastEventId: string }[];
  dropped: { requestId: string; eventId: string | undefined }[];
  decisions: Brief[];
  failed: Brief[];
  /** Last-Event-ID requests that reached the lab server for the scenario's session. */
  serverResumes: number;
}

let runs: Run[] = [];
const find = (name: string, guarded = true): Run => runs.find((r) => r.name === name && r.guarded === guarded)!;

beforeAll(async () => {
  runs = await runFixture<Run[]>('lab-scenarios.ts', ['seed-loop', 'per-stream-dedup', 'network-cut', 'server-restart', 'cursor-evicted']);
}, 150_000);

describe('the lab scenarios through guardedFetch, over real HTTP against the lab server', () => {
  it('seed-loop: the final result reaches the application once, and at most one resume reaches the server after it', () => {
    const { summary, serverResumes, failed, dropped } = find('seed-loop');
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.distinctTerminalStreams).toBe(1);
    expect(summary.resumeStatuses.length).toBeLessThanOrEqual(1);
    expect(serverResumes).toBeLessThanOrEqual(1);
    expect(failed).toEqual([]);
    expect(dropped.every((d) => d.requestId === String(summary.details.requestId))).toBe(true);
  });

  it('per-stream-dedup: the side effect runs once', () => {
    const { summary, serverResumes } = find('per-stream-dedup');
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.sideEffectCount).toBe(1);
    expect(serverResumes).toBeLessThanOrEqual(1);
  });

  it('network-cut: every event arrives exactly once, as without the guard', () => {
    const plain = find('network-cut', false);
    const guarded = find('network-cut');
    expect(plain.summary.details.everyEventExactlyOnce).toBe(true);
    expect(guarded.summary.details.everyEventExactlyOnce).toBe(true);
    expect(guarded.summary.terminalDeliveries).toBe(1);
    expect(guarded.refused).toEqual([]);
    expect(guarded.dropped).toEqual([]);
    expect(guarded.decisions.map((d) => d.decision)).toContain(ResumeDecision.CONTINUATION_VALID);
  });

  it('server-restart: the application is told the empty replay is a failed resumption', () => {
    const { summary, failed } = find('server-restart');
    expect(summary.details.emptyReplayOnUnfinishedRequest).toBe(true);
    expect(failed).toEqual([
      { sessionId: summary.sessionId, requestId: String(summary.details.requestId), status: 200, decision: ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY },
    ]);
  });

  it('cursor-evicted: the application is told the cursor is lost', () => {
    const { summary, failed } = find('cursor-evicted');
    const status = summary.resumeStatuses[0]!;
    expect([400, 404, 409]).toContain(status);
    expect(failed).toEqual([
      { sessionId: summary.sessionId, requestId: String(summary.details.requestId), status, decision: ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH },
    ]);
  });
});
