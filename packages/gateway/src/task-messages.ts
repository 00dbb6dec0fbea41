// What the gateway needs of MCP tasks in the messages it already holds (a request body it forwards, an
// answer the observer parsed), on top of the wire's one reader of task facts (`wire/src/task-facts.ts`:
// whether a call asks for a task, the task a request names, what an answer shows): the idempotency key
// of a call and the creation answer's text to repeat.
import {
  parseJsonBody,
  requestTaskId,
  taskFactsOfAnswer,
  taskRequested,
  type JsonRpcMessage,
  type JsonRpcRequest,
} from '@resumewatch/wire';
import { EXTENSION_TASKS, MCP_METHOD_TOOLS_CALL, META_IDEMPOTENCY_KEY, TaskField } from '@resumewatch/semconv';

/** Request bodies larger than this are not read for task facts (a task call is small): forwarded as they are. */
const MAX_READ_BYTES = 64 * 1024;
/** Longest idempotency key kept (the wire's bound on the key it records). */
const MAX_KEY_LENGTH = 256;

const EXTENSION_BYTES = Buffer.from(EXTENSION_TASKS);
const TASK_BYTES = Buffer.from(`"${TaskField.TASK}"`);

/** A `tools/call` that may be answered with a task, as its body says. */
export interface TaskCall {
  id: string | number;
  /** The tool's name. */
  name: string | undefined;
  /** `_meta[META_IDEMPOTENCY_KEY]`, when a string of at most 256 characters. */
  key: string | undefined;
  /**
   * 2025-11-25's shape: the client asked for the task (`params.task`). In that era a disconnection is no
   * cancellation (the server runs on), so the gateway may read the answer on after its client left.
   */
  augmented: boolean;
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
  return messages.length === 1 ? taskCallOf(messages[0]!) : undefined;
}

/**
 * `message` as a `tools/call` that may be answered with a task: 2025-11-25's client asked for one; 2026-07-28's
 * server alone decides, so a call that declares the extension is one that may be answered with a task
 * (both read by the wire's `taskRequested`).
 */
export function taskCallOf(message: JsonRpcMessage): TaskCall | undefined {
  const m = message as { id?: unknown; method?: unknown; params?: unknown };
  if (m.method !== MCP_METHOD_TOOLS_CALL) return undefined;
  if (typeof m.id !== 'string' && typeof m.id !== 'number') return undefined;
  if (!taskRequested(message as JsonRpcRequest)) return undefined;
  const params = (isObject(m.params) ? m.params : {}) as Params;
  const key = isObject(params._meta) ? params._meta[META_IDEMPOTENCY_KEY] : undefined;
  return {
    id: m.id,
    name: typeof params.name === 'string' ? params.name : undefined,
    key: typeof key === 'string' && key.length > 0 && key.length <= MAX_KEY_LENGTH ? key : undefined,
    augmented: isObject(params[TaskField.TASK]),
  };
}

/** A task the server's answer created, as the gateway keeps it. */
export interface TaskHandle {
  taskId: string;
  /** The announced ttl in ms; undefined when unlimited (null) or not said: the store's own bound then applies. */
  ttlMs: number | undefined;
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
  // The wire's reader: a handle is an answer to a call that names a task (ids over 256 characters are not kept).
  const facts = taskFactsOfAnswer(MCP_METHOD_TOOLS_CALL, message);
  if (facts?.taskId === undefined) return undefined;
  const resultText = JSON.stringify((message as { result?: unknown }).result);
  if (resultText.length > MAX_RESULT_BYTES) return undefined;
  // The wire keeps no ttl for null (unlimited) or unsaid: either way the handle lives to the store's own bound.
  return { taskId: facts.taskId, ttlMs: facts.ttlMs, resultText };
}

/** The task a `tasks/*` request names (`params.taskId`), with its method. */
export function readTaskRequest(message: JsonRpcMessage): { method: string; taskId: string } | undefined {
  if (!('method' in message) || !('id' in message)) return undefined;
  const taskId = requestTaskId(message as JsonRpcRequest);
  // A task id over 256 characters names no handle the gateway keeps.
  return taskId !== undefined && taskId.length <= MAX_KEY_LENGTH
    ? { method: (message as JsonRpcRequest).method, taskId }
    : undefined;
}

/** The task id a JSON response body's one answer created, for the routing header; undefined otherwise. */
export function createdTaskId(body: Buffer): string | undefined {
  const messages = parseJsonBody(body.toString('utf8'));
  return messages.length === 1 ? readTaskHandle(messages[0]!)?.taskId : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
