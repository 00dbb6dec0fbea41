import type { DetectorEvents, Finding } from './types.js';

export interface DetectorOptions {
  /** N: attempts for one (session, request) within the storm window that make a reconnect storm. */
  stormThreshold: number;
  /** W, ms: window for N attempts; a storm also ends when W passes without an attempt. */
  stormWindowMs: number;
  /**
   * Ms a storm that has ended waits before its signature is reported, so that attempts arriving late
   * and out of order are still counted. 0 reports at the moment the storm ends.
   */
  settleMs: number;
  /**
   * Cap on tracked (service, session, request) states, and apart on tracked first attempts of re-issues
   * (2026-07-28 era); the least recently touched is evicted.
   */
  maxRequests: number;
  /** Ms without a span after which a request's (or a re-issued first attempt's) state is released. */
  retentionMs: number;
  /** Span ids (and attempt stream ids) remembered for idempotency. */
  dedupeCapacity: number;
  /**
   * Ms after a re-issued request (2026-07-28 era) ended that the detector waits for a span of the first
   * attempt's trace to say whether the server completed it; past it, the fate is unknown and the
   * re-issue is reported as possible_duplicate_execution.
   */
  reissueSettleMs: number;
  /** Cap on live task records per service (a null ttl, "unlimited", is kept under it); the oldest is dropped and counted. */
  maxTasksPerService: number;
  /**
   * A poll storm: this many polls of one task, each sooner than half the announced poll interval after the
   * previous poll, within taskPollStormWindowMs. A task whose server announced no interval is never judged by rate.
   */
  taskPollStormThreshold: number;
  /** W, ms: the window of taskPollStormThreshold early polls. */
  taskPollStormWindowMs: number;
  /** Polls of one task after the server said it is gone (-32602) that make a poll storm. */
  taskPollsAfterGone: number;
  /** dead_session_loop: requests on one session id the server refused (404, or 400), with no initialize between. */
  sessionLoopThreshold: number;
  /** W, ms: the window of sessionLoopThreshold refused requests. */
  sessionLoopWindowMs: number;
  /** listening_stream_loop: GET listening streams re-opened after a 405, or after one closed at once with no event. */
  listeningLoopThreshold: number;
  /** W, ms: the window of the first fruitless listening stream and its listeningLoopThreshold re-opens. */
  listeningLoopWindowMs: number;
}

export const DEFAULT_DETECTOR_OPTIONS: DetectorOptions = {
  stormThreshold: 3,
  stormWindowMs: 60_000,
  settleMs: 0,
  maxRequests: 200_000,
  retentionMs: 600_000,
  dedupeCapacity: 100_000,
  reissueSettleMs: 60_000,
  maxTasksPerService: 10_000,
  taskPollStormThreshold: 10,
  taskPollStormWindowMs: 10_000,
  taskPollsAfterGone: 3,
  sessionLoopThreshold: 5,
  sessionLoopWindowMs: 60_000,
  listeningLoopThreshold: 5,
  listeningLoopWindowMs: 60_000,
};

export interface DetectorInit extends Partial<DetectorOptions> {
  onFinding?: (finding: Finding) => void;
  events?: DetectorEvents;
  /** Unix ms; used by tick(). Defaults to Date.now. */
  clock?: () => number;
}
