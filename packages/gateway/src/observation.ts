import { instrumentFetch } from '@resumewatch/instrumentation';
import type { InstrumentFetchOptions, InstrumentedFetch, RecorderStats } from '@resumewatch/instrumentation';
import type { WireObserver, WireRequest } from '@resumewatch/wire';
import type { ClientIdentity } from './client-identity.js';

/** What the gateway's observation holds now: sessions and requests of the wire, open spans of the recorder. */
export interface ObservationStats extends RecorderStats {
  /** HTTP exchanges observed so far. */
  exchanges: number;
  sessions: number;
  requests: number;
  /** Sessions and requests pushed out by the caps. */
  evictions: number;
  /** Sessions clients named that the upstream has not accepted yet (no 2xx), held apart from the accepted ones. */
  unacceptedSessions: number;
  /** Unaccepted sessions pushed out by their own cap (made-up session ids never push out accepted ones). */
  unacceptedEvictions: number;
  /** Session ids over 1 KiB and Last-Event-ID cursors over 256 bytes: not kept, never proof, forwarded as they came. */
  unkeptIds: number;
  /** Bytes held now to parse JSON bodies and SSE events (maxHeldBytes caps them). */
  heldBytes: number;
  /** JSON bodies passed to their client unparsed: over maxJsonBodyBytes, or past maxHeldBytes. */
  unparsedJsonBodies: number;
  /** SSE events passed to their client unparsed, as they arrived: over maxHeldEventBytes, or past maxHeldBytes. */
  oversizedEvents: number;
  /** Response bodies passed to their client unobserved for their Content-Encoding (unknown, corrupt, a bomb...). */
  unreadEncodedBodies: number;
}

/** What the gateway bounds of what it holds to parse bodies (the wire observer's options of the same names). */
interface HeldBodyLimits {
  maxJsonBodyBytes: number;
  maxHeldEventBytes: number;
  maxHeldBytes: number;
}

/** The wire observer of every client's exchanges (with the span recorder and the guard on it). */
export interface Observation {
  readonly observer: WireObserver;
  /** The span recorder's open request spans (for the state file: observation-state.ts). */
  readonly requestSpans: InstrumentedFetch['requestSpans'];
  /**
   * A client's request, before it goes upstream (the observer's `proxyRequest`, counted). `client`: who
   * sent it: its scope, so that a 2026-07-28 re-issue is matched among that client's requests only; its
   * address, on the spans of a listening stream that names no session (client.address).
   */
  begin(url: string, init: RequestInit, client: ClientIdentity): WireRequest;
  stats(): ObservationStats;
  /** Forgets sessions and requests past their retention now. */
  prune(): void;
}

/**
 * One wire observer, one span recorder and (with --enforce) one guard for every client: the observer
 * keys requests by session, and, kept apart per exchange, the requests without one (initialize, a
 * 2026-07-28 request), so clients never meet. A proxy cannot see a client close its transport: only a
 * DELETE, or retention, ends a session. The forwarder drives the observer itself (`proxyRequest`,
 * `proxyResponse`): no fetch, no Response, no web stream on the data path.
 */
export function observeExchanges(
  options: InstrumentFetchOptions &
    HeldBodyLimits & {
      maxSessions?: number;
      sessionRetentionMs: number;
      /** The proxy proves receipt by a connection's next request too (--trust-connection-reuse), not by cursors alone. */
      connectionProof: boolean;
      /** A body's observation threw: it stood aside, passed through unobserved (the observer's option). */
      onObservationFailure?: (error: unknown) => void;
    },
): Observation {
  const {
    maxSessions,
    sessionRetentionMs,
    connectionProof,
    maxJsonBodyBytes,
    maxHeldEventBytes,
    maxHeldBytes,
    onObservationFailure,
    ...rest
  } = options;
  const instrumented = instrumentFetch({
    ...rest,
    observer: {
      releaseOnTransportClose: false,
      sessionlessApart: true,
      // A proxy knows what it wrote, not what its client read: a terminal finishes its request only once
      // the client proves it holds it (its cursor, or its next request on the connection: receipt-proof.ts).
      confirmDelivery: true,
      // Without the connection's proof, terminals no cursor can name are not kept waiting for one.
      connectionProof,
      sessionRetentionMs,
      ...(maxSessions ? { maxSessions } : {}),
      // What a client's exchange makes the gateway hold is bounded by bytes: beyond, it passes unparsed.
      maxJsonBodyBytes,
      maxHeldEventBytes,
      maxHeldBytes,
      ...(onObservationFailure ? { onObservationFailure } : {}),
    },
  });
  const observer = instrumented.observer;
  let exchanges = 0;
  return {
    observer,
    requestSpans: instrumented.requestSpans,
    begin(url, init, client) {
      exchanges++;
      return observer.proxyRequest(url, init, client.scope, client.address);
    },
    stats() {
      const wire = observer.stats();
      return {
        exchanges,
        sessions: wire.sessions,
        requests: wire.requests,
        evictions: wire.evictions,
        unacceptedSessions: wire.unacceptedSessions,
        unacceptedEvictions: wire.unacceptedEvictions,
        unkeptIds: wire.unkeptIds,
        heldBytes: wire.heldBytes,
        unparsedJsonBodies: wire.unparsedJsonBodies,
        oversizedEvents: wire.oversizedEvents,
        unreadEncodedBodies: wire.unreadEncodedBodies,
        ...instrumented.stats(),
      };
    },
    prune: () => observer.prune(),
  };
}
