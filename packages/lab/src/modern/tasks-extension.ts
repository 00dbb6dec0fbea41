// The 2026-07-28 task extension, `io.modelcontextprotocol/tasks` (SEP-2663), on the v2 lab server.
//
// No npm package implements this shape yet (the extension SDK is an open pull request), so this is
// written from the spec text, read in the mirrors of the specification repositories:
// modelcontextprotocol/ext-tasks `specification/draft/tasks.md` and `schema/draft/schema.ts` (field
// names `ttlMs`, `pollIntervalMs`), and modelcontextprotocol/modelcontextprotocol
// `seps/2663-tasks-extension.md`. What it does:
// - a `tools/call` of `charge_task` whose request declares the extension in its per-request client
//   capabilities (`_meta["io.modelcontextprotocol/clientCapabilities"].extensions`) is answered with a
//   task handle (`resultType: "task"`, the Task's fields flat), created before the answer is written
//   (the spec: not until a `tasks/get` for it would resolve). Without the declaration the call falls
//   through to the SDK, whose `charge_task` answers the plain result (a server MUST NOT return a task
//   to a client that did not declare the extension);
// - `tasks/get` answers `resultType: "complete"` with the status and, inline, the `result` (completed),
//   the `error` (failed) or the pending `inputRequests` (input_required);
// - `tasks/update` takes `inputResponses` (an acknowledgement); `tasks/cancel` is an acknowledgement;
// - an unknown task is -32602 "Failed to retrieve task: Task not found"; a task past `createdAt + ttlMs`
//   is purged, and a request for it is -32602 "Failed to retrieve task: Task has expired" while its id is
//   remembered (bounded), "not found" after;
// - `Mcp-Name` must carry `params.taskId` on `tasks/get|update|cancel` (the spec's "Streamable HTTP:
//   Routing Headers": the client MUST set it); a request without it is refused with HTTP 400 and -32020,
//   as the v2 SDK's own check of the header answers (`validateStandardRequestHeaders`, server/dist/src-*.mjs).
// The v2 SDK 2.4 knows the extension's method names (for that header check) but creates and serves no task.
// Status reaches the client by polling, the extension's default ("Polling is the default"; servers are
// not required to send `notifications/tasks`): the lab's server sends none, and offers no `subscriptions/listen`.
import { randomUUID } from 'node:crypto';
import { BoundedMap, RecentList } from '@resumewatch/bounded';
import {
  EXTENSION_TASKS,
  RESULT_TYPE_TASK,
  TASK_NOT_FOUND_CODE,
  TaskField,
  TaskMethod,
  TaskStatus,
  TERMINAL_TASK_STATUSES,
} from '@resumewatch/semconv';
import type { SideEffectLedger } from '../side-effects.js';

/** The tool the extension answers with a task (the SDK serves it plainly to clients without the extension). */
export const EXTENSION_TASK_TOOL = 'charge_task';

/** The per-request client capabilities `_meta` key of 2026-07-28 (not yet in @resumewatch/semconv). */
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
/** The routing header of 2026-07-28 (the tool's name on a call, the task id on `tasks/*`). */
export const HEADER_MCP_NAME = 'mcp-name';
/** `resultType` of every answer that is not a task handle. */
const RESULT_TYPE_COMPLETE = 'complete';
/** The v2 SDK's `HeaderMismatch` (SEP-2243), which its own header check answers with HTTP 400. */
const HEADER_MISMATCH = -32020;
const BODY_LIMIT = 1024 * 1024;

export interface ExtensionTasksOptions {
  /** The ttl announced (`ttlMs`), ms; the task is purged at `createdAt + ttlMs`. Null: unlimited. Default 60000. */
  ttlMs?: number | null;
  /** The poll interval announced (`pollIntervalMs`), ms. Default 500. */
  pollIntervalMs?: number;
  /** How long a task works (the call's `workMs` overrides it), ms. Default 300. */
  workMs?: number;
}

/** One request the extension answered, as the server saw it. */
export interface ExtensionTaskRequest {
  at: number;
  method: string;
  taskId: string | undefined;
  /** The `Mcp-Name` header it carried. */
  mcpName: string | undefined;
  /** HTTP status, and the JSON-RPC error code if the answer was one. */
  status: number;
  errorCode: number | undefined;
  /** The request's `params._meta`. */
  meta: Record<string, unknown> | undefined;
}

interface ExtensionTask {
  taskId: string;
  key: string;
  status: string;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  workMs: number;
  fail: boolean;
  result?: unknown;
  error?: { code: number; message: string };
  inputRequests?: Record<string, unknown>;
  work?: NodeJS.Timeout;
}

type JsonRpcRequest = { id?: string | number; method?: unknown; params?: Record<string, unknown> };

