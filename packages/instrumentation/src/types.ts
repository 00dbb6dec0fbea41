// The package's public types (re-exported by index.ts); internal types live with the code that uses them.
import type { TracerProvider } from '@opentelemetry/api';
import type { InstrumentationConfig } from '@opentelemetry/instrumentation';
import type { GuardListener, GuardOptions } from '@resumewatch/guard';
import type { FetchLike, RequestRecord, WireObserver, WireObserverOptions } from '@resumewatch/wire';
import type { OpenRequestSpan } from './span-recorder.js';

/** How session and event ids are recorded on spans (see id-policy.ts and the README, "Ids"). */
export type IdPolicy = 'raw' | 'hmac' | 'omit';

/** The id options shared by instrumentFetch, McpResumeInstrumentation and the server-side wrappers. */
export interface IdPolicyOptions {
  /**
   * How the session id and the event ids (cursors) are recorded on spans: `raw`, `hmac` or
   * `omit`. Default: the environment variable RESUMEWATCH_ID_POLICY, else `raw`.
   */
  idPolicy?: IdPolicy;
  /** The HMAC key for `hmac` (at least 16 bytes). Default: the environment variable RESUMEWATCH_ID_KEY. */
  idKey?: string | Uint8Array;
}

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
   * `requestTimeoutMs`. Its fetch side wraps the returned fetch as guardedFetch's does: MCP tasks' polls
   * spaced to the announced interval and a re-issue of a live task's call answered with its handle
   * (`withTaskGuard`), with `idempotencyKey`, the keys (`withIdempotencyKeys`), and a request on a session the
   * server refused (or a GET after its 405) answered with the server's own answer (`withSessionRefusals`).
   */
  guard?: boolean | GuardOptions;
  /** Caps and retention of the wire observer's session, request and stream state. */
  observer?: WireObserverOptions;
  /**
   * How long a 2026-07-28 request whose stream broke before its result (error type STREAM_BROKEN
   * or ABORTED) waits for its re-issue: a request of the same client with the same arguments digest
   * within it gets ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID and _SPAN_ID. At most 10,000 broken requests are
   * remembered. Default DEFAULT_REISSUE_WINDOW_MS of @resumewatch/wire (600000 ms), the guard's too.
   */
  reissueWindowMs?: number;
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
  /**
   * The open request spans, for a state file across a restart (the gateway's --state-file): read at
   * snapshot time, and reopened in the next process with the deadline each had.
   */
  readonly requestSpans: {
    open(): OpenRequestSpan[];
    /** The open span of one request, undefined when it has none (a snapshot taken in steps). */
    openOf(record: RequestRecord): OpenRequestSpan | undefined;
    reopen(open: OpenRequestSpan, url: string): void;
    /** At a shutdown that kept them: lets them go unended (the next process ends them). */
    handOver(): void;
  };
}

/** The options of instrumentFetch but `tracerProvider`: the instrumentation's own provider is used. */
export interface McpResumeInstrumentationConfig
  extends InstrumentationConfig, Omit<InstrumentFetchOptions, 'tracerProvider'> {
  /**
   * Also instrument every MCP exchange through the process's global `fetch`, whatever client makes
   * it (`register` turns this on). `true` or the caps of its per-session state. Default off.
   */
  globalFetch?: boolean | GlobalFetchOptions;
}

/** The caps of the `globalFetch` option's per-session state. */
export interface GlobalFetchOptions {
  /** Sessions whose instrumented fetch is kept; the least recently used goes first. Default 10,000. */
  maxSessions?: number;
  /** How long an idle session's instrumented fetch is kept. Default 1 h (the wire observer's session retention). */
  sessionRetentionMs?: number;
}

/** What `McpResumeInstrumentation.globalFetchStats()` reports: the sessions and the summed recorder stats. */
export interface GlobalFetchStats extends RecorderStats {
  /** Sessions with their own instrumented fetch. */
  sessions: number;
  /** Sessions dropped because `maxSessions` was reached. */
  evictedSessions: number;
  /** MCP exchanges instrumented so far. */
  exchanges: number;
}

/** The SDK's EventStore (server/streamableHttp), structurally: this package does not load the SDK. */
export interface EventStoreLike<Message = unknown> {
  storeEvent(streamId: string, message: Message): Promise<string>;
  replayEventsAfter(
    lastEventId: string,
    options: { send: (eventId: string, message: Message) => Promise<void> },
  ): Promise<string>;
  getStreamIdForEventId?(eventId: string): Promise<string | undefined>;
}

/** `idPolicy` and `idKey`: how session and event ids are recorded (see id-policy.ts). */
export interface EventStoreInstrumentationOptions extends IdPolicyOptions {
  tracerProvider?: TracerProvider;
  /** The session the store serves (a per-session store), or a resolver from the store's stream id. */
  sessionId?: string | ((streamId: string | undefined) => string | undefined);
  /** Streams whose terminal state is tracked; the oldest is forgotten first. Default 10,000. */
  maxStreams?: number;
  /** How long an idle stream's state is kept. Default 1 h. */
  streamRetentionMs?: number;
  /**
   * A request's deadline: a replay of a running stream that sent nothing and after which nothing was
   * stored for the stream by then is an empty replay (evidence `deadline`). Default 300000 ms.
   */
  requestTimeoutMs?: number;
}

/** The SDK's server transport, structurally (StreamableHTTPServerTransport and its web-standard base). */
export interface ServerTransportLike {
  readonly sessionId?: string | undefined;
  onmessage?: ((message: never, extra?: never) => void) | undefined;
  send(message: never, options?: never): Promise<void>;
}

/** `idPolicy` and `idKey`: how session ids are recorded (see id-policy.ts). */
export interface ServerTransportInstrumentationOptions extends IdPolicyOptions {
  tracerProvider?: TracerProvider;
  /** Longest a server request span stays open without a response. Default 300000 ms. */
  requestTimeoutMs?: number;
  /** Most request spans open at once; beyond it new requests are not traced. Default 10,000. */
  maxOpenRequests?: number;
  /**
   * How long a request whose response stream was closed before its result (the transport closed: the
   * client's cancellation in the 2026-07-28 era) is watched for its handler's result: the span then
   * says ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION true (the result came) or false (the handler
   * ended without one); when nothing is seen within this, the span ends without it (fate unknown).
   * Capped by requestTimeoutMs. Default 30000 ms.
   */
  cancellationWaitMs?: number;
}
