// The 2025-11-25 task shape (SEP-1686, experimental) on the real SDK 1.x (`@modelcontextprotocol/sdk`
// 1.32.2): `server.experimental.tasks.registerToolTask` over the SDK's `InMemoryTaskStore`, one stateful
// `StreamableHTTPServerTransport` per session, JSON responses (`enableJsonResponse`), so that a fault
// proxy can cut a `CreateTaskResult` before its client reads a byte of it (`afterBytes: 0`).
//
// Expiry: `InMemoryTaskStore` deletes a task `ttl` ms after its creation, and again `ttl` ms after it
// stored the result or reached a terminal status (it resets its timer: node_modules/@modelcontextprotocol/
// sdk/dist/esm/experimental/tasks/stores/in-memory.js, `createTask`, `storeTaskResult`, `updateTaskStatus`).
// So a short ttl is all the expiry scenarios need: no store variant. The SDK answers `tasks/get` and
// `tasks/result` for a deleted task with -32602 (`shared/protocol.js`, "Task not found").
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import type { RequestTaskStore } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Task } from '@modelcontextprotocol/sdk/types.js';
import { BoundedMap, RecentList } from '@resumewatch/bounded';
import { TaskField, TaskStatus } from '@resumewatch/semconv';
import { HEADER_SESSION_ID } from '@resumewatch/wire';
import { z } from 'zod';
import { header, readBody, sendJsonRpcError } from '../http-util.js';
import { hostForUrl } from '../loopback.js';
import { SideEffectLedger } from '../side-effects.js';

/** The task tool of the 2025-11-25 task server. */
export const TASK_TOOL = 'charge_task';

export interface TaskLabServerOptions {
  /** The ttl the server announces and keeps tasks for, ms (null: unlimited). Default 60000. */
  ttlMs?: number | null;
  /** The poll interval the server announces, ms. Default 500. */
  pollIntervalMs?: number;
  /** How long a task works before it completes (its call's `workMs` overrides it), ms. Default 300. */
  workMs?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Called with each session's server before it connects (e.g. to instrument its server side). */
  decorateServer?: (server: McpServer) => McpServer;
}

/** One JSON-RPC request the server received, as the server saw it. */
export interface TaskServerRequest {
  at: number;
  method: string;
  /** `params.taskId` of a `tasks/*` request. */
  taskId: string | undefined;
  /** A `tools/call` that asked for a task (`params.task`). */
  taskRequested: boolean;
  /** The `_meta` of the request's params (a re-issue's idempotency key is read here). */
  meta: Record<string, unknown> | undefined;
}

export interface TaskLabServer {
  /** http://127.0.0.1:P/mcp */
  readonly url: string;
  readonly ttlMs: number | null;
  readonly pollIntervalMs: number;
  /** Every task the store still holds (the SDK's `getAllTasks`). */
  tasks(): Task[];
  /** Every task the tool created, with the time the store got it, oldest first (bounded; purged ones included). */
  created(): Array<{ taskId: string; at: number; key: string }>;
  /** The JSON-RPC requests received, oldest first (bounded). */
  requests(): TaskServerRequest[];
  sideEffectCount(key: string): number;
  close(): Promise<void>;
}

const BODY_LIMIT = 1024 * 1024;

/**
 * Starts the SDK 1.x task server. Its one tool, `charge_task {key, workMs?}` (`taskSupport: required`),
 * creates a task, works `workMs`, charges the ledger under `key` and stores its result; a task cancelled
 * meanwhile (`tasks/cancel`) keeps its status and charges nothing.
 */
