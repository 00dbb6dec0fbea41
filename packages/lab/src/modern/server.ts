import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, isLegacyRequest } from '@modelcontextprotocol/server';
import type { McpServer } from '@modelcontextprotocol/server';
import { RecentList } from '@resumewatch/bounded';
import { HEADER_PROTOCOL_VERSION } from '@resumewatch/wire';
import { hostForUrl, reachableHost } from '../loopback.js';
import { LegacySessions } from './legacy-sessions.js';
import { ExtensionTasks } from './tasks-extension.js';
import type { ExtensionTasksOptions } from './tasks-extension.js';
import { ModernToolState, createModernToolServer } from './tools.js';
import type { ToolExecution } from './tools.js';

/**
 * Which protocol eras the v2 lab server speaks:
 * - `dual`: 2026-07-28 on the SDK's `createMcpHandler`, and the session era next to it on the SDK's
 *   sessionful transport, routed per request by the SDK's own `isLegacyRequest`;
 * - `modern-only`: 2026-07-28 only (`createMcpHandler` with `legacy: 'reject'`): a session-era
 *   initialize is refused with the unsupported-protocol-version error, a GET is answered 405.
 */
export type ModernServerEras = 'dual' | 'modern-only';

export interface ModernLabServerOptions {
  eras?: ModernServerEras;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** `retry:` of the session era's priming events. Default 100. */
  retryIntervalMs?: number;
  /** The `_meta` key `charge_once` reads a call's idempotency key from. Default none: it checks nothing. */
  idempotencyMetaKey?: string;
  /**
   * Applied to every server instance the factory builds (both eras), e.g. the instrumentation's
   * `instrumentMcpServer`, so that tests observe the server side. Default: none.
   */
  decorateServer?: (server: McpServer) => McpServer;
  /** The 2026-07-28 task extension's ttl, poll interval and work (`src/modern/tasks-extension.ts`). */
  tasks?: ExtensionTasksOptions;
}

/** One HTTP exchange the server answered. */
export interface ServerExchange {
  method: string;
  /** The `MCP-Protocol-Version` header the request carried. */
  protocolVersion: string | undefined;
  /** The leg that served it: the 2026-07-28 handler or the session-era sessions. */
  leg: 'modern' | 'legacy';
  status: number;
}

export interface ModernLabServer {
  /** http://127.0.0.1:P/mcp */
  readonly url: string;
  readonly eras: ModernServerEras;
  /** Switches the eras in place, as a deploy would: going `modern-only` drops every session. */
  setEras(eras: ModernServerEras): Promise<void>;
  sideEffectCount(key: string): number;
  /** What each tool execution did, oldest first (bounded). */
  executions(): ToolExecution[];
  /** The HTTP exchanges answered, oldest first (bounded). */
  exchanges(): ServerExchange[];
  /** The 2026-07-28 task extension's tasks and the requests it answered. */
  readonly extensionTasks: ExtensionTasks;
  close(): Promise<void>;
}

/** Starts the lab's server on the v2 SDK (`@modelcontextprotocol/server` 2.4, `@modelcontextprotocol/node`). */
export async function startModernLabServer(options: ModernLabServerOptions = {}): Promise<ModernLabServer> {
  const state = new ModernToolState(options.idempotencyMetaKey);
  const decorate = options.decorateServer ?? ((server: McpServer) => server);
  const factory = () => decorate(createModernToolServer(state));
  const modern = createMcpHandler(factory, { legacy: 'reject' });
  const legacy = new LegacySessions(factory, options.retryIntervalMs ?? 100);
  const exchanges = new RecentList<ServerExchange>(1000);
  const extensionTasks = new ExtensionTasks(state.ledger, options.tasks);
  let eras: ModernServerEras = options.eras ?? 'dual';

  const route = async (request: Request): Promise<{ leg: ServerExchange['leg']; response: Response }> => {
    if (eras === 'dual' && (await isLegacyRequest(request)))
      return { leg: 'legacy', response: await legacy.fetch(request) };
    // The task extension is of 2026-07-28 only; what it does not answer goes on to the SDK.
    const task = await extensionTasks.handle(request);
    return { leg: 'modern', response: task ?? (await modern.fetch(request)) };
  };
  const node = toNodeHandler({
    fetch: async (request) => {
      const { leg, response } = await route(request);
      exchanges.push({
        method: request.method,
        protocolVersion: request.headers.get(HEADER_PROTOCOL_VERSION) ?? undefined,
        leg,
        status: response.status,
      });
      return response;
    },
  });

  const sockets = new Set<Socket>();
  const http = createServer((req, res) => void node(req, res));
  http.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;

  return {
    url: `http://${hostForUrl(reachableHost(host))}:${port}/mcp`,
    get eras() {
      return eras;
    },
    async setEras(next) {
      eras = next;
      if (next === 'modern-only') await legacy.closeAll();
    },
    sideEffectCount: (key) => state.ledger.count(key),
    executions: () => state.executions.toArray(),
    exchanges: () => exchanges.toArray(),
    extensionTasks,
    async close() {
      extensionTasks.close();
      await legacy.closeAll();
      await modern.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
