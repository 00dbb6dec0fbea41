import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { BoundedMap, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID } from '@resumewatch/wire';
import { handleControlRequest } from './control-endpoint.js';
import { BoundedEventStore } from './event-store.js';
import type { BoundedEventStoreOptions, EventStoreStats, EvictionReason, ReplayRecord } from './event-store.js';
import { BodyTooLargeError, header, readBody, sendJsonRpcError } from './http-util.js';
import { registerLabTools } from './lab-tools.js';
import { hostForUrl, isLoopbackAddress, reachableHost } from './loopback.js';
import { RecentList } from './recent-list.js';
import { restoreSession } from './session-restore.js';
import { SessionRegistry } from './session-registry.js';
import { SideEffectLedger } from './side-effects.js';
import { ReplayCloseGate } from './replay-close-gate.js';
import { ReplayAllStreamsEventStore } from './replay-all-streams-store.js';
import { labRequestContext } from './request-context.js';
import type { LabRequestContext } from './request-context.js';
import { RequestIdKeyedEventStore } from './request-keyed-store.js';
import { isLabStoreVariant } from './store-variants.js';
import type { LabStoreVariant } from './store-variants.js';

export const MCP_PATH = '/mcp';
export const CONTROL_PATH = '/control';
/** Header pair the lab sends to itself to re-initialize a known session after a restart. */
export const RESTORE_TOKEN_HEADER = 'x-resumewatch-lab-restore-token';
export const RESTORE_SESSION_HEADER = 'x-resumewatch-lab-restore-session';

const MAX_BODY_BYTES = 4 * 1024 * 1024;
const SERVER_INFO = { name: 'resumewatch-lab', version: '0.1.0' };

export interface LabServerOptions {
  /** Default 0 (an ephemeral port). */
  port?: number;
  /** Default 127.0.0.1. `0.0.0.0` serves MCP to other hosts; the control endpoint stays loopback-only. */
  host?: string;
  /** Options of each session's event store (of every variant). */
  eventStore?: Omit<BoundedEventStoreOptions, 'onReplay'>;
  /**
   * The event store of sessions created on `/mcp`. Default `bounded`. Every variant is also served
   * under `/mcp/<variant>` whatever this says (see `LAB_STORE_VARIANTS`).
   */
  store?: LabStoreVariant;
  /** `retry:` (ms) the SDK writes in priming events; the SDK client waits this long before resuming. Default 100. */
  retryIntervalMs?: number;
  /** Live sessions (transports) kept in this process. Default 1000. */
  maxLiveSessions?: number;
  /** Sessions remembered across restarts. Default 2000. */
  maxKnownSessions?: number;
  /** Idle retention of a session, ms. Default 1800000 (30 minutes). */
  sessionIdleTtlMs?: number;
  /**
   * Called with each session's event store when the session is created (again after a restart); the
   * SDK transport gets what it returns, e.g. the store instrumented. The lab's own cursor checks and
   * evictions keep using the store itself.
   */
  wrapEventStore?: (store: BoundedEventStore, sessionId: string) => EventStore;
  /** Called with each session's transport before the MCP server connects to it, e.g. to instrument it in place. */
  onTransport?: (transport: StreamableHTTPServerTransport, sessionId: string) => void;
}

export interface RequestLogEntry {
  at: number;
  method: string;
  path: string;
  sessionId: string | undefined;
  lastEventId: string | undefined;
  status: number;
  /** A request the lab sent itself to restore a session after a restart. */
  restore: boolean;
  /** False when the connection closed before the response was complete (a cut, a restart, an abort). */
  completed: boolean;
}

export interface ReplayLogEntry extends ReplayRecord {
  sessionId: string;
  at: number;
  /** Whether the lab ended the replayed response after the replay. */
  closed: boolean;
}

export interface RestartReport {
  generation: number;
  droppedSessions: number;
  droppedConnections: number;
}

export interface EvictReport {
  sessionId: string;
  eventId: string;
  evictedEvents: number;
}

export interface LabServerState {
  generation: number;
  restarts: number;
  liveSessions: number;
  knownSessions: number;
  requests: number;
  eventStore: Omit<EventStoreStats, 'epoch'>;
  recentReplays: ReplayLogEntry[];
}

