import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { BoundedMap } from '@resumewatch/bounded';
import type { BoundedEventStore, EventStoreStats, EvictionReason } from '../event-store.js';
import { header } from '../http-util.js';
import { registerLabTools } from '../lab-tools.js';
import { restoreSession } from '../session-restore.js';
import { SessionRegistry } from '../session-registry.js';
import { SideEffectLedger } from '../side-effects.js';
import type { LabStoreVariant } from '../store-variants.js';
import { RESTORE_SESSION_HEADER, RESTORE_TOKEN_HEADER } from './paths.js';
import type { ReplayClosing } from './replay-closing.js';
import { createVariantStore } from './store-selection.js';
import type { SharedStoreHolder } from './store-selection.js';
import type { EvictReport, LabServerOptions, RestartReport } from './types.js';
import { ResumeArrivals } from '../resume-arrivals.js';

const SERVER_INFO = { name: 'resumewatch-lab', version: '0.1.0' };

export interface LiveSession {
  transport: StreamableHTTPServerTransport;
  server: Server;
  store: BoundedEventStore;
  /** The session's resumes so far (poll_task waits for its client to come back). */
  resumes: ResumeArrivals;
}

/** What a (simulated) server process holds; a restart replaces it whole. */
interface Generation extends SharedStoreHolder {
  id: number;
  live: BoundedMap<string, LiveSession>;
}

export type StoreStats = Omit<EventStoreStats, 'epoch'>;

function emptyStats(): StoreStats {
  return {
    events: 0,
    streams: 0,
    stored: 0,
    replays: 0,
    evicted: { capacity: 0, ttl: 0, 'replay-limit': 0, explicit: 0 },
  };
}

function addStats(total: StoreStats, stats: EventStoreStats): void {
  total.events += stats.events;
  total.streams += stats.streams;
  total.stored += stats.stored;
  total.replays += stats.replays;
  for (const reason of Object.keys(total.evicted) as EvictionReason[]) total.evicted[reason] += stats.evicted[reason];
}

/**
 * The sessions of the lab server: the live ones (transport, MCP server, event store) of the current
 * generation, and the registry that outlives a restart, from which a known session is restored on its
 * next request by re-initializing it against the lab's own endpoint.
 */
export class LiveSessions {
  private readonly registry: SessionRegistry;
  readonly ledger = new SideEffectLedger();
  private readonly restoreToken = randomBytes(16).toString('hex');
  private readonly restoring = new BoundedMap<string, Promise<void>>(1000, 60_000);
  private readonly maxLive: number;
  private readonly idleTtl: number;
  private generation: Generation;
  private restarts = 0;
  /** The lab's own MCP URL, known once the server listens; restores are sent there. */
  selfUrl = '';

  constructor(
    private readonly options: LabServerOptions,
    private readonly replayClosing: ReplayClosing,
  ) {
    this.maxLive = options.maxLiveSessions ?? 1000;
    this.idleTtl = options.sessionIdleTtlMs ?? 1_800_000;
    this.registry = new SessionRegistry(options.maxKnownSessions ?? 2000, this.idleTtl);
    this.generation = this.newGeneration(1);
  }

  private newGeneration(id: number): Generation {
    return {
      id,
      live: new BoundedMap(this.maxLive, this.idleTtl, Date.now, (_id, live) => void live.server.close()),
      shared: undefined,
    };
  }

