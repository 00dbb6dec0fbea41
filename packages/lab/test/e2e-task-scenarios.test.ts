// The 2025-11-25 task scenarios on the real SDK 1.x task API (server and client over loopback HTTP):
// each run's traffic shows what the scenario claims, read off the server's own store and request log
// and off the client's recording fetch. Findings are not asserted here (the detector's tests do that);
// the scenarios' promised kinds are checked for shape only.
import { FindingKind, META_IDEMPOTENCY_KEY, TASK_NOT_FOUND_CODE, TaskMethod, TaskStatus } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import {
  TASK_SCENARIO_EXPECTED_FINDINGS,
  TASK_SCENARIO_NAMES,
  runScenario,
  scenarioClients,
  startFaultProxy,
} from '../src/index.js';
import type { FaultProxy, ScenarioSummary } from '../src/index.js';

const UNUSED = 'http://127.0.0.1:9/mcp';
type Counts = Record<string, number>;

const serverCount = (summary: ScenarioSummary, method: string): number =>
  (summary.details.serverRequests as Counts)[method] ?? 0;

describe('task scenarios (SDK 1.x)', { timeout: 30_000 }, () => {
  it('task-healthy: one task, polled at the announced interval, its result fetched once', async () => {
    const summary = await runScenario('task-healthy', { serverUrl: UNUSED });
    expect(summary.details.tasksCreated).toHaveLength(1);
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.sideEffectCount).toBe(1);
    const run = summary.details.run as { statuses: string[]; resultText: string; error: unknown };
    expect(run.error).toBeUndefined();
    expect(run.resultText).toMatch(/^charged /);
    expect(run.statuses.at(-1)).toBe(TaskStatus.COMPLETED);
    // The SDK waits the announced 500 ms between polls, and the work takes 300: two polls, not a storm.
    expect(serverCount(summary, TaskMethod.GET)).toBe(run.statuses.length);
    expect(run.statuses.length).toBeLessThanOrEqual(3);
    expect(summary.expectedFindings).toEqual([]);
  });

  it('task-reissue-after-lost-reply: the first reply cut before it was read, the server holds two tasks', async () => {
    const summary = await runScenario('task-reissue-after-lost-reply', { serverUrl: UNUSED });
    const first = summary.details.firstAttempt as { created: unknown; error: unknown };
    expect(first.created).toBeUndefined();
    expect(first.error).toBeDefined();
    expect(summary.details.cuts).toBe(1);
    expect(summary.details.tasksCreated).toHaveLength(2);
    expect(serverCount(summary, 'tools/call')).toBe(2);
    // The re-issue's task ran to its result; the first one ran too, unseen: two charges for one piece of work.
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.sideEffectCount).toBe(2);
    expect(summary.expectedFindings).toEqual([FindingKind.POSSIBLE_DUPLICATE_TASK]);
  });

  it('task-reissue-after-lost-reply with an idempotency key: both attempts carry it', async () => {
    const summary = await runScenario('task-reissue-after-lost-reply', {
      serverUrl: UNUSED,
      tasks: { idempotencyKey: 'key-1' },
    });
    expect(summary.details.tasksCreated).toHaveLength(2);
    expect(summary.details.idempotencyKey).toBe('key-1');
    expect(summary.details.callMetas).toEqual([
      { [META_IDEMPOTENCY_KEY]: 'key-1' },
      { [META_IDEMPOTENCY_KEY]: 'key-1' },
    ]);
    expect(summary.expectedFindings).toEqual([FindingKind.DUPLICATE_TASK]);
  });

  it('task-result-after-expiry: the task completed, its result asked for after the ttl: -32602', async () => {
    const summary = await runScenario('task-result-after-expiry', { serverUrl: UNUSED, tasks: { ttlMs: 800 } });
    expect(summary.details.statusSeen).toBe(TaskStatus.COMPLETED);
    expect(summary.details.purged).toBe(true);
    expect(summary.details.resultAnswer).toMatchObject({ code: TASK_NOT_FOUND_CODE });
    expect(summary.terminalDeliveries).toBe(0);
    expect(serverCount(summary, TaskMethod.RESULT)).toBe(1);
    expect(summary.expectedFindings).toEqual([FindingKind.LOST_TASK_RESULT]);
  });

  it('task-poll-storm: many tasks/get, each sooner than the announced interval after the previous', async () => {
    const summary = await runScenario('task-poll-storm', { serverUrl: UNUSED });
    expect(summary.details.announcedPollInterval).toBe(500);
    // 2.5 s of work polled every 10 ms: far more than the 5 polls the interval allows, even on a slow machine.
    expect(summary.details.pollsFasterThanInterval as number).toBeGreaterThanOrEqual(20);
    // As the server received them: at least 20 polls each sooner than half the interval after the previous.
    const gaps = summary.details.serverPollGaps as number[];
    expect(gaps.filter((gap) => gap < 250).length).toBeGreaterThanOrEqual(20);
    expect(serverCount(summary, TaskMethod.GET)).toBe(summary.details.polls);
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.expectedFindings).toEqual([FindingKind.TASK_POLL_STORM]);
  });

  it('task-rereads: tasks/get and tasks/result read again after completion give the same answers', async () => {
    const summary = await runScenario('task-rereads', { serverUrl: UNUSED });
    const rereads = summary.details.rereads as Array<{ method: string; status?: string; text?: string }>;
    expect(rereads.filter((r) => r.method === TaskMethod.GET).map((r) => r.status)).toEqual([
      TaskStatus.COMPLETED,
      TaskStatus.COMPLETED,
    ]);
    const texts = rereads.filter((r) => r.method === TaskMethod.RESULT).map((r) => r.text);
    expect(texts).toEqual([texts[0], texts[0]]);
    expect(summary.terminalDeliveries).toBe(3);
    expect(summary.details.tasksCreated).toHaveLength(1);
    expect(summary.sideEffectCount).toBe(1);
  });

  it('task-cancelled: the client cancels its working task; nothing is charged', async () => {
    const summary = await runScenario('task-cancelled', { serverUrl: UNUSED });
    expect(summary.details.statusBefore).toBe(TaskStatus.WORKING);
    expect(summary.details.cancelAnswer).toBe(TaskStatus.CANCELLED);
    expect(summary.details.statusAfter).toBe(TaskStatus.CANCELLED);
    expect(serverCount(summary, TaskMethod.CANCEL)).toBe(1);
    expect(summary.sideEffectCount).toBe(0);
  });

  it('puts what `tasks.front` returns between the cut and the server (a gateway, in the integration tests)', async () => {
    const fronts: FaultProxy[] = [];
    const targets: string[] = [];
    const summary = await runScenario('task-reissue-after-lost-reply', {
      serverUrl: UNUSED,
      tasks: {
        front: async (serverUrl) => {
          targets.push(serverUrl);
          const front = await startFaultProxy({ target: serverUrl });
          fronts.push(front);
          return front;
        },
      },
    });
    expect(targets).toHaveLength(1);
    // The cut is the scenario's own proxy's, in front of the front: the front forwarded both calls.
    expect(fronts[0]!.cuts).toHaveLength(0);
    expect(summary.details.cuts).toBe(1);
    expect(summary.details.tasksCreated).toHaveLength(2);
    expect(summary.terminalDeliveries).toBe(1);
  });

  it('declares the expected findings of every task scenario, and runs each with its one client', async () => {
    expect(Object.keys(TASK_SCENARIO_EXPECTED_FINDINGS).sort()).toEqual([...TASK_SCENARIO_NAMES].sort());
    expect(scenarioClients('task-healthy')).toEqual(['sdk']);
    await expect(runScenario('task-healthy', { serverUrl: UNUSED, client: 'sdk-v2' })).rejects.toThrow(/clients: sdk/);
  });
});