/** The extension's tasks, shared by every request the v2 lab server answers. */
export class ExtensionTasks {
  readonly ttlMs: number | null;
  readonly pollIntervalMs: number;
  private readonly workMs: number;
  /** Live tasks; retained past the ttl only by the purge timers, which run at `createdAt + ttlMs`. */
  private readonly tasks = new BoundedMap<string, ExtensionTask>(10_000, 24 * 3_600_000);
  /** Ids of purged tasks, so that a late request hears "expired" rather than "not found". */
  private readonly expired = new BoundedMap<string, true>(10_000, 3_600_000);
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly createdLog = new RecentList<{ taskId: string; at: number; key: string }>(1000);
  private readonly requestLog = new RecentList<ExtensionTaskRequest>(5000);

  constructor(
    private readonly ledger: SideEffectLedger,
    options: ExtensionTasksOptions = {},
  ) {
    this.ttlMs = options.ttlMs === undefined ? 60_000 : options.ttlMs;
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
    this.workMs = options.workMs ?? 300;
  }

  /** Every task created, oldest first (bounded; purged ones included). */
  created(): Array<{ taskId: string; at: number; key: string }> {
    return this.createdLog.toArray();
  }

  /** The requests the extension answered, oldest first (bounded). */
  requests(): ExtensionTaskRequest[] {
    return this.requestLog.toArray();
  }

  /** A task's current status, undefined once purged. */
  status(taskId: string): string | undefined {
    return this.tasks.get(taskId)?.status;
  }

  /** Whether the task was purged at its ttl (and its id is still remembered). */
  wasExpired(taskId: string): boolean {
    return this.expired.has(taskId);
  }

  /**
   * Answers `request` if it is the extension's (a task-eligible call from a declaring client, or a
   * `tasks/*` request); undefined to let the SDK answer it.
   */
  async handle(request: Request): Promise<Response | undefined> {
    if (request.method !== 'POST') return undefined;
    // Bounded: a body of unknown or too great a length is not the extension's to read (the SDK answers it).
    const length = Number(request.headers.get('content-length') ?? Number.NaN);
    if (!(length <= BODY_LIMIT)) return undefined;
    let message: JsonRpcRequest;
    try {
      message = JSON.parse(await request.clone().text()) as JsonRpcRequest;
    } catch {
      return undefined;
    }
    if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
    const params = message.params ?? {};
    const mcpName = request.headers.get(HEADER_MCP_NAME) ?? undefined;
    const meta = isObject(params._meta) ? params._meta : undefined;
    const log = (status: number, errorCode: number | undefined, taskId: string | undefined) =>
      this.requestLog.push({
        at: Date.now(),
        method: String(message.method),
        taskId,
        mcpName,
        status,
        errorCode,
        meta,
      });

    if (message.method === 'tools/call') {
      if (params.name !== EXTENSION_TASK_TOOL || !declaresExtension(meta)) return undefined;
      const task = this.create(params);
      log(200, undefined, task.taskId);
      return this.answerCall(request, message, meta, task);
    }
    if (
      message.method !== TaskMethod.GET &&
      message.method !== TaskMethod.UPDATE &&
      message.method !== TaskMethod.CANCEL
    )
      return undefined;
    const taskId = typeof params[TaskField.TASK_ID] === 'string' ? (params[TaskField.TASK_ID] as string) : undefined;
    if (taskId === undefined || mcpName !== taskId) {
      log(400, HEADER_MISMATCH, taskId);
      return Response.json(
        rpcError(
          message.id,
          HEADER_MISMATCH,
          'Mcp-Name must carry params.taskId on tasks/get, tasks/update and tasks/cancel',
        ),
        { status: 400 },
      );
    }
    const task = this.tasks.get(taskId);
    if (!task) {
      const said = this.expired.has(taskId) ? 'Task has expired' : 'Task not found';
      log(200, TASK_NOT_FOUND_CODE, taskId);
      return Response.json(rpcError(message.id, TASK_NOT_FOUND_CODE, `Failed to retrieve task: ${said}`));
    }
    log(200, undefined, taskId);
    if (message.method === TaskMethod.GET) return Response.json(rpcResult(message.id, this.detailed(task)));
    if (message.method === TaskMethod.CANCEL) this.cancel(task);
    else this.update(task, params[TaskField.INPUT_RESPONSES]);
    return Response.json(rpcResult(message.id, { [TaskField.RESULT_TYPE]: RESULT_TYPE_COMPLETE }));
  }

  /** Cancels every timer and forgets every task. */
  close(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.tasks.clear();
  }

  private create(params: Record<string, unknown>): ExtensionTask {
    const args = isObject(params.arguments) ? params.arguments : {};
    const now = new Date().toISOString();
    const task: ExtensionTask = {
      taskId: randomUUID(),
      key: typeof args.key === 'string' ? args.key.slice(0, 200) : 'charge_task',
      status: TaskStatus.WORKING,
      createdAt: now,
      lastUpdatedAt: now,
      workMs: typeof args.workMs === 'number' && args.workMs >= 0 ? Math.min(args.workMs, 60_000) : this.workMs,
      fail: args.fail === true,
    };
    this.tasks.set(task.taskId, task);
    this.createdLog.push({ taskId: task.taskId, at: Date.now(), key: task.key });
    if (this.ttlMs !== null)
      this.later(this.ttlMs, () => {
        if (task.work) clearTimeout(task.work);
        this.tasks.delete(task.taskId);
        this.expired.set(task.taskId, true);
      });
    if (args.confirm === true) {
      task.status = TaskStatus.INPUT_REQUIRED;
      task.inputRequests = {
        confirm: {
          method: 'elicitation/create',
          params: {
            mode: 'form',
            message: `Charge ${task.key}?`,
            requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
          },
        },
      };
    } else this.startWork(task);
    return task;
  }

