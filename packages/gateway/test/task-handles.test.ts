// The gateway's reader of task facts (task-messages.ts) and its handle store (task-handles.ts), on the
// messages as the wire observer hands them: both task shapes, what is not a task call, the ttl and
// what ends a handle's life (its outcome written, cancelled, gone), one client's handle never another's.
import {
  EXTENSION_TASKS,
  META_IDEMPOTENCY_KEY,
  RESULT_TYPE_TASK,
  TASK_NOT_FOUND_CODE,
  TaskMethod,
  TaskStatus,
} from '@resumewatch/semconv';
import type { JsonRpcMessage, RequestRecord, WireEvent, WireRequest } from '@resumewatch/wire';
import { describe, expect, it } from 'vitest';
import { TaskHandles } from '../src/task-handles.js';
import { readTaskCall, readTaskHandle } from '../src/task-messages.js';

const bytes = (message: unknown) => new TextEncoder().encode(JSON.stringify(message));
const KEY = { [META_IDEMPOTENCY_KEY]: 'k-1' };
const DECLARED = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { [EXTENSION_TASKS]: {} } } };

const augmentedCall = (id: number, meta: Record<string, unknown> = KEY) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'charge', arguments: {}, task: { ttl: 1_000 }, _meta: meta },
});
const extensionCall = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'charge', arguments: {}, _meta: { ...DECLARED, ...KEY } },
});
const augmentedAnswer = (id: number, taskId: string, ttl: number | null) => ({
  jsonrpc: '2.0',
  id,
  result: { task: { taskId, status: TaskStatus.WORKING, ttl, createdAt: 'now', lastUpdatedAt: 'now' } },
});
const extensionAnswer = (id: number, taskId: string) => ({
  jsonrpc: '2.0',
  id,
  result: { resultType: RESULT_TYPE_TASK, taskId, status: TaskStatus.WORKING, ttlMs: 1_000, pollIntervalMs: 100 },
});

describe('readTaskCall', () => {
  it('reads both shapes of a call that may be answered with a task, with its key and its shape', () => {
    expect(readTaskCall(bytes(augmentedCall(1)))).toEqual({ id: 1, name: 'charge', key: 'k-1', augmented: true });
    expect(readTaskCall(bytes(extensionCall(2)))).toEqual({ id: 2, name: 'charge', key: 'k-1', augmented: false });
    expect(readTaskCall(bytes(augmentedCall(3, {})))).toEqual({
      id: 3,
      name: 'charge',
      key: undefined,
      augmented: true,
    });
  });

  it('reads nothing else: a plain call, another method, a batch, a notification, an over-long key', () => {
    const plain = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'charge', _meta: KEY } };
    expect(readTaskCall(bytes(plain))).toBeUndefined();
    expect(readTaskCall(bytes({ ...augmentedCall(1), method: TaskMethod.GET }))).toBeUndefined();
    expect(readTaskCall(bytes([augmentedCall(1), augmentedCall(2)]))).toBeUndefined();
    const { id: _id, ...notification } = augmentedCall(1);
    expect(readTaskCall(bytes(notification))).toBeUndefined();
    expect(readTaskCall(bytes(augmentedCall(1, { [META_IDEMPOTENCY_KEY]: 'k'.repeat(257) })))?.key).toBeUndefined();
  });
});

describe('readTaskHandle', () => {
  it('reads the task an answer created, in both shapes, with its ttl (none kept for null: unlimited)', () => {
    expect(readTaskHandle(augmentedAnswer(1, 't-1', null) as JsonRpcMessage)).toMatchObject({
      taskId: 't-1',
      ttlMs: undefined,
    });
    expect(readTaskHandle(extensionAnswer(1, 't-2') as JsonRpcMessage)).toMatchObject({ taskId: 't-2', ttlMs: 1_000 });
    expect(readTaskHandle({ jsonrpc: '2.0', id: 1, result: { content: [] } } as JsonRpcMessage)).toBeUndefined();
  });
});

