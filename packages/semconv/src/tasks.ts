import type { ValuesOf } from './types.js';

// MCP tasks: durable work behind a handle. Two shapes, read from the specification repository:
// - 2025-11-25 (SEP-1686, experimental): the client asks for a task with `params.task {ttl}`; the server
//   answers `CreateTaskResult {task: {taskId, status, ttl, pollInterval, ...}}`; the client polls
//   `tasks/get` and fetches the outcome with `tasks/result` (blocking); `tasks/list`, `tasks/cancel`;
//   `notifications/tasks/status`; related messages carry `_meta[META_RELATED_TASK] = {taskId}`.
// - 2026-07-28, the extension `io.modelcontextprotocol/tasks` (SEP-2663, ext-tasks schema): the server
//   alone decides to answer with a task (`resultType: "task"`, the Task's fields flat in the result:
//   `taskId, status, ttlMs, pollIntervalMs`); `tasks/get` carries the status and, inline, the result, the
//   error or the pending `inputRequests`; `tasks/update` carries `inputResponses`; `tasks/cancel` is an
//   acknowledgement; no `tasks/result`, no `tasks/list`; `notifications/tasks` on `subscriptions/listen`;
//   the client sets `Mcp-Name` to the task id on every `tasks/*` request, so that a balancer can route it.
// In both, an unknown or purged task is JSON-RPC error -32602 ("Task not found", "Task has expired").

/** The methods of tasks: ordinary `mcp.method.name` values. */
export const TaskMethod = {
  GET: 'tasks/get',
  RESULT: 'tasks/result',
  LIST: 'tasks/list',
  CANCEL: 'tasks/cancel',
  UPDATE: 'tasks/update',
} as const;
export type TaskMethod = ValuesOf<typeof TaskMethod>;
export const TASK_METHODS: readonly string[] = Object.values(TaskMethod);

/** The methods whose `params.taskId` names one task (the request concerns it: `mcp.task.id`). */
export const TASK_ID_METHODS: readonly string[] = [
  TaskMethod.GET,
  TaskMethod.RESULT,
  TaskMethod.CANCEL,
  TaskMethod.UPDATE,
];

/** 2026-07-28: the request that opens a stream of pushed notifications (`notifications/tasks` among them). */
export const METHOD_SUBSCRIPTIONS_LISTEN = 'subscriptions/listen';

/** A status notification: 2025-11-25's, and the 2026-07-28 extension's. */
export const NOTIFICATION_TASK_STATUS = 'notifications/tasks/status';
export const NOTIFICATION_TASKS = 'notifications/tasks';

/** `_meta` key of 2025-11-25 that ties a message to a task: `{taskId}`. */
export const META_RELATED_TASK = 'io.modelcontextprotocol/related-task';
/** The 2026-07-28 extension's identifier (capabilities, per-request client capabilities). */
export const EXTENSION_TASKS = 'io.modelcontextprotocol/tasks';
/**
 * 2026-07-28: `_meta` key of a request carrying the client's capabilities for that request; a client that
 * accepts a task answer declares `EXTENSION_TASKS` in its `extensions`.
 */
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
/** 2026-07-28: the member of the per-request client capabilities that lists the extensions it supports. */
export const CAPABILITY_EXTENSIONS = 'extensions';

/** The fields of the Task object and of the requests that name one, in both shapes. */
export const TaskField = {
  /** 2025-11-25: `params.task` (the request asks for a task) and `result.task` (the handle). */
  TASK: 'task',
  TASK_ID: 'taskId',
  STATUS: 'status',
  STATUS_MESSAGE: 'statusMessage',
  /** 2026-07-28: `resultType: "task"` marks a handle; `"complete"` the standard result shape. */
  RESULT_TYPE: 'resultType',
  /** 2025-11-25, milliseconds, null for unlimited. */
  TTL: 'ttl',
  /** 2025-11-25, milliseconds. */
  POLL_INTERVAL: 'pollInterval',
  /** 2026-07-28 (ext-tasks schema), milliseconds, null for unlimited. */
  TTL_MS: 'ttlMs',
  /** 2026-07-28 (ext-tasks schema), milliseconds. */
  POLL_INTERVAL_MS: 'pollIntervalMs',
  /** 2026-07-28 `tasks/get`: the outcome inline. */
  RESULT: 'result',
  ERROR: 'error',
  INPUT_REQUESTS: 'inputRequests',
  INPUT_RESPONSES: 'inputResponses',
} as const;

/** `resultType` of a 2026-07-28 answer that is a task handle. */
export const RESULT_TYPE_TASK = 'task';

export const TaskStatus = {
  WORKING: 'working',
  INPUT_REQUIRED: 'input_required',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
} as const;
export type TaskStatus = ValuesOf<typeof TaskStatus>;
export const TASK_STATUSES: readonly string[] = Object.values(TaskStatus);
/** Once reached, the task's state does not change. */
export const TERMINAL_TASK_STATUSES: readonly string[] = [
  TaskStatus.COMPLETED,
  TaskStatus.FAILED,
  TaskStatus.CANCELLED,
];
/** Terminal with an outcome the client must still receive (a result or the task's error). */
export const OUTCOME_TASK_STATUSES: readonly string[] = [TaskStatus.COMPLETED, TaskStatus.FAILED];

/** Which shape a task has: `mcp.task.shape`. */
export const TaskShape = {
  /** 2025-11-25 (SEP-1686): the client asked for it (`params.task`). */
  AUGMENTED: 'augmented',
  /** 2026-07-28 extension (SEP-2663): the server decided (`resultType: "task"`). */
  EXTENSION: 'extension',
} as const;
export type TaskShape = ValuesOf<typeof TaskShape>;

/** What the server said of a task it no longer serves: `mcp.task.gone`. */
export const TaskGone = {
  /** The error's message says the task expired. */
  EXPIRED: 'expired',
  /** -32602 on a request naming the task, with no word of expiry: purged, or never held by this server. */
  NOT_FOUND: 'not_found',
} as const;
export type TaskGone = ValuesOf<typeof TaskGone>;

/** The JSON-RPC error code of an unknown or purged task (Invalid params), in both shapes. */
export const TASK_NOT_FOUND_CODE = -32602;

/** The methods whose -32602 answer means the task is gone (a -32602 to `tasks/cancel` of a finished task is a refusal). */
export const TASK_GONE_METHODS: readonly string[] = [TaskMethod.GET, TaskMethod.RESULT, TaskMethod.UPDATE];

/** Why a lost task result was reported: `reason` of a `lost_task_result` finding. */
export const TaskLostReason = {
  /** The client asked after the server purged the task (`mcp.task.gone`), its outcome never delivered. */
  GONE: 'gone',
  /** The task reached `completed` or `failed`, the client stopped asking, and the ttl the server announced passed. */
  TTL_PASSED: 'ttl_passed',
} as const;
export type TaskLostReason = ValuesOf<typeof TaskLostReason>;

/** Why a poll storm was reported: `reason` of a `task_poll_storm` finding. */
export const TaskStormReason = {
  /** Polled faster than the announced poll interval, sustained over the window. */
  FASTER_THAN_INTERVAL: 'faster_than_interval',
  /** Polled on after the server said the task is gone. */
  AFTER_GONE: 'after_gone',
} as const;
export type TaskStormReason = ValuesOf<typeof TaskStormReason>;
