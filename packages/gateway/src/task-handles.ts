import { BoundedMap } from '@resumewatch/bounded';
import { OUTCOME_TASK_STATUSES, TASK_NOT_FOUND_CODE, TaskField, TaskMethod, TaskStatus } from '@resumewatch/semconv';
import type { JsonRpcMessage, RequestRecord, WireEvent, WireListener, WireRequest } from '@resumewatch/wire';
import { readTaskHandle, readTaskRequest, taskCallOf } from './task-messages.js';

/** Handles kept at once; the oldest goes first. */
const MAX_HANDLES = 10_000;
/** Longest a handle is kept: its task's announced ttl when shorter; this for an unlimited or unsaid one. */
const MAX_RETENTION_MS = 3_600_000;

/** A live task an earlier keyed call created: what a repeat of that call is answered with. */
interface KeptHandle {
  taskId: string;
  /** The tool the call named: a repeat of the key for another tool is forwarded. */
  name: string | undefined;
  resultText: string;
  /** Past this (the task's announced ttl from its creation), the task may be gone: not repeated. */
  expiresAt: number;
  /** Its entry in `byTask`. */
  taskKey: string;
}

/**
 * With --enforce: one task per idempotency key. A `tools/call` that may be answered with a task and
 * carries an idempotency key (`_meta[META_IDEMPOTENCY_KEY]`), whose upstream answer created a task, leaves
 * that answer here, by (client scope, session, key). The same client's later call with the same key and
 * tool, while the task is live (within its announced ttl, its outcome not yet written to the client, not
 * cancelled, not said gone), is answered with that handle under its own JSON-RPC id and never forwarded:
 * the server creates no second task. A call without a key is never withheld. No rate limiting.
 *
 * Bounded: at most 10,000 handles (about 0.5 KB each: ids, the key and the creation answer, at most
 * 16 KiB), each for at most its ttl or an hour. What it learns comes from the observer's events (a JSON
 * body or an SSE event that carried the answer): only answers the gateway wrote are known.
 */
export class TaskHandles {
  private readonly handles: BoundedMap<string, KeptHandle>;
  /** (scope, session, task id) → the handle's key: a task's outcome delivered, or gone, drops its handle. */
  private readonly byTask: BoundedMap<string, string>;
  /** Requests in flight whose answer may create a kept handle, or end one. */
  private readonly pendingCalls = new WeakMap<RequestRecord, { key: string; name: string | undefined }>();
  private readonly pendingTasks = new WeakMap<RequestRecord, { method: string; taskKey: string }>();
  /** Calls answered with a kept handle. */
  repeated = 0;

  constructor(private readonly now: () => number = Date.now) {
    this.handles = new BoundedMap(MAX_HANDLES, MAX_RETENTION_MS, now);
    this.byTask = new BoundedMap(MAX_HANDLES, MAX_RETENTION_MS, now);
  }

  /** The handle to answer a keyed call with, or undefined: forward it. */
  repeatFor(
    scope: string,
    session: string | undefined,
    key: string,
    name: string | undefined,
  ): { taskId: string; resultText: string } | undefined {
    const handle = this.handles.get(handleKey(scope, session, key));
    if (handle === undefined || handle.name !== name) return undefined;
    if (handle.expiresAt <= this.now()) {
      this.drop(handleKey(scope, session, key));
      return undefined;
    }
    this.repeated++;
    return handle;
  }

  get size(): number {
    return this.handles.size;
  }

  /** The observer's listener that learns handles from answers. */
  readonly listener: WireListener = {
    // Answers are terminals: no event object for any other SSE event.
    eventsWanted: 'deciding',
    onRequest: (request) => this.requested(request),
    onEvent: (event) => this.answered(event),
  };

  private requested(request: WireRequest): void {
    // One message, one record: a batch is not read (its answers are forwarded as they come).
    if (request.messages.length !== 1 || request.requests.length !== 1) return;
    const message = request.messages[0]!;
    const record = request.requests[0]!;
    const scope = request.clientScope ?? '';
    const call = taskCallOf(message);
    if (call?.key !== undefined) {
      this.pendingCalls.set(record, { key: handleKey(scope, request.sessionId, call.key), name: call.name });
      return;
    }
    const task = readTaskRequest(message);
    if (task !== undefined)
      this.pendingTasks.set(record, { method: task.method, taskKey: handleKey(scope, request.sessionId, task.taskId) });
  }

  private answered(event: WireEvent): void {
    for (const terminal of event.terminals) {
      const message = event.messages[terminal.messageIndex];
      if (message === undefined) continue;
      const call = this.pendingCalls.get(terminal.request);
      if (call !== undefined) {
        this.pendingCalls.delete(terminal.request);
        this.created(call.key, call.name, message);
        continue;
      }
      const task = this.pendingTasks.get(terminal.request);
      if (task !== undefined) {
        this.pendingTasks.delete(terminal.request);
        if (ends(task.method, message)) {
          const key = this.byTask.get(task.taskKey);
          if (key !== undefined) this.drop(key);
        }
      }
    }
  }

  private created(key: string, name: string | undefined, message: JsonRpcMessage): void {
    const handle = readTaskHandle(message);
    if (handle === undefined) return;
    const scopeAndSession = key.slice(0, key.lastIndexOf('\n') + 1);
    const taskKey = `${scopeAndSession}${handle.taskId}`;
    const ttl = typeof handle.ttlMs === 'number' ? Math.min(handle.ttlMs, MAX_RETENTION_MS) : MAX_RETENTION_MS;
    const previous = this.handles.get(key);
    if (previous !== undefined) this.byTask.delete(previous.taskKey);
    this.handles.set(key, {
      taskId: handle.taskId,
      name,
      resultText: handle.resultText,
      expiresAt: this.now() + ttl,
      taskKey,
    });
    this.byTask.set(taskKey, key);
  }

  private drop(key: string): void {
    const handle = this.handles.get(key);
    if (handle !== undefined) this.byTask.delete(handle.taskKey);
    this.handles.delete(key);
  }
}

/** (client scope, session, key or task id): one client's, never another's. */
function handleKey(scope: string, session: string | undefined, last: string): string {
  return `${scope}\n${session ?? ''}\n${last}`;
}

/**
 * Whether an answer to a `tasks/*` request ends the task's life as a handle: its outcome was written
 * (a 2025-11-25 `tasks/result` answer, result or error; a 2026-07-28 `tasks/get` with the outcome inline),
 * it is cancelled, or the server said it is gone (-32602 to a request naming it).
 */
function ends(method: string, message: JsonRpcMessage): boolean {
  const error = (message as { error?: { code?: unknown } }).error;
  if (error !== undefined && error !== null) return method !== TaskMethod.CANCEL && error.code === TASK_NOT_FOUND_CODE;
  if (method === TaskMethod.RESULT) return true;
  const result = (message as { result?: unknown }).result as Record<string, unknown> | undefined;
  if (typeof result !== 'object' || result === null) return false;
  // A 2025-11-25 tasks/get answer is the Task flat; a 2026-07-28 one too, with the outcome inline.
  const task = (typeof result[TaskField.TASK] === 'object' ? result[TaskField.TASK] : result) as Record<
    string,
    unknown
  >;
  const status = task[TaskField.STATUS];
  if (status === TaskStatus.CANCELLED) return true;
  return (
    method === TaskMethod.GET &&
    typeof status === 'string' &&
    OUTCOME_TASK_STATUSES.includes(status) &&
    (result[TaskField.RESULT] !== undefined || result[TaskField.ERROR] !== undefined)
  );
}
