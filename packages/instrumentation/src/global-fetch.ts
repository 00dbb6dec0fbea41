import { BoundedMap } from '@resumewatch/bounded';
import { HEADER_SESSION_ID } from '@resumewatch/wire';
import type { FetchLike } from '@resumewatch/wire';
import { isBelowInstrumentedFetch, markCallsBelowInstrumentedFetch } from './fetch-scope.js';
import { createInstrumentedFetch } from './instrument-fetch.js';
import { recogniseMcpExchange } from './mcp-exchange.js';
import type { TracerSource } from './tracer-source.js';
import type { GlobalFetchOptions, GlobalFetchStats, InstrumentFetchOptions, InstrumentedFetch } from './types.js';

export interface GlobalFetchPatch {
  stats(): GlobalFetchStats;
  /** Puts back the fetch that was there before. */
  restore(): void;
}

const DEFAULT_MAX_SESSIONS = 10_000;
const DEFAULT_SESSION_RETENTION_MS = 60 * 60 * 1000;

/**
 * Replaces `globalThis.fetch` with one that instruments every MCP Streamable HTTP exchange the process
 * makes, whatever client makes it (SDK v1 or v2, the lab's client, any fetch-based client), and passes
 * every other call straight to the original fetch, its body unread.
 *
 * State is kept apart per (server origin, `Mcp-Session-Id`): on the wire, the session is what ties a
 * transport's exchanges together, and the process-wide fetch cannot see which client object made a
 * call. A request without a session (initialize) gets a fresh instrumented fetch; when its response
 * names a session, that fetch becomes the session's, so the session's later requests, resumes and
 * replays are observed where its initialize was. Session-less exchanges that never get a session
 * (stateless servers) are each observed on their own. Calls made from inside an instrumented fetch
 * (a patched SDK transport, a manual `instrumentFetch()`) pass through: nothing is recorded twice.
 */
export function patchGlobalFetch(
  options: InstrumentFetchOptions,
  tracer: TracerSource,
  limits: GlobalFetchOptions = {},
): GlobalFetchPatch {
  const original = globalThis.fetch;
  const base: FetchLike = (input, init) => original(input, init);
  const sessions = new BoundedMap<string, InstrumentedFetch>(
    limits.maxSessions ?? DEFAULT_MAX_SESSIONS,
    limits.sessionRetentionMs ?? DEFAULT_SESSION_RETENTION_MS,
  );
  /** Session-less exchanges in flight, so that stats() and a flush at exit see them. */
  const unattached = new Set<InstrumentedFetch>();
  let exchanges = 0;

  const instrumented = (): InstrumentedFetch => createInstrumentedFetch(base, options, tracer);

  async function firstExchange(
    origin: string,
    input: Parameters<FetchLike>[0],
    init: RequestInit | undefined,
  ): Promise<Response> {
    const fetch = instrumented();
    unattached.add(fetch);
    try {
      const response = await fetch(input, init);
      const sessionId = response.headers.get(HEADER_SESSION_ID);
      if (sessionId !== null) {
        const key = sessionKey(origin, sessionId);
        if (!sessions.has(key)) sessions.set(key, fetch);
      }
      return response;
    } finally {
      // A body still streaming keeps its recorder alive through the stream; only our reference goes.
      unattached.delete(fetch);
    }
  }

  const patched = function fetch(input: Parameters<FetchLike>[0], init?: RequestInit): Promise<Response> {
    if (isBelowInstrumentedFetch()) return original(input, init);
    const exchange = recogniseMcpExchange(input, init);
    if (exchange === undefined) return original(input, init);
    exchanges++;
    if (exchange.sessionId === undefined) return firstExchange(exchange.origin, input, init);
    const key = sessionKey(exchange.origin, exchange.sessionId);
    let session = sessions.get(key);
    if (session === undefined) {
      // A session this process did not see initialized (e.g. one restored from storage).
      session = instrumented();
      sessions.set(key, session);
    } else {
      sessions.touch(key);
    }
    return session(input, init);
  } as typeof globalThis.fetch;

  markCallsBelowInstrumentedFetch();
  globalThis.fetch = patched;
  return {
    stats() {
      const total: GlobalFetchStats = {
        sessions: sessions.size,
        evictedSessions: sessions.evictions,
        exchanges,
        openRequests: 0,
        openResumes: 0,
        pendingHttp: 0,
        heldPolls: 0,
        heldPollsEvicted: 0,
      };
      for (const fetch of [...sessions.values(), ...unattached]) {
        const s = fetch.stats();
        total.openRequests += s.openRequests;
        total.openResumes += s.openResumes;
        total.pendingHttp += s.pendingHttp;
        total.heldPolls += s.heldPolls;
        total.heldPollsEvicted += s.heldPollsEvicted;
      }
      return total;
    },
    restore() {
      if (globalThis.fetch === patched) globalThis.fetch = original;
    },
  };
}

function sessionKey(origin: string, sessionId: string): string {
  return `${origin}\n${sessionId}`;
}
