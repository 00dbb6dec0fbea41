// The 2026-07-28 task extension of the v2 lab server (src/modern/tasks-extension.ts, written from the
// spec text), request by request over loopback HTTP with the plain fetch client.
import { RESULT_TYPE_TASK, TASK_NOT_FOUND_CODE, TaskField, TaskMethod, TaskStatus } from '@resumewatch/semconv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ExtensionTaskClient, EXTENSION_TASK_TOOL, startModernLabServer } from '../src/index.js';
import type { ModernLabServer } from '../src/index.js';

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
    expect(unnamed.error?.code).toBe(-32020);
    const nameless = await client.task(TaskMethod.GET, taskId, {}, '');
    expect(nameless.status).toBe(400);
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
