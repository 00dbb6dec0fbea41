// The public options and reports of the lab server, apart from the code that produces them, so the
// control endpoint and client can use them without importing the server.
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { BoundedEventStore, BoundedEventStoreOptions, EventStoreStats, ReplayRecord } from '../event-store.js';
import type { LabStoreVariant } from '../store-variants.js';

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
