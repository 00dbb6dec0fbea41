import type { Tracer, TracerProvider } from '@opentelemetry/api';
import type { InstrumentationConfig } from '@opentelemetry/instrumentation';
import type { GuardListener, GuardOptions } from '@resumewatch/guard';
import type { FetchLike, WireObserver, WireObserverOptions } from '@resumewatch/wire';
import type { IdPolicyOptions } from './id-policy.js';

/** `idPolicy` and `idKey`: how session and event ids are recorded (see id-policy.ts). */
export interface InstrumentFetchOptions extends IdPolicyOptions {
  /** Where spans go. Default: the global tracer provider (resolved at each span, so it may be set later). */
  tracerProvider?: TracerProvider;
  /**
   * How long a resume span waits for replayed events after the response headers before it ends
   * and decides its outcome (continuation if a JSON-RPC message arrived, else empty_replay).
   * Default 2000 ms.
   */
  replayWindowMs?: number;
  /**
   * Longest a request span (and a reattach or resume span waiting for response headers) stays open.
   * A request without a terminal event by then ends with error type `timeout`. Default 300000 ms.
   */
  requestTimeoutMs?: number;
  /**
   * Enforce the resumption guard (@resumewatch/guard) on the same observer: refuse a resume of a
   * finished request, drop duplicate terminal events, report failed resumptions; each recorded on the
   * spans as the guard action. Its replay window defaults to `replayWindowMs`.
   */
  guard?: boolean | GuardOptions;
  /** Caps and retention of the wire observer's session, request and stream state. */
  observer?: WireObserverOptions;
}

/** Per-stream and per-request state the span recorder currently holds. */
export interface RecorderStats {
  /** Request spans not yet ended. */
  openRequests: number;
  /** Resume spans inside their replay window. */
  openResumes: number;
  /** HTTP requests with a reattach or resume span waiting for response headers. */
  pendingHttp: number;
}

/** A fetch that reports what it carries as spans. */
export interface InstrumentedFetch extends FetchLike {
  readonly observer: WireObserver;
  /** The enforced guard, when the `guard` option asked for it. */
  readonly guard: GuardListener | undefined;
  stats(): RecorderStats;
}

/** The options of instrumentFetch but `tracerProvider`: the instrumentation's own provider is used. */
export interface McpResumeInstrumentationConfig extends InstrumentationConfig, Omit<InstrumentFetchOptions, 'tracerProvider'> {}

/** Internal: how the recorder obtains its tracer. */
export type TracerSource = () => Tracer;