  private startWork(task: ExtensionTask): void {
    task.work = this.later(task.workMs, () => {
      if (task.status !== TaskStatus.WORKING) return;
      if (task.fail) {
        task.error = { code: -32603, message: `charging ${task.key} failed` };
        this.move(task, TaskStatus.FAILED);
        return;
      }
      const count = this.ledger.record(task.key);
      task.result = {
        [TaskField.RESULT_TYPE]: RESULT_TYPE_COMPLETE,
        content: [{ type: 'text', text: `charged ${task.key} (${count})` }],
        structuredContent: { count },
      };
      this.move(task, TaskStatus.COMPLETED);
    });
  }

  private cancel(task: ExtensionTask): void {
    if (TERMINAL_TASK_STATUSES.includes(task.status)) return;
    if (task.work) clearTimeout(task.work);
    task.statusMessage = 'The client cancelled the task.';
    this.move(task, TaskStatus.CANCELLED);
  }

  /** `inputResponses.confirm` accepted: the task works on; refused: it is cancelled. */
  private update(task: ExtensionTask, responses: unknown): void {
    if (task.status !== TaskStatus.INPUT_REQUIRED || !isObject(responses) || !isObject(responses.confirm)) return;
    const content = (responses.confirm as { content?: { confirm?: unknown } }).content;
    task.inputRequests = undefined;
    if (content?.confirm === true) {
      this.move(task, TaskStatus.WORKING);
      this.startWork(task);
    } else this.move(task, TaskStatus.CANCELLED);
  }

  private move(task: ExtensionTask, status: string): void {
    task.status = status;
    task.lastUpdatedAt = new Date().toISOString();
  }

  /** The Task, flat: what a handle and a `tasks/get` share. */
  private fields(task: ExtensionTask): Record<string, unknown> {
    return {
      [TaskField.TASK_ID]: task.taskId,
      [TaskField.STATUS]: task.status,
      ...(task.statusMessage !== undefined ? { [TaskField.STATUS_MESSAGE]: task.statusMessage } : {}),
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
      [TaskField.TTL_MS]: this.ttlMs,
      [TaskField.POLL_INTERVAL_MS]: this.pollIntervalMs,
    };
  }

  /** `tasks/get`: the status and, inline, the outcome or the pending input requests. */
  private detailed(task: ExtensionTask): Record<string, unknown> {
    return {
      [TaskField.RESULT_TYPE]: RESULT_TYPE_COMPLETE,
      ...this.fields(task),
      ...(task.status === TaskStatus.COMPLETED ? { [TaskField.RESULT]: task.result } : {}),
      ...(task.status === TaskStatus.FAILED ? { [TaskField.ERROR]: task.error } : {}),
      ...(task.status === TaskStatus.INPUT_REQUIRED ? { [TaskField.INPUT_REQUESTS]: task.inputRequests } : {}),
    };
  }

  /**
   * The handle, as an SSE stream when the client accepts one (a progress notification first when the
   * call carried a progress token, so that a proxy can break the stream before the handle), else JSON.
   */
  private answerCall(
    request: Request,
    message: JsonRpcRequest,
    meta: Record<string, unknown> | undefined,
    task: ExtensionTask,
  ): Response {
    const handle = rpcResult(message.id, { [TaskField.RESULT_TYPE]: RESULT_TYPE_TASK, ...this.fields(task) });
    if (!(request.headers.get('accept') ?? '').includes('text/event-stream')) return Response.json(handle);
    const token = meta?.progressToken;
    const events: unknown[] = [];
    if (typeof token === 'string' || typeof token === 'number')
      events.push({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 0 } });
    events.push(handle);
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const event of events)
          controller.enqueue(encoder.encode(`event: message\ndata: ${JSON.stringify(event)}\n\n`));
        controller.close();
      },
    });
    return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
  }

  private later(ms: number, run: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    timer.unref();
    this.timers.add(timer);
    return timer;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Whether a request's `_meta` declares the extension in its per-request client capabilities. */
function declaresExtension(meta: Record<string, unknown> | undefined): boolean {
  const capabilities = meta?.[META_CLIENT_CAPABILITIES];
  return isObject(capabilities) && isObject(capabilities.extensions) && EXTENSION_TASKS in capabilities.extensions;
}

function rpcResult(id: unknown, result: Record<string, unknown>) {
  return { jsonrpc: '2.0', id: id ?? null, result };
}

function rpcError(id: unknown, code: number, message: string) {
  return { jsonrpc: '2.0', id: id ?? null, error: { code, message } };
}
