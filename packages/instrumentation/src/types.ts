import type { TracerProvider } from '@opentelemetry/api';
import type { InstrumentationConfig } from '@opentelemetry/instrumentation';
import type { GuardListener, GuardOptions } from '@resumewatch/guard';
import type { FetchLike, WireObserver, WireObserverOptions } from '@resumewatch/wire';
import type { GlobalFetchOptions } from './global-fetch.js';
import type { IdPolicyOptions } from './id-policy.js';

/** `idPolicy` and `idKey`: how session and event ids are recorded (see id-policy.ts). */
export interface InstrumentFetchOptions extends IdPolicyOptions {
  /** Where spans go. Default: the global tracer provider (resolved at each span, so it may be set later). */
  tracerProvider?: TracerProvider;
  /**
   * A request's deadline. A request without a terminal event by then ends with error type `timeout`,
   * and a resume of it whose stream is still silent, or whose last resume was a `poll` (held until the
   * request's fate decides it), gets the outcome `empty_replay` (evidence `deadline`). Also bounds a
   * reattach or resume span waiting for response headers. Default 300000 ms.
   */
  requestTimeoutMs?: number;
  /**
   * Enforce the resumption guard (@resumewatch/guard) on the same observer: refuse a resume of a
   * finished request, drop duplicate terminal events, report conflicting terminals and failed
   * resumptions; each recorded on the spans as the guard action. Its `requestDeadlineMs` defaults to
   * `requestTimeoutMs`.
   */
  guard?: boolean | GuardOptions;
  /** Caps and retention of the wire observer's session, request and stream state. */
  observer?: WireObserverOptions;
}

/** Per-stream and per-request state the span recorder currently holds. */
export interface RecorderStats {
  /** Request spans not yet ended. */
  openRequests: number;
  /** Resumes whose stream is open and silent: no verdict, no span yet. */
  openResumes: number;
  /** HTTP requests with a reattach or resume span waiting for response headers. */
  pendingHttp: number;
  /**
   * `poll` resume spans held until their request's fate decides them (its next resume or terminal: a
   * poll; its deadline: `empty_replay`; given up: `error`). At most one per request.
   */
  heldPolls: number;
  /** Held polls emitted as polls because the cap was reached. */
  heldPollsEvicted: number;
}

/** A fetch that reports what it carries as spans. */
export interface InstrumentedFetch extends FetchLike {
  readonly observer: WireObserver;
  /** The enforced guard, when the `guard` option asked for it. */
  readonly guard: GuardListener | undefined;
  stats(): RecorderStats;
}

/** The options of instrumentFetch but `tracerProvider`: the instrumentation's own provider is used. */
export interface McpResumeInstrumentationConfig extends InstrumentationConfig, Omit<InstrumentFetchOptions, 'tracerProvider'> {
  /**
   * Also instrument every MCP exchange through the process's global `fetch`, whatever client makes
   * it (`register` turns this on). `true` or the caps of its per-session state. Default off.
   */
  globalFetch?: boolean | GlobalFetchOptions;
}
