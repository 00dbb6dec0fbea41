import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';

/** One JSON-RPC request the server received: its method, task id (tasks/*), `_meta`, and when it arrived. */
interface Received {
  readonly method: string;
  readonly taskId: string | undefined;
  readonly meta: Record<string, unknown> | undefined;
  readonly at: number;
}

/**
 * An MCP server built from SDK 1.32 parts only (McpServer with `taskStore: InMemoryTaskStore`, the
 * experimental `registerToolTask`, `StreamableHTTPServerTransport`) on node:http, port 0. Its one task
 * tool, `work`, creates a task (the client's requested ttl, `pollIntervalMs`) and completes it with a
 * text result after `workMs` (default at once), whatever its arguments. It records every JSON-RPC request it receives, with the
 * time it arrived (the server's own view: what the guard's spacing must show).
 */
export interface TaskServer {
  url: string;
  store: InMemoryTaskStore;
  received: Received[];
  /** Tasks the tool created. */
  created: number;
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startTaskServer(options: { pollIntervalMs: number; workMs?: number }): Promise<TaskServer> {
  const store = new InMemoryTaskStore();
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const state: TaskServer = { url: '', store, received: [], created: 0, close: async () => {} };

  function newServer(): McpServer {
    const server = new McpServer(
      { name: 'task-server', version: '1.0.0' },
      { capabilities: { tasks: { requests: { tools: { call: {} } } } }, taskStore: store },
    );
    server.experimental.tasks.registerToolTask(
      'work',
      { description: 'a task that completes after workMs' },
      {
        async createTask({ taskStore, taskRequestedTtl }) {
          const ms = options.workMs;
          const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: options.pollIntervalMs });
          state.created++;
          const done = () =>
            taskStore.storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: 'worked' }] });
          if (ms) setTimeout(() => void done().catch(() => {}), ms);
          else await done();
          return { task };
        },
        async getTask({ taskId, taskStore }) {
          return (await taskStore.getTask(taskId))!;
        },
        async getTaskResult({ taskId, taskStore }) {
          return (await taskStore.getTaskResult(taskId)) as never;
        },
      },
    );
    return server;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    const text = req.method === 'POST' ? await bodyOf(req) : '';
    const body: unknown = text ? JSON.parse(text) : undefined;
    for (const message of Array.isArray(body) ? body : body ? [body] : []) {
      const m = message as { method?: string; params?: { taskId?: string; _meta?: Record<string, unknown> } };
      if (typeof m.method === 'string')
        state.received.push({ method: m.method, taskId: m.params?.taskId, meta: m.params?._meta, at: Date.now() });
    }
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (transport === undefined) {
      if (sessionId !== undefined) {
        res.writeHead(404).end();
        return;
      }
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void transports.set(id, created),
      });
      await newServer().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  }

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  state.close = async () => {
    store.cleanup();
    for (const transport of transports.values()) await transport.close().catch(() => {});
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  return state;
}
