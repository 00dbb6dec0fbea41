// What a message shows of an MCP task, in both shapes (2025-11-25's augmented tasks, the 2026-07-28
// extension), read from messages already parsed: member look-ups only, bounded values.
import {
  EXTENSION_TASKS,
  META_CLIENT_CAPABILITIES,
  META_RELATED_TASK,
  NOTIFICATION_TASKS,
  NOTIFICATION_TASK_STATUS,
  TaskGone,
  TaskShape,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { requestTaskId, taskFactsOfAnswer, taskFactsOfNotification, taskRequested } from '../src/index.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../src/index.js';

const answer = (result: unknown): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, result }) as JsonRpcMessage;
const failure = (code: number, message: string): JsonRpcMessage =>
  ({ jsonrpc: '2.0', id: 1, error: { code, message } }) as JsonRpcMessage;
const call = (params: Record<string, unknown>, method = 'tools/call'): JsonRpcRequest => ({
  jsonrpc: '2.0',
  id: 1,
  method,
  params,
});

describe('task facts of a request', () => {
  it('tells a call that asks for a task, in either shape, from one that does not', () => {
    expect(taskRequested(call({ name: 't', task: { ttl: 60_000 } }))).toBe(true);
    expect(taskRequested(call({ name: 't', task: {} }))).toBe(true);
    expect(
      taskRequested(
        call({ name: 't', _meta: { [META_CLIENT_CAPABILITIES]: { extensions: { [EXTENSION_TASKS]: {} } } } }),
      ),
    ).toBe(true);
    expect(taskRequested(call({ name: 't' }))).toBe(false);
    expect(taskRequested(call({ name: 't', task: 'yes' }))).toBe(false);
    expect(taskRequested(call({ name: 't', _meta: { [META_CLIENT_CAPABILITIES]: { extensions: {} } } }))).toBe(false);
    expect(taskRequested({ jsonrpc: '2.0', id: 1, method: 'ping' })).toBe(false);
    // A request of tasks/* concerns a task, it does not ask for one (SDK 1.x sends params.task there too).
    expect(taskRequested(call({ taskId: 'T1', task: {} }, 'tasks/get'))).toBe(false);
  });

  it('reads the task id of the methods that name one, and of no other', () => {
    expect(requestTaskId(call({ taskId: 'T1' }, 'tasks/get'))).toBe('T1');
    expect(requestTaskId(call({ taskId: 'T1' }, 'tasks/result'))).toBe('T1');
    expect(requestTaskId(call({ taskId: 'T1' }, 'tasks/cancel'))).toBe('T1');
    expect(requestTaskId(call({ taskId: 'T1' }, 'tasks/update'))).toBe('T1');
    expect(requestTaskId(call({ taskId: 'T1' }, 'tasks/list'))).toBeUndefined();
    expect(requestTaskId(call({ taskId: 'T1', name: 'x' }))).toBeUndefined();
    expect(requestTaskId(call({ taskId: 7 }, 'tasks/get'))).toBeUndefined();
  });
});

