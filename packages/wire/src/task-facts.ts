import {
  CAPABILITY_EXTENSIONS,
  EXTENSION_TASKS,
  META_CLIENT_CAPABILITIES,
  META_RELATED_TASK,
  METHOD_SUBSCRIPTIONS_LISTEN,
  NOTIFICATION_TASKS,
  NOTIFICATION_TASK_STATUS,
  OUTCOME_TASK_STATUSES,
  RESULT_TYPE_TASK,
  TASK_GONE_METHODS,
  TASK_ID_METHODS,
  TASK_METHODS,
  TASK_NOT_FOUND_CODE,
  TASK_STATUSES,
  TaskField,
  TaskGone,
  TaskMethod,
  TaskShape,
} from '@resumewatch/semconv';
import type { JsonRpcMessage, JsonRpcRequest } from './jsonrpc.js';
import { MAX_KEPT_CHARS } from './kept-text.js';

/**
 * What a message shows of one MCP task, in either shape (2025-11-25's augmented tasks, the 2026-07-28
 * extension; see @resumewatch/semconv `tasks.ts`). Read from a message already parsed: a few member
 * look-ups, never a walk of the tree, and only fields of bounded size are kept (a task id over 256
 * characters is not kept, a status outside the protocol's five is not one).
 */
export interface TaskFacts {
  /** The task id the message names; undefined when absent or longer than 256 characters. */
  readonly taskId: string | undefined;
  /** One of the protocol's statuses, when the message says one. */
  readonly status: string | undefined;
  readonly shape: TaskShape | undefined;
  /** The announced ttl, whole milliseconds; undefined when null (unlimited) or not said. */
  readonly ttlMs: number | undefined;
  /** The announced poll interval, whole milliseconds; undefined when not said. */
  readonly pollIntervalMs: number | undefined;
  /**
   * The answer carries the task's outcome: a `tasks/result` answer (its result, or the task's error), or
   * a 2026-07-28 `tasks/get` answer whose status is completed or failed (the outcome inline). A 2025
   * `tasks/get` that says completed does not.
   */
  readonly outcomeDelivered: boolean;
  /** A -32602 answer to a request of TASK_GONE_METHODS: the server no longer serves the task. */
  readonly gone: TaskGone | undefined;
}

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Characters of an error message looked at for the word "expired": a message is the server's, of any length. */
const MAX_MESSAGE_CHARS = 256;
const EXPIRED = /expired/i;

const TASK_ID_METHOD_SET: ReadonlySet<string> = new Set(TASK_ID_METHODS);
const GONE_METHOD_SET: ReadonlySet<string> = new Set(TASK_GONE_METHODS);
const STATUS_SET: ReadonlySet<string> = new Set(TASK_STATUSES);
const OUTCOME_SET: ReadonlySet<string> = new Set(OUTCOME_TASK_STATUSES);

/** A method whose `params.taskId` names one task (`tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`). */
export function isTaskIdMethod(method: string): boolean {
  return TASK_ID_METHOD_SET.has(method);
}

const TASK_REQUEST_METHODS: ReadonlySet<string> = new Set([...TASK_METHODS, METHOD_SUBSCRIPTIONS_LISTEN]);

/** A method of tasks (`tasks/*`), or 2026-07-28's `subscriptions/listen`: status notifications may follow it. */
export function isTaskRequestMethod(method: string): boolean {
  return TASK_REQUEST_METHODS.has(method);
}

/** A task id as kept: a string of at most 256 characters, else none. */
function taskIdOf(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_KEPT_CHARS ? value : undefined;
}

/** A duration the server announced, whole milliseconds: a finite number at least 0, else none (null: unlimited). */
function millisOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
}

function statusOf(value: unknown): string | undefined {
  return typeof value === 'string' && STATUS_SET.has(value) ? value : undefined;
}

/**
 * The request asks for a task: 2025-11-25's `params.task` (an object), or the 2026-07-28 extension declared
 * in the request's per-request client capabilities (`_meta[META_CLIENT_CAPABILITIES].extensions`).
 */
export function taskRequested(request: JsonRpcRequest): boolean {
  const params = request.params;
  // A request of tasks/* concerns a task; it does not ask for one (SDK 1.x sends params.task on them too).
  if (!isObject(params) || TASK_REQUEST_METHODS.has(request.method)) return false;
  if (isObject(params[TaskField.TASK])) return true;
  const meta = params._meta;
  if (!isObject(meta)) return false;
  const capabilities = meta[META_CLIENT_CAPABILITIES];
  if (!isObject(capabilities)) return false;
  const extensions = capabilities[CAPABILITY_EXTENSIONS];
  return isObject(extensions) && extensions[EXTENSION_TASKS] !== undefined;
}

/** The task id a request of TASK_ID_METHODS names (`params.taskId`), as sent; undefined for any other request. */
export function requestTaskId(request: JsonRpcRequest): string | undefined {
  if (!TASK_ID_METHOD_SET.has(request.method)) return undefined;
  const id = request.params?.[TaskField.TASK_ID];
  return typeof id === 'string' ? id : undefined;
}

/** The facts of a Task object (flat), in the given shape's field names. */
function factsOfTask(task: Obj, shape: TaskShape, outcomeDelivered: boolean): TaskFacts {
  const extension = shape === TaskShape.EXTENSION;
  return {
    taskId: taskIdOf(task[TaskField.TASK_ID]),
    status: statusOf(task[TaskField.STATUS]),
    shape,
    ttlMs: millisOf(task[extension ? TaskField.TTL_MS : TaskField.TTL]),
    pollIntervalMs: millisOf(task[extension ? TaskField.POLL_INTERVAL_MS : TaskField.POLL_INTERVAL]),
    outcomeDelivered,
    gone: undefined,
  };
}