export async function startTaskLabServer(options: TaskLabServerOptions = {}): Promise<TaskLabServer> {
  const ttlMs = options.ttlMs === undefined ? 60_000 : options.ttlMs;
  const pollIntervalMs = options.pollIntervalMs ?? 500;
  const defaultWorkMs = options.workMs ?? 300;
  const store = new InMemoryTaskStore();
  const ledger = new SideEffectLedger();
  const created = new RecentList<{ taskId: string; at: number; key: string }>(1000);
  const requests = new RecentList<TaskServerRequest>(5000);
  const sessions = new BoundedMap<string, StreamableHTTPServerTransport>(1000, 1_800_000);

  const buildServer = (): McpServer => {
    const server = new McpServer(
      { name: 'resumewatch-lab-tasks', version: '0.1.0' },
      { capabilities: { tasks: { requests: { tools: { call: {} } }, list: {}, cancel: {} } }, taskStore: store },
    );
    server.experimental.tasks.registerToolTask(
      TASK_TOOL,
      {
        description: 'Charges the ledger under key after workMs, as a task.',
        inputSchema: { key: z.string().min(1).max(200), workMs: z.number().int().min(0).max(60_000).optional() },
      },
      {
        async createTask({ key, workMs }, extra) {
          const task = await extra.taskStore.createTask({ ttl: ttlMs, pollInterval: pollIntervalMs });
          created.push({ taskId: task.taskId, at: Date.now(), key });
          setTimeout(() => void finish(extra.taskStore, task.taskId, key), workMs ?? defaultWorkMs).unref();
          return { task };
        },
        getTask: (_args, extra) => extra.taskStore.getTask(extra.taskId),
        getTaskResult: async (_args, extra) =>
          (await extra.taskStore.getTaskResult(extra.taskId)) as { content: Array<{ type: 'text'; text: string }> },
      },
    );
    return options.decorateServer ? options.decorateServer(server) : server;
  };

  /** The task's work ends: charged and completed, unless it was cancelled (or purged) meanwhile. */
  async function finish(taskStore: RequestTaskStore, taskId: string, key: string): Promise<void> {
    const task = await taskStore.getTask(taskId).catch(() => undefined);
    if (!task || task.status !== TaskStatus.WORKING) return;
    const count = ledger.record(key);
    // The SDK's request-scoped store also notifies the session; a session gone meanwhile is no failure here.
    await taskStore
      .storeTaskResult(taskId, TaskStatus.COMPLETED, {
        content: [{ type: 'text', text: `charged ${key} (${count})` }],
        structuredContent: { count },
      })
      .catch(() => undefined);
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const sessionId = header(req, HEADER_SESSION_ID);
    let body: unknown;
    if (req.method === 'POST') {
      try {
        body = JSON.parse(await readBody(req, BODY_LIMIT));
      } catch {
        sendJsonRpcError(res, 400, -32700, 'Parse error');
        return;
      }
      for (const message of Array.isArray(body) ? body : [body]) record(message);
    }
    if (sessionId !== undefined) {
      const transport = sessions.get(sessionId);
      if (!transport) {
        sendJsonRpcError(res, 404, -32001, 'Session not found');
        return;
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => void sessions.set(id, transport),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    await buildServer().connect(transport);
    await transport.handleRequest(req, res, body);
  };

  function record(message: unknown): void {
    if (message === null || typeof message !== 'object') return;
    const { method, params } = message as { method?: unknown; params?: Record<string, unknown> };
    if (typeof method !== 'string') return;
    const taskId = params?.[TaskField.TASK_ID];
    const meta = params?._meta;
    requests.push({
      at: Date.now(),
      method,
      taskId: typeof taskId === 'string' ? taskId : undefined,
      taskRequested: params?.[TaskField.TASK] !== undefined,
      meta: meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>) : undefined,
    });
  }

  const sockets = new Set<Socket>();
  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJsonRpcError(res, 500, -32603, 'Internal error');
      else res.destroy();
    });
  });
  http.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://${hostForUrl(host)}:${port}/mcp`,
    ttlMs,
    pollIntervalMs,
    tasks: () => store.getAllTasks(),
    created: () => created.toArray(),
    requests: () => requests.toArray(),
    sideEffectCount: (key) => ledger.count(key),
    async close() {
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map((transport) => transport.close().catch(() => undefined)));
      store.cleanup();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