/** The observer's view of one exchange: its request (during onRequest) and the terminal of its answer. */
function exchange(handles: TaskHandles, message: unknown, answer: unknown, scope = 'client-a', session?: string) {
  const record = { id: String((message as { id: number }).id) } as RequestRecord;
  handles.listener.onRequest!({
    messages: [message as JsonRpcMessage],
    requests: [record],
    clientScope: scope,
    sessionId: session,
  } as unknown as WireRequest);
  handles.listener.onEvent!({
    messages: [answer as JsonRpcMessage],
    terminals: [{ request: record, messageIndex: 0 }],
  } as unknown as WireEvent);
}

describe('TaskHandles', () => {
  it('repeats a live handle to the same client, session and key, never to another', () => {
    const handles = new TaskHandles();
    exchange(handles, augmentedCall(1), augmentedAnswer(1, 't-1', 60_000), 'client-a', 's-1');
    expect(handles.repeatFor('client-a', 's-1', 'k-1', 'charge')?.taskId).toBe('t-1');
    expect(handles.repeatFor('client-b', 's-1', 'k-1', 'charge')).toBeUndefined();
    expect(handles.repeatFor('client-a', 's-2', 'k-1', 'charge')).toBeUndefined();
    expect(handles.repeatFor('client-a', 's-1', 'k-2', 'charge')).toBeUndefined();
    expect(handles.repeatFor('client-a', 's-1', 'k-1', 'refund')).toBeUndefined();
    expect(handles.repeated).toBe(1);
  });

  it('keeps a handle for its announced ttl only', () => {
    let now = 0;
    const handles = new TaskHandles(() => now);
    exchange(handles, extensionCall(1), extensionAnswer(1, 't-2'));
    now = 999;
    expect(handles.repeatFor('client-a', undefined, 'k-1', 'charge')?.taskId).toBe('t-2');
    now = 1_000;
    expect(handles.repeatFor('client-a', undefined, 'k-1', 'charge')).toBeUndefined();
    expect(handles.size).toBe(0);
  });

  it('keeps no handle for an answer that is not a task, nor for an unkeyed call', () => {
    const handles = new TaskHandles();
    exchange(handles, augmentedCall(1), { jsonrpc: '2.0', id: 1, result: { content: [] } });
    exchange(handles, augmentedCall(2, {}), augmentedAnswer(2, 't-3', 60_000));
    expect(handles.size).toBe(0);
  });

  const ending: [string, unknown, unknown][] = [
    ['tasks/result answered (2025-11-25)', TaskMethod.RESULT, { content: [] }],
    [
      'tasks/get with the outcome inline (2026-07-28)',
      TaskMethod.GET,
      { resultType: 'complete', taskId: 't-1', status: TaskStatus.COMPLETED, result: { content: [] } },
    ],
    ['cancelled', TaskMethod.CANCEL, { taskId: 't-1', status: TaskStatus.CANCELLED }],
  ];
  for (const [what, method, result] of ending)
    it(`drops a handle once its task is over for the client: ${what}`, () => {
      const handles = new TaskHandles();
      exchange(handles, augmentedCall(1), augmentedAnswer(1, 't-1', 60_000));
      exchange(
        handles,
        { jsonrpc: '2.0', id: 2, method, params: { taskId: 't-1' } },
        { jsonrpc: '2.0', id: 2, result },
      );
      expect(handles.repeatFor('client-a', undefined, 'k-1', 'charge')).toBeUndefined();
    });

  it('drops a handle whose task the server says is gone, and keeps one only polled (2025-11-25 tasks/get)', () => {
    const handles = new TaskHandles();
    exchange(handles, augmentedCall(1), augmentedAnswer(1, 't-1', 60_000));
    const get = { jsonrpc: '2.0', id: 2, method: TaskMethod.GET, params: { taskId: 't-1' } };
    exchange(handles, get, { jsonrpc: '2.0', id: 2, result: { taskId: 't-1', status: TaskStatus.COMPLETED } });
    expect(handles.repeatFor('client-a', undefined, 'k-1', 'charge')?.taskId).toBe('t-1');
    exchange(
      handles,
      { ...get, id: 3 },
      { jsonrpc: '2.0', id: 3, error: { code: TASK_NOT_FOUND_CODE, message: 'Task not found' } },
    );
    expect(handles.repeatFor('client-a', undefined, 'k-1', 'charge')).toBeUndefined();
  });
});