/** A flat Task's shape by its field names: the extension's `resultType` or `ttlMs`, else 2025-11-25's. */
function flatShape(task: Obj): TaskShape {
  return TaskField.RESULT_TYPE in task || TaskField.TTL_MS in task ? TaskShape.EXTENSION : TaskShape.AUGMENTED;
}

/**
 * The task an error names in its related-task meta (`error.data._meta[META_RELATED_TASK].taskId`), if any.
 * A JSON-RPC error has no `_meta` of its own: `data`, the sender's, is the one place the wire allows it.
 * 2025-11-25 requires the meta on every `tasks/result` answer, the task's own error among them; a "task
 * not found" is the server's answer about the request, not the task's outcome, and names no task so.
 */
function relatedTaskOfError(error: Obj): string | undefined {
  const data = error.data;
  if (!isObject(data) || !isObject(data._meta)) return undefined;
  const related = data._meta[META_RELATED_TASK];
  return isObject(related) ? taskIdOf(related[TaskField.TASK_ID]) : undefined;
}

const NO_FACTS: TaskFacts = {
  taskId: undefined,
  status: undefined,
  shape: undefined,
  ttlMs: undefined,
  pollIntervalMs: undefined,
  outcomeDelivered: false,
  gone: undefined,
};

/**
 * What the answer (a JSON-RPC response) to a request of `method` shows of a task, or undefined when it
 * shows none:
 * - any request answered with a handle: 2025-11-25 `result.task {...}`, or 2026-07-28 `result.resultType
 *   = "task"` with the Task flat;
 * - `tasks/get`, `tasks/cancel`: the Task flat (2026-07-28 `tasks/get`: with the outcome inline once
 *   completed or failed);
 * - `tasks/result`: the outcome (result or the task's error) delivered;
 * - -32602 to `tasks/get`, `tasks/result`, `tasks/update`: the task is gone (expired when the message says so),
 *   except a `tasks/result` error carrying the related-task meta (in `error.data._meta`): the task's own outcome.
 */
export function taskFactsOfAnswer(method: string, message: JsonRpcMessage): TaskFacts | undefined {
  if ('method' in message) return undefined;
  const error = (message as { error?: unknown }).error;
  if (error !== undefined) {
    if (!isObject(error)) return undefined;
    // A tasks/result error that names its task (the related-task meta) is the task's own outcome, whatever
    // its code: a task whose call failed with -32602 is not a task gone.
    if (method === TaskMethod.RESULT && relatedTaskOfError(error) !== undefined)
      return { ...NO_FACTS, shape: TaskShape.AUGMENTED, outcomeDelivered: true };
    if (error.code === TASK_NOT_FOUND_CODE && GONE_METHOD_SET.has(method)) {
      const text = typeof error.message === 'string' ? error.message.slice(0, MAX_MESSAGE_CHARS) : '';
      return { ...NO_FACTS, gone: EXPIRED.test(text) ? TaskGone.EXPIRED : TaskGone.NOT_FOUND };
    }
    // Any other error of tasks/result is the task's own (what the call would have answered).
    return method === TaskMethod.RESULT
      ? { ...NO_FACTS, shape: TaskShape.AUGMENTED, outcomeDelivered: true }
      : undefined;
  }
  const result = (message as { result?: unknown }).result;
  if (!isObject(result)) return undefined;
  switch (method) {
    case TaskMethod.RESULT:
      return { ...NO_FACTS, shape: TaskShape.AUGMENTED, outcomeDelivered: true };
    case TaskMethod.GET: {
      const shape = flatShape(result);
      const delivered =
        shape === TaskShape.EXTENSION &&
        OUTCOME_SET.has(result[TaskField.STATUS] as string) &&
        (result[TaskField.RESULT] !== undefined || result[TaskField.ERROR] !== undefined);
      return factsOfTask(result, shape, delivered);
    }
    case TaskMethod.CANCEL:
    case TaskMethod.UPDATE:
      // 2025-11-25 answers tasks/cancel with the Task; 2026-07-28 acknowledges (nothing to read).
      return result[TaskField.TASK_ID] === undefined ? undefined : factsOfTask(result, flatShape(result), false);
    case TaskMethod.LIST:
      return undefined;
  }
  if (result[TaskField.RESULT_TYPE] === RESULT_TYPE_TASK) return factsOfTask(result, TaskShape.EXTENSION, false);
  const task = result[TaskField.TASK];
  return isObject(task) ? factsOfTask(task, TaskShape.AUGMENTED, false) : undefined;
}

/** A status notification's method: 2025-11-25's `notifications/tasks/status`, the extension's `notifications/tasks`. */
export function isTaskNotification(message: JsonRpcMessage): boolean {
  if (!('method' in message) || 'id' in message) return false;
  return message.method === NOTIFICATION_TASK_STATUS || message.method === NOTIFICATION_TASKS;
}

/** What a status notification (`params` = the Task) shows, or undefined when the message is none or names no task. */
export function taskFactsOfNotification(message: JsonRpcMessage): TaskFacts | undefined {
  if (!isTaskNotification(message)) return undefined;
  const params = (message as { params?: unknown }).params;
  if (!isObject(params)) return undefined;
  const shape =
    (message as { method: string }).method === NOTIFICATION_TASKS ? TaskShape.EXTENSION : TaskShape.AUGMENTED;
  const facts = factsOfTask(params, shape, false);
  return facts.taskId === undefined ? undefined : facts;
}