export interface LabServer {
  /** The MCP endpoint, e.g. http://127.0.0.1:43210/mcp */
  url: string;
  /** The control endpoint base, always on loopback, e.g. http://127.0.0.1:43210/control */
  controlUrl: string;
  host: string;
  port: number;
  /** Simulates a restart: connections cut, buffers and transports lost, session ids still accepted. */
  restart(): Promise<RestartReport>;
  /** Evicts the stream a cursor belongs to from the session's buffer. Undefined if the session is unknown. */
  evictCursor(sessionId: string, eventId: string): EvictReport | undefined;
  sideEffectCount(key: string): number;
  state(): LabServerState;
  requestLog(sessionId?: string): RequestLogEntry[];
  close(): Promise<void>;
}

interface LiveSession {
  transport: StreamableHTTPServerTransport;
  server: Server;
  store: BoundedEventStore;
}

interface Generation {
  id: number;
  live: BoundedMap<string, LiveSession>;
  /** The one store of the `shared-by-request-id` variant, created on first use; lost on restart. */
  shared: RequestIdKeyedEventStore | undefined;
}

/** The JSON-RPC id (as a string) of the first request in a POST body. */
function firstRequestId(body: unknown): string | undefined {
  for (const message of Array.isArray(body) ? body : [body]) {
    if (message !== null && typeof message === 'object' && 'method' in message && 'id' in message) return String((message as { id: unknown }).id);
  }
  return undefined;
}

function emptyStats(): Omit<EventStoreStats, 'epoch'> {
  return { events: 0, streams: 0, stored: 0, replays: 0, evicted: { capacity: 0, ttl: 0, 'replay-limit': 0, explicit: 0 } };
}

function addStats(total: Omit<EventStoreStats, 'epoch'>, stats: EventStoreStats): void {
  total.events += stats.events;
  total.streams += stats.streams;
  total.stored += stats.stored;
  total.replays += stats.replays;
  for (const reason of Object.keys(total.evicted) as EvictionReason[]) total.evicted[reason] += stats.evicted[reason];
}

/**
 * Starts the lab MCP server: the SDK's `StreamableHTTPServerTransport` in stateful mode, one bounded
 * event store per session, the lab tools, and the loopback-only control endpoint.
 */
