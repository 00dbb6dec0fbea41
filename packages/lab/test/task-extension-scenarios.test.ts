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
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ExtensionTaskClient, EXTENSION_TASK_TOOL, runScenario, startModernLabServer } from '../src/index.js';
import type { ModernLabServer, ScenarioSummary } from '../src/index.js';

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

describe('the task extension on the v2 lab server', () => {
  let server: ModernLabServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('refuses tasks/* without Mcp-Name = taskId, answers unknown tasks -32602, acknowledges cancel', async () => {
    server = await startModernLabServer({ eras: 'modern-only', tasks: { workMs: 5_000 } });
    const client = new ExtensionTaskClient(server.url, (input, init) => fetch(input, init));
    const created = await client.call(EXTENSION_TASK_TOOL, { key: 'k' });
    const taskId = created.result?.[TaskField.TASK_ID] as string;
    expect(created.result).toMatchObject({
      [TaskField.RESULT_TYPE]: RESULT_TYPE_TASK,
      [TaskField.STATUS]: TaskStatus.WORKING,
    });

    const unnamed = await client.task(TaskMethod.GET, taskId, {}, 'another-id');
    expect(unnamed.status).toBe(400);
    const unknown = await client.task(TaskMethod.GET, 'no-such-task');
    expect(unknown.error).toMatchObject({ code: TASK_NOT_FOUND_CODE, message: expect.stringMatching(/not found/i) });

    const ack = await client.task(TaskMethod.CANCEL, taskId);
    expect(ack.result).toEqual({ [TaskField.RESULT_TYPE]: 'complete' });
    const after = await client.task(TaskMethod.GET, taskId);
    expect(after.result?.[TaskField.STATUS]).toBe(TaskStatus.CANCELLED);
    expect(server.sideEffectCount('k')).toBe(0);
  });

  it('carries a failed task’s error and pending input requests inline in tasks/get; tasks/update resumes it', async () => {
    server = await startModernLabServer({ eras: 'modern-only', tasks: { workMs: 0 } });
    const client = new ExtensionTaskClient(server.url, (input, init) => fetch(input, init));
    const failing = await client.call(EXTENSION_TASK_TOOL, { key: 'f', fail: true });
    const failedId = failing.result?.[TaskField.TASK_ID] as string;
    await vi.waitFor(async () =>
      expect((await client.task(TaskMethod.GET, failedId)).result?.[TaskField.STATUS]).toBe(TaskStatus.FAILED),
    );
    expect((await client.task(TaskMethod.GET, failedId)).result?.[TaskField.ERROR]).toMatchObject({ code: -32603 });

    const asking = await client.call(EXTENSION_TASK_TOOL, { key: 'c', confirm: true });
    const askingId = asking.result?.[TaskField.TASK_ID] as string;
    expect(asking.result?.[TaskField.STATUS]).toBe(TaskStatus.INPUT_REQUIRED);
    const pending = await client.task(TaskMethod.GET, askingId);
    expect(Object.keys(pending.result?.[TaskField.INPUT_REQUESTS] as object)).toEqual(['confirm']);
    const updated = await client.task(TaskMethod.UPDATE, askingId, {
      [TaskField.INPUT_RESPONSES]: { confirm: { action: 'accept', content: { confirm: true } } },
    });
    expect(updated.error).toBeUndefined();
    await vi.waitFor(async () =>
      expect((await client.task(TaskMethod.GET, askingId)).result?.[TaskField.STATUS]).toBe(TaskStatus.COMPLETED),
    );
    expect(server.sideEffectCount('c')).toBe(1);
  });

  it('answers a call that does not declare the extension with the plain result (the SDK’s tool)', async () => {
    server = await startModernLabServer({ eras: 'modern-only' });
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: EXTENSION_TASK_TOOL } }),
    });
    // Without the extension the extension stays out of it: the SDK answers (here: a refusal of the bare request).
    await response.body?.cancel();
    expect(server.extensionTasks.created()).toEqual([]);
    expect(server.extensionTasks.requests()).toEqual([]);
  });
});