  /** A new session (or a restored one when `restoreId` is set) on the path of `variant`. */
  async create(
    initialize: JSONRPCRequest,
    restoreId: string | undefined,
    path: string,
    variant: LabStoreVariant,
  ): Promise<LiveSession> {
    const owner = this.generation;
    const newId = restoreId ?? randomUUID();
    let sessionId: string | undefined;
    const store = createVariantStore(
      variant,
      this.options.eventStore,
      () => sessionId,
      owner,
      (record, id) => this.replayClosing.afterReplay(record, id),
    );
    const server = new Server(SERVER_INFO, { capabilities: { tools: {} } });
    const resumes = new ResumeArrivals();
    registerLabTools(server, this.ledger, resumes);
    const live: LiveSession = {
      transport: undefined as unknown as StreamableHTTPServerTransport,
      server,
      store,
      resumes,
    };
    live.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => newId,
      eventStore: this.options.wrapEventStore ? this.options.wrapEventStore(store, newId) : store,
      retryInterval: this.options.retryIntervalMs ?? 100,
      onsessioninitialized: (id) => {
        sessionId = id;
        owner.live.set(id, live);
        if (restoreId === undefined) {
          const protocolVersion = String(
            (initialize.params as { protocolVersion?: unknown } | undefined)?.protocolVersion ?? '',
          );
          this.registry.remember({ sessionId: id, initialize, protocolVersion, createdAt: Date.now(), path });
        }
      },
      onsessionclosed: (id) => {
        this.registry.forget(id);
        owner.live.delete(id);
      },
    });
    this.options.onTransport?.(live.transport, newId);
    await server.connect(live.transport);
    return live;
  }

  /** The live session for an id, re-created (after a restart or idle drop) if the registry knows it. */
  async find(sessionId: string): Promise<LiveSession | undefined> {
    const live = this.generation.live.get(sessionId);
    if (live) {
      this.generation.live.touch(sessionId);
      this.registry.get(sessionId);
      return live;
    }
    const record = this.registry.get(sessionId);
    if (!record) return undefined;
    let pending = this.restoring.get(sessionId);
    if (!pending) {
      const headers = { [RESTORE_TOKEN_HEADER]: this.restoreToken, [RESTORE_SESSION_HEADER]: sessionId };
      pending = restoreSession(new URL(record.path, this.selfUrl).toString(), record, headers).finally(() =>
        this.restoring.delete(sessionId),
      );
      this.restoring.set(sessionId, pending);
    }
    await pending;
    return this.generation.live.get(sessionId);
  }

  /** undefined: not a restore; null: a restore request that must be refused; string: the session to restore. */
  restoreTarget(req: IncomingMessage): string | undefined | null {
    const token = header(req, RESTORE_TOKEN_HEADER);
    if (token === undefined) return undefined;
    const target = header(req, RESTORE_SESSION_HEADER);
    if (
      token !== this.restoreToken ||
      target === undefined ||
      !this.registry.get(target) ||
      this.generation.live.has(target)
    )
      return null;
    return target;
  }

  /** Drops the generation: connections cut (but `keep`), transports closed; the registry stays. */
  async restart(sockets: Iterable<Socket>, keep?: Socket): Promise<RestartReport> {
    const old = this.generation;
    this.restarts++;
    this.generation = this.newGeneration(old.id + 1);
    let droppedConnections = 0;
    for (const socket of sockets) {
      if (socket === keep) continue;
      socket.destroy();
      droppedConnections++;
    }
    const dropped = [...old.live.values()];
    // Closing the transports aborts the tool handlers still running: the work dies with the process.
    await Promise.all(dropped.map((live) => live.server.close()));
    return { generation: this.generation.id, droppedSessions: dropped.length, droppedConnections };
  }

  evictCursor(sessionId: string, eventId: string): EvictReport | undefined {
    const live = this.generation.live.get(sessionId);
    if (!live) return undefined;
    return { sessionId, eventId, evictedEvents: live.store.evictCursor(eventId) };
  }

  /** The figures of `/control/state` that sessions own. */
  counts(): {
    generation: number;
    restarts: number;
    liveSessions: number;
    knownSessions: number;
    eventStore: StoreStats;
  } {
    const eventStore = emptyStats();
    // The shared variant's one store serves many sessions: count each store once.
    for (const store of new Set([...this.generation.live.values()].map((live) => live.store)))
      addStats(eventStore, store.stats());
    return {
      generation: this.generation.id,
      restarts: this.restarts,
      liveSessions: this.generation.live.size,
      knownSessions: this.registry.size,
      eventStore,
    };
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.generation.live.values()].map((live) => live.server.close()));
  }
}
