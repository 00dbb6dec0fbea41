// The lab server's lifecycle: it wires the parts (lab-server/*), listens, tracks connections so a
// restart can cut them, and closes.
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { LabControl } from './control-endpoint.js';
import { LiveSessions } from './lab-server/live-sessions.js';
import { CONTROL_PATH, MCP_PATH } from './lab-server/paths.js';
import { ReplayClosing } from './lab-server/replay-closing.js';
import { RequestLog } from './lab-server/request-log.js';
import { labRequestListener } from './lab-server/routing.js';
import type { LabServer, LabServerOptions } from './lab-server/types.js';
import { hostForUrl, isLoopbackAddress, reachableHost } from './loopback.js';
import { isLabStoreVariant } from './store-variants.js';

export { CONTROL_PATH, MCP_PATH } from './lab-server/paths.js';
export type {
  EvictReport,
  LabServer,
  LabServerOptions,
  LabServerState,
  ReplayLogEntry,
  RequestLogEntry,
  RestartReport,
} from './lab-server/types.js';

/**
 * Starts the lab MCP server: the SDK's `StreamableHTTPServerTransport` in stateful mode, one bounded
 * event store per session, the lab tools, and the loopback-only control endpoint.
 */
export async function startLabServer(options: LabServerOptions = {}): Promise<LabServer> {
  const host = options.host ?? '127.0.0.1';
  const defaultVariant = options.store ?? 'bounded';
  if (!isLabStoreVariant(defaultVariant)) throw new Error(`unknown store variant ${String(defaultVariant)}`);
  const replayClosing = new ReplayClosing();
  const sessions = new LiveSessions(options, replayClosing);
  const requestLog = new RequestLog();
  const sockets = new Set<Socket>();

  const control: LabControl = {
    restart: (keep) => sessions.restart(sockets, keep),
    evictCursor: (sessionId, eventId) => sessions.evictCursor(sessionId, eventId),
    state: () => ({ ...sessions.counts(), requests: requestLog.total, recentReplays: replayClosing.recent() }),
    requestLog: (sessionId) => requestLog.list(sessionId),
    sideEffectCount: (key) => sessions.ledger.count(key),
  };

  const httpServer = createServer(labRequestListener({ defaultVariant, sessions, replayClosing, requestLog, control }));
  httpServer.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(options.port ?? 0, host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const port = (httpServer.address() as AddressInfo).port;
  const local = `http://${hostForUrl(reachableHost(host))}:${port}`;
  sessions.selfUrl = `${local}${MCP_PATH}`;
  const loopbackBase = isLoopbackAddress(reachableHost(host)) ? local : `http://127.0.0.1:${port}`;

  return {
    url: sessions.selfUrl,
    controlUrl: `${loopbackBase}${CONTROL_PATH}`,
    host,
    port,
    restart: () => control.restart(),
    evictCursor: control.evictCursor,
    sideEffectCount: control.sideEffectCount,
    state: control.state,
    requestLog: control.requestLog,
    async close() {
      await sessions.closeAll();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