export async function startLabServer(options: LabServerOptions = {}): Promise<LabServer> {
  const host = options.host ?? '127.0.0.1';
  const retryInterval = options.retryIntervalMs ?? 100;
  const maxLive = options.maxLiveSessions ?? 1000;
  const idleTtl = options.sessionIdleTtlMs ?? 1_800_000;
  const registry = new SessionRegistry(options.maxKnownSessions ?? 2000, idleTtl);
  const ledger = new SideEffectLedger();
  const restoreToken = randomBytes(16).toString('hex');
  const requests = new RecentList<RequestLogEntry>(1000);
  const replays = new RecentList<ReplayLogEntry>(200);
  const gates = new BoundedMap<string, ReplayCloseGate>(10_000, 600_000);
  const restoring = new BoundedMap<string, Promise<void>>(1000, 60_000);
  const sockets = new Set<Socket>();
  const defaultVariant = options.store ?? 'bounded';
  if (!isLabStoreVariant(defaultVariant)) throw new Error(`unknown store variant ${String(defaultVariant)}`);
  let restarts = 0;
  let generation = newGeneration(1);
  let selfUrl = '';

  function newGeneration(id: number): Generation {
    return { id, live: new BoundedMap(maxLive, idleTtl, Date.now, (_id, live) => void live.server.close()), shared: undefined };
  }

  /** Ends a replayed response whose stream has nothing more to send; logs the replay. */
  function afterReplay(record: ReplayRecord, sessionId: string | undefined): void {
    const gate = sessionId === undefined ? undefined : gates.get(`${sessionId}\n${record.lastEventId}`);
    // A replay of a finished stream, or of a stream this buffer never had, has nothing more to send.
    const closed = gate !== undefined && (record.streamFinished || !record.cursorFound);
    if (closed) gate.endAfter(record.sent);
    replays.push({ ...record, sessionId: sessionId ?? '', at: Date.now(), closed });
  }

  function createStore(variant: LabStoreVariant, sessionOf: () => string | undefined, owner: Generation): BoundedEventStore {
    const onReplay = (record: ReplayRecord): void => afterReplay(record, sessionOf());
    switch (variant) {
      case 'bounded':
        return new BoundedEventStore({ ...options.eventStore, onReplay });
      case 'never-evict':
        return new BoundedEventStore({ ...options.eventStore, finishedStreamReplayLimit: 0, onReplay });
      case 'replay-all-streams':
        return new ReplayAllStreamsEventStore({ ...options.eventStore, onReplay });
      case 'shared-by-request-id':
        // One store for every session: the replaying session is the one whose request is running.
        owner.shared ??= new RequestIdKeyedEventStore({
          ...options.eventStore,
          onReplay: (record) => afterReplay(record, labRequestContext.getStore()?.sessionId),
        });
        return owner.shared;
    }
  }

  async function createLiveSession(initialize: JSONRPCRequest, restoreId: string | undefined, path: string, variant: LabStoreVariant): Promise<LiveSession> {
    const owner = generation;
    const newId = restoreId ?? randomUUID();
    let sessionId: string | undefined;
    const store = createStore(variant, () => sessionId, owner);
    const server = new Server(SERVER_INFO, { capabilities: { tools: {} } });
    registerLabTools(server, ledger);
    const live: LiveSession = { transport: undefined as unknown as StreamableHTTPServerTransport, server, store };
    live.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => newId,
      eventStore: options.wrapEventStore ? options.wrapEventStore(store, newId) : store,
      retryInterval,
      onsessioninitialized: (id) => {
        sessionId = id;
        owner.live.set(id, live);
        if (restoreId === undefined) {
          const protocolVersion = String((initialize.params as { protocolVersion?: unknown } | undefined)?.protocolVersion ?? '');
          registry.remember({ sessionId: id, initialize, protocolVersion, createdAt: Date.now(), path });
        }
      },
      onsessionclosed: (id) => {
        registry.forget(id);
        owner.live.delete(id);
      },
    });
    options.onTransport?.(live.transport, newId);
    await server.connect(live.transport);
    return live;
  }

  /** The live session for an id, re-created (after a restart or idle drop) if the registry knows it. */
  async function liveSession(sessionId: string): Promise<LiveSession | undefined> {
    const live = generation.live.get(sessionId);
    if (live) {
      generation.live.touch(sessionId);
      registry.get(sessionId);
      return live;
    }
    const record = registry.get(sessionId);
    if (!record) return undefined;
    let pending = restoring.get(sessionId);
    if (!pending) {
      pending = restoreSession(new URL(record.path, selfUrl).toString(), record, { [RESTORE_TOKEN_HEADER]: restoreToken, [RESTORE_SESSION_HEADER]: sessionId }).finally(() =>
        restoring.delete(sessionId),
      );
      restoring.set(sessionId, pending);
    }
    await pending;
    return generation.live.get(sessionId);
  }

  /** `created` is set when the request initializes a session, so the request log can name it. */
  async function handleMcp(
    req: IncomingMessage,
    res: ServerResponse,
    created: { transport?: StreamableHTTPServerTransport },
    path: string,
    variant: LabStoreVariant,
    context: LabRequestContext,
  ): Promise<void> {
    const sessionId = header(req, HEADER_SESSION_ID);
    if (req.method === 'POST') {
      let body: unknown;
      try {
        body = JSON.parse(await readBody(req, MAX_BODY_BYTES));
      } catch (error) {
        if (error instanceof BodyTooLargeError) return sendJsonRpcError(res, 413, -32000, error.message);
        return sendJsonRpcError(res, 400, -32700, 'Parse error: Invalid JSON');
      }
      context.jsonRpcRequestId = firstRequestId(body);
      if (sessionId === undefined) {
        const initialize = body as JSONRPCRequest;
        if (!isInitializeRequest(initialize)) return sendJsonRpcError(res, 400, -32000, 'Bad Request: No valid session ID provided');
        const restoreId = restoreTarget(req);
        if (restoreId === null) return sendJsonRpcError(res, 403, -32000, 'Forbidden: invalid session restore');
        const live = await createLiveSession(initialize, restoreId, path, variant);
        created.transport = live.transport;
        return live.transport.handleRequest(req, res, body);
      }
      const live = await liveSession(sessionId);
      if (!live) return sendJsonRpcError(res, 404, -32001, 'Session not found');
      return live.transport.handleRequest(req, res, body);
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
      if (sessionId === undefined) return sendJsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      const live = await liveSession(sessionId);
      if (!live) return sendJsonRpcError(res, 404, -32001, 'Session not found');
      const lastEventId = header(req, HEADER_LAST_EVENT_ID);
      if (req.method === 'GET' && lastEventId !== undefined) {
        if (live.store.cursorState(lastEventId) === 'evicted') {
          // The lab's answer for a cursor its buffer has dropped; the session itself is still valid.
          return sendJsonRpcError(res, 404, -32000, 'Event stream not found: the cursor was evicted from the event buffer');
        }
        const key = `${sessionId}\n${lastEventId}`;
        gates.set(key, new ReplayCloseGate(res));
        res.once('close', () => gates.delete(key));
      }
      return live.transport.handleRequest(req, res);
    }
    res.setHeader('allow', 'GET, POST, DELETE');
    return sendJsonRpcError(res, 405, -32000, 'Method not allowed.');
  }

  /** The store variant an MCP path serves (`/mcp` or `/mcp/<variant>`), undefined for other paths. */
  function mcpVariant(path: string): LabStoreVariant | undefined {
    if (path === MCP_PATH) return defaultVariant;
    if (!path.startsWith(`${MCP_PATH}/`)) return undefined;
    const name = path.slice(MCP_PATH.length + 1);
    return isLabStoreVariant(name) ? name : undefined;
  }

  /** undefined: not a restore; null: a restore request that must be refused; string: the session to restore. */
  function restoreTarget(req: IncomingMessage): string | undefined | null {
    const token = header(req, RESTORE_TOKEN_HEADER);
    if (token === undefined) return undefined;
    const target = header(req, RESTORE_SESSION_HEADER);
    if (token !== restoreToken || target === undefined || !registry.get(target) || generation.live.has(target)) return null;
    return target;
  }

  async function restart(keep?: Socket): Promise<RestartReport> {
    const old = generation;
    restarts++;
    generation = newGeneration(old.id + 1);
    let droppedConnections = 0;
    for (const socket of sockets) {
      if (socket === keep) continue;
      socket.destroy();
      droppedConnections++;
    }
    const dropped = [...old.live.values()];
    // Closing the transports aborts the tool handlers still running: the work dies with the process.
    await Promise.all(dropped.map((live) => live.server.close()));
    return { generation: generation.id, droppedSessions: dropped.length, droppedConnections };
  }

  function evictCursor(sessionId: string, eventId: string): EvictReport | undefined {
    const live = generation.live.get(sessionId);
    if (!live) return undefined;
    return { sessionId, eventId, evictedEvents: live.store.evictCursor(eventId) };
  }

  function state(): LabServerState {
    const eventStore = emptyStats();
    // The shared variant's one store serves many sessions: count each store once.
    for (const store of new Set([...generation.live.values()].map((live) => live.store))) addStats(eventStore, store.stats());
    return {
      generation: generation.id,
      restarts,
      liveSessions: generation.live.size,
      knownSessions: registry.size,
      requests: requests.total,
      eventStore,
      recentReplays: replays.toArray(),
    };
  }

  function requestLog(sessionId?: string): RequestLogEntry[] {
    const all = requests.toArray();
    return sessionId === undefined ? all : all.filter((entry) => entry.sessionId === sessionId);
  }

  const control = {
    restart,
    evictCursor,
    state,
    requestLog,
    sideEffectCount: (key: string) => ledger.count(key),
  };

  const httpServer: HttpServer = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://lab').pathname;
    const created: { transport?: StreamableHTTPServerTransport } = {};
    const variant = mcpVariant(path);
    if (variant !== undefined) {
      res.once('close', () =>
        requests.push({
          at: Date.now(),
          method: req.method ?? '',
          path,
          sessionId: header(req, HEADER_SESSION_ID) ?? created.transport?.sessionId,
          lastEventId: header(req, HEADER_LAST_EVENT_ID),
          status: res.statusCode,
          restore: header(req, RESTORE_TOKEN_HEADER) !== undefined,
          completed: res.writableFinished,
        }),
      );
    }
    const context: LabRequestContext = { sessionId: header(req, HEADER_SESSION_ID), jsonRpcRequestId: undefined };
    const handled =
      variant !== undefined
        ? labRequestContext.run(context, () => handleMcp(req, res, created, path, variant, context))
        : path.startsWith(`${CONTROL_PATH}/`) && isLoopbackAddress(req.socket.remoteAddress)
          ? handleControlRequest(control, path.slice(CONTROL_PATH.length), req, res)
          : Promise.resolve(sendJsonRpcError(res, path.startsWith(CONTROL_PATH) ? 403 : 404, -32000, 'Not found'));
    handled.catch((error: unknown) => {
      if (!res.headersSent) sendJsonRpcError(res, 500, -32603, `Internal error: ${error instanceof Error ? error.message : String(error)}`);
      else res.destroy();
    });
  });
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
  selfUrl = `${local}${MCP_PATH}`;
  const loopbackBase = isLoopbackAddress(reachableHost(host)) ? local : `http://127.0.0.1:${port}`;

  return {
    url: selfUrl,
    controlUrl: `${loopbackBase}${CONTROL_PATH}`,
    host,
    port,
    restart: () => restart(),
    evictCursor,
    sideEffectCount: control.sideEffectCount,
    state,
    requestLog,
    async close() {
      await Promise.all([...generation.live.values()].map((live) => live.server.close()));
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