describe('task facts of an answer', () => {
  it('reads a 2025-11-25 handle (result.task) and its flat tasks/get', () => {
    const created = taskFactsOfAnswer(
      'tools/call',
      answer({ task: { taskId: 'T1', status: 'working', ttl: 60_000, pollInterval: 500, createdAt: 'x' } }),
    );
    expect(created).toEqual({
      taskId: 'T1',
      status: 'working',
      shape: TaskShape.AUGMENTED,
      ttlMs: 60_000,
      pollIntervalMs: 500,
      outcomeDelivered: false,
      gone: undefined,
    });
    // A completed tasks/get of 2025-11-25 carries no outcome: tasks/result does.
    const polled = taskFactsOfAnswer('tasks/get', answer({ taskId: 'T1', status: 'completed', ttl: null }));
    expect(polled).toMatchObject({ taskId: 'T1', status: 'completed', shape: TaskShape.AUGMENTED });
    expect(polled!.ttlMs).toBeUndefined();
    expect(polled!.outcomeDelivered).toBe(false);
    expect(taskFactsOfAnswer('tasks/result', answer({ content: [] }))).toMatchObject({ outcomeDelivered: true });
    // The task's own error, through tasks/result, is its outcome too.
    expect(taskFactsOfAnswer('tasks/result', failure(-32603, 'boom'))).toMatchObject({ outcomeDelivered: true });
    // tasks/cancel of 2025-11-25 answers with the Task.
    expect(taskFactsOfAnswer('tasks/cancel', answer({ taskId: 'T1', status: 'cancelled' }))).toMatchObject({
      status: 'cancelled',
    });
  });

  it('reads a 2026-07-28 handle (resultType task) and tasks/get with its outcome inline', () => {
    const created = taskFactsOfAnswer(
      'tools/call',
      answer({ resultType: 'task', taskId: 'E1', status: 'working', ttlMs: 30_000, pollIntervalMs: 250 }),
    );
    expect(created).toMatchObject({ taskId: 'E1', shape: TaskShape.EXTENSION, ttlMs: 30_000, pollIntervalMs: 250 });
    const working = taskFactsOfAnswer(
      'tasks/get',
      answer({ resultType: 'complete', taskId: 'E1', status: 'working', ttlMs: 30_000, pollIntervalMs: 250 }),
    );
    expect(working).toMatchObject({ shape: TaskShape.EXTENSION, status: 'working', outcomeDelivered: false });
    const done = taskFactsOfAnswer(
      'tasks/get',
      answer({ resultType: 'complete', taskId: 'E1', status: 'completed', ttlMs: null, result: { content: [] } }),
    );
    expect(done).toMatchObject({ status: 'completed', outcomeDelivered: true, ttlMs: undefined });
    const failed = taskFactsOfAnswer(
      'tasks/get',
      answer({ resultType: 'complete', taskId: 'E1', status: 'failed', ttlMs: 1, error: { code: 1, message: 'x' } }),
    );
    expect(failed).toMatchObject({ status: 'failed', outcomeDelivered: true });
    // An acknowledgement (tasks/cancel, tasks/update of 2026-07-28) shows nothing.
    expect(taskFactsOfAnswer('tasks/cancel', answer({}))).toBeUndefined();
  });

  it('tells a task gone (expired or not found) only for the methods whose -32602 means it', () => {
    expect(taskFactsOfAnswer('tasks/get', failure(-32602, 'Task not found'))!.gone).toBe(TaskGone.NOT_FOUND);
    expect(taskFactsOfAnswer('tasks/result', failure(-32602, 'Task has EXPIRED'))!.gone).toBe(TaskGone.EXPIRED);
    expect(taskFactsOfAnswer('tasks/update', failure(-32602, 'unknown task'))!.gone).toBe(TaskGone.NOT_FOUND);
    // -32602 to tasks/cancel of a finished task is a refusal, not a gone task.
    expect(taskFactsOfAnswer('tasks/cancel', failure(-32602, 'Task not found'))).toBeUndefined();
    expect(taskFactsOfAnswer('tools/call', failure(-32602, 'Task not found'))).toBeUndefined();
    // The word is looked for in the message's first 256 characters only.
    expect(taskFactsOfAnswer('tasks/get', failure(-32602, `${'x'.repeat(300)} expired`))!.gone).toBe(
      TaskGone.NOT_FOUND,
    );
  });

  it("reads a tasks/result -32602 that names its task (the related-task meta) as the task's outcome, not a task gone", () => {
    // 2025-11-25: tasks/result answers exactly what the call would have, with _meta[related-task]; a JSON-RPC
    // error carries it in its data. The task's call failed with -32602 (its own invalid params).
    const own = (taskId: unknown): JsonRpcMessage =>
      ({
        jsonrpc: '2.0',
        id: 1,
        error: {
          code: -32602,
          message: 'Invalid params: order not found',
          data: { _meta: { [META_RELATED_TASK]: { taskId } } },
        },
      }) as JsonRpcMessage;
    expect(taskFactsOfAnswer('tasks/result', own('T1'))).toMatchObject({
      shape: TaskShape.AUGMENTED,
      outcomeDelivered: true,
      gone: undefined,
    });
    // The server's own -32602 about the request names no task: gone, as before. A meta without a task id
    // names none either, and tasks/get's -32602 is the server's whatever it carries.
    expect(taskFactsOfAnswer('tasks/result', failure(-32602, 'Task not found'))).toMatchObject({
      gone: TaskGone.NOT_FOUND,
      outcomeDelivered: false,
    });
    expect(taskFactsOfAnswer('tasks/result', own(7))).toMatchObject({
      gone: TaskGone.NOT_FOUND,
      outcomeDelivered: false,
    });
    expect(taskFactsOfAnswer('tasks/get', own('T1'))).toMatchObject({
      gone: TaskGone.NOT_FOUND,
      outcomeDelivered: false,
    });
  });

  it('keeps nothing unbounded or outside the protocol', () => {
    const facts = taskFactsOfAnswer(
      'tools/call',
      answer({ task: { taskId: 'T'.repeat(257), status: 'exploded', ttl: -5, pollInterval: Infinity } }),
    );
    expect(facts).toMatchObject({ taskId: undefined, status: undefined, ttlMs: undefined, pollIntervalMs: undefined });
    expect(taskFactsOfAnswer('tools/call', answer({ task: { taskId: 'T', ttl: 1.9 } }))!.ttlMs).toBe(1);
    expect(taskFactsOfAnswer('tools/call', answer({ content: [] }))).toBeUndefined();
    expect(taskFactsOfAnswer('tools/call', answer({ task: [] }))).toBeUndefined();
    expect(taskFactsOfAnswer('tasks/list', answer({ tasks: [{ taskId: 'T' }] }))).toBeUndefined();
  });
});

describe('task facts of a notification', () => {
  it('reads both shapes of status notification, and nothing else', () => {
    const note = (method: string, params: unknown): JsonRpcMessage => ({ jsonrpc: '2.0', method, params }) as never;
    expect(
      taskFactsOfNotification(note(NOTIFICATION_TASK_STATUS, { taskId: 'T1', status: 'completed', ttl: 1000 })),
    ).toMatchObject({ taskId: 'T1', status: 'completed', shape: TaskShape.AUGMENTED, ttlMs: 1000 });
    expect(
      taskFactsOfNotification(note(NOTIFICATION_TASKS, { taskId: 'E1', status: 'failed', pollIntervalMs: 5 })),
    ).toMatchObject({ taskId: 'E1', status: 'failed', shape: TaskShape.EXTENSION, pollIntervalMs: 5 });
    expect(taskFactsOfNotification(note('notifications/progress', { taskId: 'T1' }))).toBeUndefined();
    expect(taskFactsOfNotification(note(NOTIFICATION_TASK_STATUS, { status: 'working' }))).toBeUndefined();
  });
});
