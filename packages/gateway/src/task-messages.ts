// What the gateway reads of MCP tasks in the messages it already holds: a request body it forwards, an
// answer the observer parsed. A small local reader, by the semconv names (TaskField, RESULT_TYPE_TASK,
// META_IDEMPOTENCY_KEY): it may later move to the wire's shared reader of task facts.
import { parseJsonBody, type JsonRpcMessage } from '@resumewatch/wire';
import {
  EXTENSION_TASKS,
  MCP_METHOD_TOOLS_CALL,
  META_IDEMPOTENCY_KEY,
  RESULT_TYPE_TASK,
  TASK_METHODS,
  TaskField,
} from '@resumewatch/semconv';

/** Request bodies larger than this are not read for task facts (a task call is small): forwarded as they are. */
const MAX_READ_BYTES = 64 * 1024;
/** Longest idempotency key kept (the wire's bound on the key it records). */
const MAX_KEY_LENGTH = 256;
/** Longest task id kept: a longer one is not a handle the gateway repeats or names in a header. */
const MAX_TASK_ID_LENGTH = 256;

const EXTENSION_BYTES = Buffer.from(EXTENSION_TASKS);
const TASK_BYTES = Buffer.from(`"${TaskField.TASK}"`);

/** A `tools/call` that may be answered with a task, as its body says. */
export interface TaskCall {
  id: string | number;
  /** The tool's name. */
  name: string | undefined;
  /** `_meta[META_IDEMPOTENCY_KEY]`, when a string of at most 256 characters. */
  key: string | undefined;
}

type Params = Record<string, unknown> & { _meta?: Record<string, unknown> };

/**
 * The body's one `tools/call` that may be answered with a task: 2025-11-25's with `params.task`, or one
 * that declares the 2026-07-28 extension (`io.modelcontextprotocol/tasks`, in its per-request client
 * capabilities). Undefined for anything else: a batch, another method, a body over 64 KiB. A cheap byte
 * search first: most bodies never reach the parse.
 */
export function readTaskCall(body: Uint8Array): TaskCall | undefined {
  if (body.byteLength === 0 || body.byteLength > MAX_READ_BYTES) return undefined;
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (!bytes.includes(TASK_BYTES) && !bytes.includes(EXTENSION_BYTES)) return undefined;
  const messages = parseJsonBody(bytes.toString('utf8'));
  return messages.length === 1 ? taskCallOf(messages[0]!, declaresExtension(messages[0]!)) : undefined;
}

/**
 * `message` as a `tools/call` that may be answered with a task; `extension`: its body names the
 * 2026-07-28 extension (`io.modelcontextprotocol/tasks`, in its per-request client capabilities).
 */
export function taskCallOf(message: JsonRpcMessage, extension: boolean): TaskCall | undefined {
  const m = message as { id?: unknown; method?: unknown; params?: unknown };
  if (m.method !== MCP_METHOD_TOOLS_CALL) return undefined;
  if (typeof m.id !== 'string' && typeof m.id !== 'number') return undefined;
  const params = (isObject(m.params) ? m.params : {}) as Params;
  // 2025-11-25: the client asked for a task. 2026-07-28: the server alone decides, so a call that
  // declares the extension is one that may be answered with a task.
  if (!isObject(params[TaskField.TASK]) && !extension) return undefined;
  const key = isObject(params._meta) ? params._meta[META_IDEMPOTENCY_KEY] : undefined;
  return {
    id: m.id,
    name: typeof params.name === 'string' ? params.name : undefined,
    key: typeof key === 'string' && key.length > 0 && key.length <= MAX_KEY_LENGTH ? key : undefined,
  };
}

/** Whether a parsed request message names the 2026-07-28 extension anywhere in its `_meta` (bounded walk: two levels). */
export function declaresExtension(message: JsonRpcMessage): boolean {
  const params = (message as { params?: unknown }).params;
  const meta = isObject(params) ? params._meta : undefined;
  if (!isObject(meta)) return false;
  for (const value of Object.values(meta)) {
    if (!isObject(value)) continue;
    const extensions = value.extensions;
    if (
      isObject(extensions)
        ? EXTENSION_TASKS in extensions
        : Array.isArray(extensions) && extensions.includes(EXTENSION_TASKS)
    )
      return true;
  }
  return false;
}

/** A task the server's answer created, as the gateway keeps it. */
export interface TaskHandle {
  taskId: string;
  /** The announced ttl in ms; null: unlimited; undefined: not said. */
  ttlMs: number | null | undefined;
  /** The answer's `result`, as JSON text: what a repeated call is answered with. */
  resultText: string;
}

/** Largest creation answer kept to repeat (a handle is a few hundred bytes). */
const MAX_RESULT_BYTES = 16 * 1024;

/**
 * The task a response created: 2025-11-25 `result.task.taskId` (ttl `result.task.ttl`), 2026-07-28
 * `result.resultType === "task"` with `result.taskId` (ttl `result.ttlMs`). Undefined for any other
 * answer, or one too large to keep.
 */
export function readTaskHandle(message: JsonRpcMessage): TaskHandle | undefined {
  const result = (message as { result?: unknown }).result;
  if (!isObject(result)) return undefined;
  let task: Record<string, unknown>;
  let ttl: unknown;
  if (result[TaskField.RESULT_TYPE] === RESULT_TYPE_TASK) {
    task = result;
    ttl = result[TaskField.TTL_MS];
  } else if (isObject(result[TaskField.TASK])) {
    task = result[TaskField.TASK] as Record<string, unknown>;
    ttl = task[TaskField.TTL];
  } else return undefined;
  const taskId = task[TaskField.TASK_ID];
  if (typeof taskId !== 'string' || taskId.length === 0 || taskId.length > MAX_TASK_ID_LENGTH) return undefined;
  const resultText = JSON.stringify(result);
  if (resultText.length > MAX_RESULT_BYTES) return undefined;
  return {
    taskId,
    ttlMs: ttl === null ? null : typeof ttl === 'number' && ttl >= 0 ? ttl : undefined,
    resultText,
  };
}

/** The task a `tasks/*` request names (`params.taskId`), with its method. */
export function readTaskRequest(message: JsonRpcMessage): { method: string; taskId: string } | undefined {
  const m = message as { method?: unknown; params?: unknown };
  if (typeof m.method !== 'string' || !TASK_METHODS.includes(m.method) || !isObject(m.params)) return undefined;
  const taskId = m.params[TaskField.TASK_ID];
  return typeof taskId === 'string' && taskId.length <= MAX_TASK_ID_LENGTH ? { method: m.method, taskId } : undefined;
}

/** The task id a JSON response body's one answer created, for the routing header; undefined otherwise. */
export function createdTaskId(body: Buffer): string | undefined {
  const messages = parseJsonBody(body.toString('utf8'));
  return messages.length === 1 ? readTaskHandle(messages[0]!)?.taskId : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
