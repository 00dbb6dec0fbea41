import { BoundedMap } from '@resumewatch/bounded';
import { HEADER_SESSION_ID } from '@resumewatch/wire';
import type { FetchLike } from '@resumewatch/wire';
import { createInstrumentedFetch } from './instrument-fetch.js';
import type { McpExchange } from './mcp-exchange.js';
import type { TracerSource } from './tracer-source.js';
import type { GlobalFetchOptions, GlobalFetchStats, InstrumentFetchOptions, InstrumentedFetch } from './types.js';

const DEFAULT_MAX_SESSIONS = 10_000;
const DEFAULT_SESSION_RETENTION_MS = 60 * 60 * 1000;

/**
 * Routes MCP exchanges of many clients to one instrumented fetch per (server origin, `Mcp-Session-Id`):
 * on the wire, the session is what ties a client's exchanges together, and the process-wide fetch
 * cannot tell which client object made a call. A request without a session (initialize, a 2026-07-28
 * request) gets a fresh instrumented fetch; when its response names a session, that fetch becomes the
 * session's, so the session's later requests, resumes and replays are observed where its initialize
 * was. Session-less exchanges that never get a session are each observed on their own: request ids of
 * different clients never meet.
 */
export class SessionRouter {
  private readonly sessions: BoundedMap<string, InstrumentedFetch>;
  /** Session-less exchanges in flight, so that stats() sees them. */
  private readonly unattached = new Set<InstrumentedFetch>();
  private exchanges = 0;

  constructor(
    private readonly base: FetchLike,
    private readonly options: InstrumentFetchOptions,
    private readonly tracer: TracerSource,
    limits: GlobalFetchOptions = {},
  ) {
    this.sessions = new BoundedMap<string, InstrumentedFetch>(
      limits.maxSessions ?? DEFAULT_MAX_SESSIONS,
      limits.sessionRetentionMs ?? DEFAULT_SESSION_RETENTION_MS,
    );
  }

  /** Sends an MCP exchange through the instrumented fetch of its session. */
  route(exchange: McpExchange, input: Parameters<FetchLike>[0], init: RequestInit | undefined): Promise<Response> {
    this.exchanges++;
    if (exchange.sessionId === undefined) return this.firstExchange(exchange.origin, input, init);
    const key = sessionKey(exchange.origin, exchange.sessionId);
    let session = this.sessions.get(key);
    if (session === undefined) {
      // A session this process did not see initialized (e.g. one restored from storage, or another replica's).
      session = this.instrumented();
      this.sessions.set(key, session);
    } else {
      this.sessions.touch(key);
    }
    const response = session(input, init);
    // A DELETE is the client's word that the session is over: its observation leaves with it, answered
    // or not (the observer released the session when the DELETE was sent). A closed transport is only
    // the wire's guess, so a session whose client went quiet leaves at its retention.
    if (methodOf(input, init) === 'DELETE') {
      const forget = (): void => {
        if (this.sessions.get(key) === session) this.sessions.delete(key);
      };
      response.then(forget, forget);
    }
    return response;
  }

  stats(): GlobalFetchStats {
    const total: GlobalFetchStats = {
      sessions: this.sessions.size,
      evictedSessions: this.sessions.evictions,
      exchanges: this.exchanges,
      openRequests: 0,
      openResumes: 0,
      pendingHttp: 0,
      heldPolls: 0,
      heldPollsEvicted: 0,
    };
    for (const fetch of [...this.sessions.values(), ...this.unattached]) {
      const s = fetch.stats();
      total.openRequests += s.openRequests;
      total.openResumes += s.openResumes;
      total.pendingHttp += s.pendingHttp;
      total.heldPolls += s.heldPolls;
      total.heldPollsEvicted += s.heldPollsEvicted;
    }
    return total;
  }

  private instrumented(): InstrumentedFetch {
    return createInstrumentedFetch(this.base, this.options, this.tracer);
  }

  private async firstExchange(
    origin: string,
    input: Parameters<FetchLike>[0],
    init: RequestInit | undefined,
  ): Promise<Response> {
    const fetch = this.instrumented();
    this.unattached.add(fetch);
    try {
      const response = await fetch(input, init);
      const sessionId = response.headers.get(HEADER_SESSION_ID);
      if (sessionId !== null) {
        const key = sessionKey(origin, sessionId);
        if (!this.sessions.has(key)) this.sessions.set(key, fetch);
      }
      return response;
    } finally {
      // A body still streaming keeps its recorder alive through the stream; only our reference goes.
      this.unattached.delete(fetch);
    }
  }
}

function sessionKey(origin: string, sessionId: string): string {
  return `${origin}\n${sessionId}`;
}

function methodOf(input: Parameters<FetchLike>[0], init: RequestInit | undefined): string {
  return (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
}
