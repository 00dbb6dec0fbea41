import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';

export interface TaskServer {
  url: string;
  /** Tasks the server created, in order. */
  created: string[];
  close(): Promise<void>;
}

export interface TaskServerOptions {
  /** The announced poll interval, ms. */
  pollInterval?: number;
  /** How long a task works before it completes (or fails), ms. Default 60. */
  workMs?: number;
  /** Each session's McpServer, before it is connected (to instrument it). */
  onServer?: (server: McpServer) => void;
}

/**
 * An SDK 1.x server with task tools (`server.experimental.tasks.registerToolTask`, `InMemoryTaskStore`),
 * one McpServer per session over loopback HTTP. The task of `work` completes after `workMs`; `explode`'s fails.
 */
export async function startTaskServer(options: TaskServerOptions = {}): Promise<TaskServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const stores: InMemoryTaskStore[] = [];
  const created: string[] = [];

  function newSession(): StreamableHTTPServerTransport {
    const taskStore = new InMemoryTaskStore();
    stores.push(taskStore);
    const server = new McpServer(
      { name: 'task-server', version: '1.0.0' },
      {
        capabilities: { tasks: { requests: { tools: { call: {} } }, list: {}, cancel: {} } },
        taskStore,
        taskMessageQueue: new InMemoryTaskMessageQueue(),
      },
    );
    for (const [name, fails] of [
      ['work', false],
      ['explode', true],
    ] as const) {
      server.experimental.tasks.registerToolTask(
        name,
        { execution: { taskSupport: 'required' } },
        {
          async createTask(extra) {
            const ms = options.workMs ?? 60;
            const task = await extra.taskStore.createTask({
              ttl: extra.taskRequestedTtl ?? 60_000,
              pollInterval: options.pollInterval ?? 20,
            });
            created.push(task.taskId);
            void (async () => {
              await delay(ms);
              await extra.taskStore.storeTaskResult(
                task.taskId,
                fails ? 'failed' : 'completed',
                fails
                  ? { content: [{ type: 'text', text: 'exploded' }], isError: true }
                  : { content: [{ type: 'text', text: `worked ${ms} ms` }] },
              );
            })();
            return { task };
          },
          getTask: (extra) => extra.taskStore.getTask(extra.taskId) as never,
          getTaskResult: (extra) => extra.taskStore.getTaskResult(extra.taskId) as never,
        },
      );
    }
    options.onServer?.(server);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => void transports.set(id, transport),
    });
    void server.connect(transport);
    return transport;
  }

  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      const body = text ? (JSON.parse(text) as unknown) : undefined;
      const id = req.headers['mcp-session-id'];
      const transport = typeof id === 'string' ? transports.get(id) : newSession();
      if (!transport) {
        res.writeHead(404).end();
        return;
      }
      void transport.handleRequest(req, res, body);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    created,
    close: async () => {
      for (const store of stores) store.cleanup();
      for (const transport of transports.values()) await transport.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
