// What the guard reads of MCP tasks in the JSON-RPC messages the wire observer parsed, in both shapes
// (2025-11-25's augmented tasks, the 2026-07-28 extension). A small local reader: the wire package is
// growing a shared reader of task facts at the same time, and this may later move to it (the guard then
// reads the wire's facts instead); until then the two apply the same rules (goneOf). Reads only the fields it names, never walks a message.
import {
  META_RELATED_TASK,
  RESULT_TYPE_TASK,
  TASK_NOT_FOUND_CODE,
  TaskField,
  TaskGone,
  TaskMethod,
  TaskShape,
  TaskStatus,
} from '@resumewatch/semconv';
import type { JsonRpcMessage, JsonRpcRequest } from '@resumewatch/wire';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A duration the server announced: milliseconds, or null for "unlimited"; undefined when not said. */
function duration(value: unknown): number | null | undefined {
  if (value === null) return null;
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** What one answer said of a task. */
export interface TaskFacts {
  readonly taskId: string;
  readonly shape: TaskShape;
  readonly status: string | undefined;
  /** Milliseconds; null: unlimited; undefined: not said. */
  readonly ttlMs: number | null | undefined;
  readonly pollIntervalMs: number | undefined;
}

/** The Task fields of one shape, flat in `task` (a 2025 handle, a 2025 tasks/get answer, a 2026 answer). */
function factsOf(task: Record<string, unknown>, shape: TaskShape): TaskFacts | undefined {
  const taskId = task[TaskField.TASK_ID];
  if (typeof taskId !== 'string') return undefined;
  const status = task[TaskField.STATUS];
  const augmented = shape === TaskShape.AUGMENTED;
  return {
    taskId,
    shape,
    status: typeof status === 'string' ? status : undefined,
    ttlMs: duration(task[augmented ? TaskField.TTL : TaskField.TTL_MS]),
    pollIntervalMs: duration(task[augmented ? TaskField.POLL_INTERVAL : TaskField.POLL_INTERVAL_MS]) ?? undefined,
  };
}

/**
 * The task handle a call was answered with: 2025 `result.task {taskId, ...}`, or 2026 `result` with
 * `resultType: "task"` and the Task's fields flat. Undefined for any other result.
 */
export function taskHandleOf(result: unknown): TaskFacts | undefined {
  if (!isObject(result)) return undefined;
  if (result[TaskField.RESULT_TYPE] === RESULT_TYPE_TASK) return factsOf(result, TaskShape.EXTENSION);
  const task = result[TaskField.TASK];
  return isObject(task) ? factsOf(task, TaskShape.AUGMENTED) : undefined;
}

/** A `tasks/get` answer: the Task flat in the result (2026: the `pollIntervalMs`/`ttlMs` names, and `resultType`). */
export function polledTaskOf(result: unknown): TaskFacts | undefined {
  if (!isObject(result)) return undefined;
  const extension =
    TaskField.RESULT_TYPE in result || TaskField.POLL_INTERVAL_MS in result || TaskField.TTL_MS in result;
  return factsOf(result, extension ? TaskShape.EXTENSION : TaskShape.AUGMENTED);
}

/** A 2026 `tasks/get` answer carries the outcome inline once the task completed or failed. */
export function deliversOutcomeInline(facts: TaskFacts): boolean {
  return (
    facts.shape === TaskShape.EXTENSION && (facts.status === TaskStatus.COMPLETED || facts.status === TaskStatus.FAILED)
  );
}

/** The task a `tasks/*` request names (`params.taskId`). */
export function requestedTaskId(request: JsonRpcRequest): string | undefined {
  const taskId = request.params?.[TaskField.TASK_ID];
  return typeof taskId === 'string' ? taskId : undefined;
}

/** 2025-11-25: the call asks for a task (`params.task`, an object). */
export function asksForTask(request: JsonRpcRequest): boolean {
  return isObject(request.params?.[TaskField.TASK]);
}

/** The answer's result member, when it is a result. */
export function resultOf(message: JsonRpcMessage): unknown {
  return 'result' in message ? message.result : undefined;
}

/** The answer's error, when it is one: its code and message. */
export function errorOf(message: JsonRpcMessage): { code: unknown; message: unknown } | undefined {
  if (!('error' in message) || !isObject(message.error)) return undefined;
  return { code: message.error.code, message: message.error.message };
}

/**
 * Whether an error answer names its task in the related-task meta (`error.data._meta[META_RELATED_TASK]
 * .taskId`; a JSON-RPC error has no `_meta` of its own, `data` is the one place the wire allows it).
 * 2025-11-25 requires that meta on every `tasks/result` answer: such an error is the task's own outcome
 * (what its call would have answered), while the server's "task not found" names no task. The wire's
 * shared reader (taskFactsOfAnswer) applies the same rule.
 */
function errorNamesItsTask(message: JsonRpcMessage): boolean {
  if (!('error' in message) || !isObject(message.error)) return false;
  const data = message.error.data;
  if (!isObject(data) || !isObject(data._meta)) return false;
  const related = data._meta[META_RELATED_TASK];
  return isObject(related) && typeof related[TaskField.TASK_ID] === 'string';
}

/**
 * What a -32602 answer to a request naming a task says: the task expired, or is not found; undefined for
 * another answer, and for a `tasks/result` error that names its task (the task's own -32602, its outcome).
 */
export function goneOf(message: JsonRpcMessage, method: string): TaskGone | undefined {
  const error = errorOf(message);
  if (error === undefined || error.code !== TASK_NOT_FOUND_CODE) return undefined;
  if (method === TaskMethod.RESULT && errorNamesItsTask(message)) return undefined;
  const text = typeof error.message === 'string' ? error.message : '';
  return /expired/i.test(text) ? TaskGone.EXPIRED : TaskGone.NOT_FOUND;
}
