// The 2026-07-28 task extension on the v2 lab server (from the spec text; no SDK implements it), over
// loopback HTTP with the plain fetch client, and the SDK 1.x client against the same server. Each
// scenario's traffic shows what it claims, read off the server's task log and the client's answers.
// Findings are not asserted here (the detector's tests do that).
import {
  FindingKind,
  RESULT_TYPE_TASK,
  TASK_NOT_FOUND_CODE,
  TaskField,
  TaskMethod,
  TaskStatus,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { runScenario } from '../src/index.js';
import type { ScenarioSummary } from '../src/index.js';

const UNUSED = 'http://127.0.0.1:9/mcp';
const serverCount = (summary: ScenarioSummary, method: string): number =>
  (summary.details.serverRequests as Record<string, number>)[method] ?? 0;

describe('task extension scenarios (2026-07-28)', { timeout: 30_000 }, () => {
  it('modern-task-healthy: a handle, polls at the interval, the result inline', async () => {
    const summary = await runScenario('modern-task-healthy', { serverUrl: UNUSED });
    expect((summary.details.handle as Record<string, unknown>)[TaskField.RESULT_TYPE]).toBe(RESULT_TYPE_TASK);
    expect(summary.details.tasksCreated).toHaveLength(1);
    const statuses = summary.details.statuses as string[];
    expect(statuses.at(-1)).toBe(TaskStatus.COMPLETED);
    expect(statuses.length).toBeLessThanOrEqual(3);
    expect(summary.details.resultText).toMatch(/^charged /);
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.sideEffectCount).toBe(1);
    expect(summary.expectedFindings).toEqual([]);
  });

  it('modern-task-duplicate: the stream broke before the handle, the re-issue made a second task', async () => {
    const summary = await runScenario('modern-task-duplicate', { serverUrl: UNUSED });
    const first = summary.details.firstAttempt as { broken: boolean; notifications: number; handle: unknown };
    expect(first).toMatchObject({ broken: true, notifications: 1, handle: undefined });
    expect(summary.details.cuts).toBe(1);
    expect(summary.details.tasksCreated).toHaveLength(2);
    expect(serverCount(summary, 'tools/call')).toBe(2);
    expect(summary.sideEffectCount).toBe(2);
    expect(summary.details.resultText).toMatch(/^charged /);
    expect(summary.expectedFindings).toEqual([FindingKind.POSSIBLE_DUPLICATE_TASK]);
  });

  it('modern-task-duplicate with an idempotency key: both attempts carry it', async () => {
    const summary = await runScenario('modern-task-duplicate', { serverUrl: UNUSED, tasks: { idempotencyKey: true } });
    const key = summary.details.idempotencyKey as string;
    expect(key).toBeTruthy();
    expect(summary.details.callMetas).toEqual([key, key]);
    expect(summary.expectedFindings).toEqual([FindingKind.DUPLICATE_TASK]);
  });

  it('modern-task-lost: asked after its ttl, the task is gone: -32602 "expired"', async () => {
    const summary = await runScenario('modern-task-lost', { serverUrl: UNUSED, tasks: { ttlMs: 800 } });
    expect(summary.details.statusSeen).toBe(TaskStatus.WORKING);
    expect(summary.details.completedOnServer).toBe(true);
    expect(summary.details.purged).toBe(true);
    expect(summary.details.lateAnswer).toMatchObject({
      code: TASK_NOT_FOUND_CODE,
      message: expect.stringMatching(/expired/i),
    });
    expect(summary.terminalDeliveries).toBe(0);
    expect(summary.expectedFindings).toEqual([FindingKind.LOST_TASK_RESULT]);
  });

  it('modern-task-poll-storm: many tasks/get, each sooner than the announced interval', async () => {
    const summary = await runScenario('modern-task-poll-storm', { serverUrl: UNUSED });
    expect(summary.details.announcedPollInterval).toBe(500);
    expect(summary.details.pollsFasterThanInterval as number).toBeGreaterThanOrEqual(20);
    // As the server received them: at least 20 polls each sooner than half the interval after the previous.
    const gaps = summary.details.serverPollGaps as number[];
    expect(gaps.filter((gap) => gap < 250).length).toBeGreaterThanOrEqual(20);
    expect(serverCount(summary, TaskMethod.GET)).toBe(summary.details.polls);
    expect(summary.details.lastStatus).toBe(TaskStatus.COMPLETED);
    expect(summary.expectedFindings).toEqual([FindingKind.TASK_POLL_STORM]);
  });

  it('task-legacy-client-extension-server: the SDK 1.x client gets the plain result, no task', async () => {
    const summary = await runScenario('task-legacy-client-extension-server', { serverUrl: UNUSED });
    expect(summary.details.resultText).toMatch(/^charged /);
    expect(summary.details.tasksCreated).toBe(0);
    expect(summary.details.legs as string[]).not.toContain('modern');
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.sideEffectCount).toBe(1);
    expect(summary.details.sdkErrors).toEqual([]);
  });
});
