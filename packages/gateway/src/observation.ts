import { instrumentFetch } from '@resumewatch/instrumentation';
import type { InstrumentFetchOptions, RecorderStats } from '@resumewatch/instrumentation';
import type { FetchLike } from '@resumewatch/wire';

/** What the gateway's observation holds now: sessions and requests of the wire, open spans of the recorder. */
export interface ObservationStats extends RecorderStats {
  sessions: number;
  requests: number;
  /** Sessions and requests pushed out by the caps. */
  evictions: number;
}

/** The instrumented fetch of every client's exchanges, and what the forwarder tells it back. */
export interface Observation {
  readonly fetch: FetchLike;
  /** Whether a response's body reached the client whole (the downstream response ended cleanly after it). */
  settleDelivery(response: Response, delivered: boolean): void;
  stats(): ObservationStats;
  /** Forgets sessions and requests past their retention now. */
  prune(): void;
}

/**
 * One wire observer, one span recorder and (with --enforce) one guard for every client: the observer
 * keys requests by session, and, kept apart per exchange, the requests without one (initialize, a
 * 2026-07-28 request), so clients never meet. A proxy cannot see a client close its transport: only a
 * DELETE, or retention, ends a session.
 */
export function observeExchanges(
  below: FetchLike,
  options: InstrumentFetchOptions & { maxSessions?: number; sessionRetentionMs: number },
): Observation {
  const { maxSessions, sessionRetentionMs, ...rest } = options;
  const fetch = instrumentFetch(below, {
    ...rest,
    observer: {
      releaseOnTransportClose: false,
      sessionlessApart: true,
      sessionRetentionMs,
      ...(maxSessions ? { maxSessions } : {}),
    },
  });
  const observer = fetch.observer;
  return {
    fetch,
    settleDelivery(response, delivered) {
      const stream = observer.streamOf(response);
      if (stream !== undefined) fetch.guard?.settleDelivery(stream, delivered);
    },
    stats() {
      const wire = observer.stats();
      return { sessions: wire.sessions, requests: wire.requests, evictions: wire.evictions, ...fetch.stats() };
    },
    prune: () => observer.prune(),
  };
}
