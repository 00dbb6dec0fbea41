import { randomBytes } from 'node:crypto';
import { SpanKind, context as otelContext, diag, trace } from '@opentelemetry/api';
import type { Attributes, Context, Link, Span, SpanContext, SpanOptions, Tracer } from '@opentelemetry/api';
import { ProtocolEra, TaskStatus, TerminalOutcome, protocolEra, type ResumeVerdict } from '@resumewatch/semconv';
import type {
  JsonRpcMessage,
  RequestRecord,
  StreamEnd,
  StreamRecord,
  TerminalObservation,
  WireEvent,
  WireListener,
  WireObserver,
  RequestSender,
  TaskFacts,
  WireRequest,
  WireResponse,
} from '@resumewatch/wire';
import { BoundedMap } from '@resumewatch/bounded';
import {
  BrokenRequests,
  DEFAULT_REISSUE_WINDOW_MS,
  isTaskIdMethod,
  keyedArgumentsDigest,
  taskFactsOfAnswer,
  taskFactsOfNotification,
} from '@resumewatch/wire';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_EVENT_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_GUARD_PROOF,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REATTACH_TRIGGER,
  ATTR_MCP_REQUEST_ARGUMENTS_DIGEST,
  ATTR_MCP_REQUEST_INPUT_ROUND,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_PREVIOUS_ID,
  ATTR_MCP_STREAM_RESUMED_FROM_ID,
  ATTR_MCP_TERMINAL_DELIVERY,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_OUTCOME,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_REQUEST_RECOVERY,
  ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_REQUESTED,
  ATTR_NETWORK_PROTOCOL_NAME,
  ATTR_NETWORK_TRANSPORT,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  RequestRecovery,
  ResumeEvidence,
  ResumeOutcome,
  StreamKind,
  resumeVerdict,
  verdictAtRequestEnd,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_LISTENING_REFUSED,
  SPAN_STREAM_RESUME,
  SPAN_TASK_STATUS,
  ErrorType,
  ATTR_MCP_STREAM_RETRY_MS,
  ATTR_MCP_CLIENT_INSTANCE_ID,
  ATTR_CLIENT_ADDRESS,
  LISTENING_CLOSED_AT_ONCE_MS,
} from './semconv.js';
import { addTaskFacts, requestSpanName } from './task-attributes.js';
import {
  ServerAttributes,
  addTargetAttributes,
  addTargetName,
  errorType,
  initializeVersion,
  isToolError,
  nowMs,
  setError,
} from './span-util.js';
import type { TracerSource } from './tracer-source.js';
import { isRecordTracer } from './record-tracer.js';
import type { RecorderStats } from './types.js';
import { HeldPolls } from './held-polls.js';
import { traceContextHeaders } from './trace-propagation.js';
import { fetchInstrumentedBelow } from './fetch-instrumented-below.js';
import { createIdRecorder } from './id-policy.js';

/** Sessionless listening streams' last event ids kept (listeningCursors), and for how long. */
const MAX_LISTENING_CURSORS = 1_000;
const LISTENING_CURSOR_RETENTION_MS = 10 * 60_000;

export interface SpanRecorderOptions {
  tracer: TracerSource;
  observer: WireObserver;
  /** A request's deadline: its span ends with `timeout`, and a silent resume of it is an empty replay. */
  requestTimeoutMs: number;
  /** The key of the request arguments digest (the id policy's HMAC key). Default: the process's random key. */
  digestKey?: string | Uint8Array;
  /** How long a broken 2026-07-28 request waits for its re-issue. Default DEFAULT_REISSUE_WINDOW_MS. */
  reissueWindowMs?: number;
  /** At a proxy: most requests kept open after their client's connection dropped. Default 10,000. */
  maxClientDropped?: number;
}

/** An open request span, as a snapshot keeps it (SpanRecorder.openRequestSpans, reopenRequest). */
export interface OpenRequestSpan {
  readonly record: RequestRecord;
  readonly traceId: string;
  readonly spanId: string;
  /** Unix ms: when its span ends with `timeout`. */
  readonly deadline: number;
  readonly protocolVersion: string | undefined;
  /** A stream of it ended without its terminal, and whether the client held an event id of it then. */
  readonly broken: boolean;
  readonly cursor: boolean;
  /** It was resumed, and what its last resume delivered (the detector's evidence at its end). */
  readonly resumed: boolean;
  readonly lastResume: ResumeOutcome | undefined;
}

interface RequestState {
  readonly record: RequestRecord;
  /** Undefined once the span ended; the span context stays to parent late terminal and resume spans. */
  span: Span | undefined;
  readonly spanContext: SpanContext;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Known from the request headers, or from the initialize response. */
  sessionId: string | undefined;
  /** The protocol version its span carries (ATTR_MCP_PROTOCOL_VERSION), if any. */
  protocolVersion: string | undefined;
  /** The exchange's 2026-07-28 era (its own version, not the client's): a stream that ends without the result loses it. */
  readonly stateless: boolean;
  /**
   * Its key among broken requests awaiting their re-issue: the arguments digest (tools/call,
   * prompts/get, resources/read), within its client's scope at a proxy.
   */
  readonly reissueKey: string | undefined;
  /**
   * Session era: a stream of it ended (clean or broken, not closed by the client) without its
   * terminal, and whether the client held an event id of it then (a cursor to resume from).
   */
  broken: boolean;
  cursor: boolean;
  /** It was resumed (a GET with Last-Event-ID whose cursor is its stream's), and its last resume's emitted outcome. */
  resumed: boolean;
  lastResume: ResumeOutcome | undefined;
}

/** A broken request awaiting its re-issue: its span, and the idempotency key it carried (ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY). */
interface FirstAttempt {
  readonly context: SpanContext;
  readonly idempotencyKey: string | undefined;
}

/** A keyed call answered with a task (`keyedTasks`): the first attempt of a later call with its work and key. */
interface KeyedTask extends FirstAttempt {
  readonly taskId: string;
}

/** Requests a proxy keeps open after their client's connection dropped (see `SpanRecorder.clientDropped`). */
const MAX_CLIENT_DROPPED = 10_000;

/**
 * How a request ended without its terminal, for a resume of it still open: at its deadline or by an
 * abort (a `continuation` then was a partial replay), or cancelled (it stays a continuation).
 */
type RequestEnd = typeof ErrorType.TIMEOUT | typeof ErrorType.ABORTED | typeof ErrorType.CANCELLED;

/**
 * One HTTP request that reattaches a session or resumes a stream. Its spans are created when their
 * outcome is known (with the recorded start time), so that a cursor the observer could only attribute
 * from the replayed terminal still parents them to the request they concern.
 */
interface Attempt {
  readonly req: WireRequest;
  readonly active: Context;
  readonly startTime: number;
  /** The stream the cursor was taken from. */
  readonly from: StreamRecord | undefined;
  /** The request the cursor (or the POST) concerns: from the observer, or from the first replayed terminal. */
  concerned: RequestRecord | undefined;
  terminalObserved: boolean;
  responseTime: number | undefined;
  status: number | undefined;
  /** The request's stream or the session's listening stream; undefined when the cursor could not be placed. */
  kind: StreamKind | undefined;
  /** The verdict, once taken: a continuation waits here for the terminal or the stream's end. */
  verdict: ResumeVerdict | undefined;
  /** JSON-RPC messages on the resumed stream when the span was emitted. */
  events: number;
  /** A terminal of a request the stream carries had arrived on it when the span was emitted. */
  replayedTerminal: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
  /**
   * The stream the server answered with (its `retry:`, for a listening stream's spans; its id is the
   * spans' ATTR_MCP_STREAM_ID, made when a span is: an open listening stream's attempt keeps no string).
   */
  stream: StreamRecord | undefined;
  /**
   * A listening stream's client sent its session's DELETE while the stream was open: a server that ends
   * the stream then ends it because the client gave the session up, not because it offers none.
   */
  sessionDeleted?: boolean;
}

/** The verdicts the recorder takes without looking at a stream. */
const NO_RESPONSE: ResumeVerdict = { outcome: ResumeOutcome.ERROR, evidence: ResumeEvidence.STATUS };
const GIVEN_UP: ResumeVerdict = { outcome: ResumeOutcome.ERROR, evidence: ResumeEvidence.REQUEST_END };
const DEADLINE_PASSED: ResumeVerdict = { outcome: ResumeOutcome.EMPTY_REPLAY, evidence: ResumeEvidence.DEADLINE };

/** What the spans of an attempt record besides the request: each absent when not known. */
interface Emitted {
  /** The resume's verdict; a reattach without a resume has none. */
  verdict?: ResumeVerdict | undefined;
  /** The error type of an attempt that failed (its status, the exception's name, ...). */
  error?: string | undefined;
  /** When the resume span ends: now, or when a held poll was held. */
  endTime?: number;
}

/** A `poll` resume span not emitted yet, with its recorded end. */
interface HeldPoll {
  readonly attempt: Attempt;
  readonly endTime: number;
}

/**
 * Turns the wire observer's events into the contract's spans. Per-request state lives in a WeakMap
 * keyed by the observer's request records (released with them); per-HTTP-request state is held until
 * the response headers arrive, per-stream state until the resume's verdict (`resumeVerdict` of
 * @resumewatch/semconv): a message, the body's end, the request's deadline or its end. A resumed
 * stream open and silent has no verdict, so no resume span yet.
 */
export class SpanRecorder implements WireListener {
  /** Spans are decided by terminals and by the events of resumed streams only. */
  readonly eventsWanted = 'deciding' as const;
  /** Makes stream ids unique across observers and processes. */
  private readonly prefix = randomBytes(6).toString('hex');
  private readonly tracer: TracerSource;
  private readonly observer: WireObserver;
  private readonly requestTimeoutMs: number;
  private readonly requests = new WeakMap<RequestRecord, RequestState>();
  /** Open request spans by session, so a DELETE of the session ends them. */
  private readonly openBySession = new Map<string, Set<RequestState>>();
  private readonly pending = new Map<WireRequest, Attempt>();
  /**
   * Resumed streams still open: silent ones (no verdict yet), and continuations of a request waiting
   * for its terminal on the stream (or the stream's end) so the span says what the resume delivered.
   */
  private readonly openResumes = new Map<StreamRecord, Attempt>();
  /**
   * Plain GETs of the listening stream answered with an event stream, until it ends: one ended at once with
   * no message is a refusal in all but status (listeningEnded). Weak: a stream the observer let go leaves.
   */
  private readonly openListens = new WeakMap<StreamRecord, Attempt>();
  /**
   * The last event ids of listening streams that named no session (a stateless server's priming events):
   * the observer places a cursor only within a session, so a GET resuming from one of these is known to
   * re-open the listening stream by this alone. Bounded; an id pushed out leaves its resume's kind unknown.
   */
  private readonly listeningCursors = new BoundedMap<string, true>(
    MAX_LISTENING_CURSORS,
    LISTENING_CURSOR_RETENTION_MS,
  );
  private readonly server = new ServerAttributes();
  /**
   * The latest `poll` of each unfinished request, emitted once the request's fate decides it: a poll when
   * its next resume starts or its terminal arrives; `empty_replay` (evidence `deadline`) when its deadline
   * passes first; `error` (evidence `request_end`) when the client gives it up. Without this a restarted
   * server that lost its buffer, after priming events, would leave nothing but valid-looking polls.
   */
  private readonly heldPolls = new HeldPolls<HeldPoll>((held, asPoll) => this.expirePoll(held, asPoll));
  private openRequests = 0;
  /** The deadlines of reopened requests (reopenRequest): the ones they had before the restart. */
  private readonly deadlines = new WeakMap<RequestState, number>();
  private readonly digestKey: string | Uint8Array;
  /**
   * This client's broken requests, by digest, awaiting their re-issue: 2026-07-28 requests, and, in the
   * session era, calls that asked for a task (a re-issue of one makes a second task).
   */
  private readonly broken: BrokenRequests<FirstAttempt>;
  /**
   * At a proxy: requests whose client's connection dropped before their result, kept open for the
   * client's resume, cancellation, re-issue, DELETE or their deadline. Capped: a client that drops
   * request after request holds no more than this many spans and timers; past the cap the oldest is
   * given up as a drop was before (ended `aborted`, naming no recovery: no verdict on what was not
   * watched to its end).
   */
  private readonly clientDropped: BoundedMap<RequestState, true>;
  /** Those of them that name their work (tools/call, prompts/get, resources/read), by digest, awaiting a re-issue. */
  private readonly droppedWork: BrokenRequests<RequestState>;
  /**
   * Calls that carried an idempotency key and were answered with a task, by digest and key: a later call
   * of this client with the same work and key re-issues it (ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY) even
   * when its reply was written whole. The key is the client's word that the two calls are one piece of
   * work; at a proxy, that is the only evidence of a reply its client dropped after it was written.
   */
  private readonly keyedTasks: BrokenRequests<KeyedTask>;
  /**
   * The task each of them created → its entry: once the task's outcome was delivered, or it was cancelled
   * or said gone, the key makes new work again (as the gateway's --enforce takes it) and the entry goes.
   * By task id alone (no client: a server's ids are its own; another client ending it only forgets a link).
   */
  private readonly keyedByTask: BoundedMap<string, string>;

  constructor(options: SpanRecorderOptions) {
    this.tracer = options.tracer;
    this.observer = options.observer;
    this.requestTimeoutMs = options.requestTimeoutMs;
    this.digestKey = options.digestKey ?? createIdRecorder({ idPolicy: 'raw' }).digestKey;
    this.broken = new BrokenRequests({ windowMs: options.reissueWindowMs ?? DEFAULT_REISSUE_WINDOW_MS });
    this.droppedWork = new BrokenRequests({ windowMs: options.reissueWindowMs ?? DEFAULT_REISSUE_WINDOW_MS });
    this.keyedTasks = new BrokenRequests({ windowMs: options.reissueWindowMs ?? DEFAULT_REISSUE_WINDOW_MS });
    this.keyedByTask = new BoundedMap(10_000, options.reissueWindowMs ?? DEFAULT_REISSUE_WINDOW_MS, Date.now);
    this.clientDropped = new BoundedMap<RequestState, true>(
      options.maxClientDropped ?? MAX_CLIENT_DROPPED,
      Infinity,
      Date.now,
      (state) => this.dropForgotten(state),
    );
  }

  stats(): RecorderStats {
    return {
      openRequests: this.openRequests,
      openResumes: this.openResumes.size,
      pendingHttp: this.pending.size,
      heldPolls: this.heldPolls.size,
      heldPollsEvicted: this.heldPolls.evictions,
    };
  }

  /**
   * @internal For a snapshot (the gateway's --state-file), never on the per-event path: the open spans
   * of session-era requests, with their deadline and what the wire showed of their streams.
   */
  openRequestSpans(): OpenRequestSpan[] {
    const open: OpenRequestSpan[] = [];
    for (const states of this.openBySession.values()) {
      for (const state of states) if (state.span && !state.stateless) open.push(this.openSpanOf(state));
    }
    return open;
  }

  /**
   * @internal For a snapshot taken in steps (the gateway's --state-file): the open span of `record`, as
   * openRequestSpans lists it, looked up alone (no walk over every open span).
   */
  openRequestSpan(record: RequestRecord): OpenRequestSpan | undefined {
    const state = this.requests.get(record);
    if (!state?.span || state.stateless || !this.openBySession.get(state.sessionId!)?.has(state)) return undefined;
    return this.openSpanOf(state);
  }

  private openSpanOf(state: RequestState): OpenRequestSpan {
    return {
      record: state.record,
      traceId: state.spanContext.traceId,
      spanId: state.spanContext.spanId,
      deadline: this.deadlines.get(state) ?? state.record.startedAt + this.requestTimeoutMs,
      protocolVersion: state.protocolVersion,
      broken: state.broken,
      cursor: state.cursor,
      resumed: state.resumed,
      lastResume: state.lastResume,
    };
  }

  /**
   * @internal At a shutdown that kept the open request spans (openRequestSpans) for the next process:
   * they are its to end now, so this one lets them go unended. The shutdown closes their clients'
   * connections next, which would otherwise end each as the client's abort (and one whose stream had
   * been resumed as a lost result) for a cut the gateway made itself.
   */
  handOverRequestSpans(): void {
    for (const [sessionId, states] of [...this.openBySession]) {
      for (const state of [...states]) {
        if (!state.span || state.stateless) continue;
        clearTimeout(state.timer);
        state.timer = undefined;
        state.span = undefined;
        this.openRequests--;
        states.delete(state);
      }
      if (states.size === 0) this.openBySession.delete(sessionId);
    }
  }

  /**
   * @internal After a restart: the span of a request that was awaiting its result when the previous
   * process stopped, opened again in its trace (a child of the span the restart cut) from its start,
   * to end at the deadline it had (`timeout`, saying what the client did: a lost result) or at its
   * terminal. `url` is the server's, for the span's server attributes.
   */
  reopenRequest(open: OpenRequestSpan, url: string): void {
    const record = open.record;
    if (this.requests.has(record) || record.terminalCount > 0) return;
    const attributes: Attributes = {
      [ATTR_MCP_METHOD_NAME]: record.method,
      [ATTR_JSONRPC_REQUEST_ID]: record.id,
      [ATTR_NETWORK_TRANSPORT]: 'tcp',
      [ATTR_NETWORK_PROTOCOL_NAME]: 'http',
      [ATTR_MCP_SESSION_ID]: record.sessionId,
    };
    this.server.addTo(attributes, url);
    if (open.protocolVersion !== undefined) attributes[ATTR_MCP_PROTOCOL_VERSION] = open.protocolVersion;
    addTargetAttributes(attributes, record.method, record.target);
    const parent = trace.setSpanContext(otelContext.active(), {
      traceId: open.traceId,
      spanId: open.spanId,
      traceFlags: 1,
      isRemote: true,
    });
    if (isTaskIdMethod(record.method) && record.target !== undefined) attributes[ATTR_MCP_TASK_ID] = record.target;
    const span = this.tracer().startSpan(
      requestSpanName(record.method, record.target),
      { kind: SpanKind.CLIENT, attributes, startTime: record.startedAt },
      parent,
    );
    const state: RequestState = {
      record,
      span,
      spanContext: span.spanContext(),
      timer: undefined,
      sessionId: record.sessionId,
      protocolVersion: open.protocolVersion,
      stateless: false,
      reissueKey: undefined,
      broken: open.broken,
      cursor: open.cursor,
      resumed: open.resumed,
      lastResume: open.lastResume,
    };
    state.timer = setTimeout(() => this.endRequest(state, ErrorType.TIMEOUT), Math.max(0, open.deadline - Date.now()));
    state.timer.unref();
    this.deadlines.set(state, open.deadline);
    this.requests.set(record, state);
    this.openRequests++;
    this.trackSession(state);
  }

  /** The contract stream id (ATTR_MCP_STREAM_ID) of a stream seen by this recorder's observer. */
  streamId(stream: StreamRecord): string {
    return `${this.prefix}-${stream.id}`;
  }

  onRequest(req: WireRequest): void {
    try {
      if (req.cancels.length > 0) this.cancelled(req.cancels);
      if (req.httpMethod === 'DELETE' && req.sessionId !== undefined) {
        this.listeningDeleted(req);
        this.sessionEnded(req.sessionId);
      }
      // A plain GET of the listening stream (a session's, or a stateless server's) is followed too: only its
      // refusal makes a span (SPAN_LISTENING_REFUSED): a status other than 2xx, or a stream ended at once empty.
      const listen = req.httpMethod === 'GET';
      if (req.requests.length === 0 && !req.reattach && !req.resume && !listen) return;
      const active = otelContext.active();
      if (req.requests.length > 0) {
        const tracer = this.tracer();
        for (const record of req.requests) this.startRequest(tracer, req, record, active);
      }
      if (req.reattach || req.resume || listen) this.startAttempt(req, active);
    } catch (error) {
      diag.error('resumewatch: recording a request failed', error);
    }
  }

  /**
   * The trace context of the request's span (its first request's, in a batch), for the server to continue.
   * None for a request sent through a fetch that something instruments below (undici's channel has a
   * subscriber): that instrumentation appends its own traceparent, and two fold into one value at the
   * server, which its propagator refuses (the server's span would start a trace of its own). Its span is
   * this one's child (sendWithin), so its header carries this trace. A proxy sends with its own client
   * and always gets the headers.
   */
  requestHeaders(req: WireRequest, sender: RequestSender): Record<string, string> | undefined {
    if (sender === 'fetch' && fetchInstrumentedBelow()) return undefined;
    const state = this.firstRequestOf(req);
    return state === undefined ? undefined : traceContextHeaders(state.spanContext);
  }

  /** Sends a request within its span's context: an HTTP client span of it below is the request span's child. */
  sendWithin<T>(req: WireRequest, send: () => T): T {
    const state = this.firstRequestOf(req);
    if (state === undefined) return send();
    return otelContext.with(trace.setSpanContext(otelContext.active(), state.spanContext), send);
  }

  private firstRequestOf(req: WireRequest): RequestState | undefined {
    const first = req.requests[0];
    return first === undefined ? undefined : this.requests.get(first);
  }

  onRefused(req: WireRequest, error: unknown): void {
    // A deciding listener (the guard, called before this one) refused it before onRequest reached this recorder.
    if ((req.reattach || req.resume) && !this.pending.has(req)) this.startAttempt(req, otelContext.active());
    this.failed(req, errorType(error));
  }

  onFetchError(req: WireRequest, error: unknown): void {
    this.failed(req, errorType(error), true);
  }

  onResponse(req: WireRequest, res: WireResponse): void {
    try {
      if (req.requests.length > 0) this.requestsAnswered(req, res);
      const attempt = this.pending.get(req);
      if (attempt) this.attemptAnswered(attempt, res);
    } catch (error) {
      diag.error('resumewatch: recording a response failed', error);
    }
  }

  onEvent(event: WireEvent): void {
    try {
      // The first message on a silent resumed stream is its verdict; counts are the stream record's.
      const stream = event.stream;
      if (this.openResumes.size > 0 && stream.messageEvents > 0 && stream.isResume) {
        const attempt = this.openResumes.get(stream);
        if (attempt?.verdict === undefined) {
          if (attempt) this.settleSilent(stream, attempt, {});
        } else if (stream.terminalEvents > 0) {
          // The resumed request's terminal arrived on its resumed stream: what the resume delivered is known.
          this.finish(stream, attempt);
        }
      }
    } catch (error) {
      diag.error('resumewatch: recording a resume failed', error);
    }
    const terminals = event.terminals;
    if (terminals.length === 0) {
      // Status notifications are told on task streams only: no other event's messages are looked at.
      if (event.request.taskNotices || event.request.session?.tasks === true) {
        try {
          this.taskNotices(event);
        } catch (error) {
          diag.error('resumewatch: recording a task status failed', error);
        }
      }
      return;
    }
    try {
      for (let i = 0; i < terminals.length; i++) this.recordTerminal(event, terminals[i]!);
    } catch (error) {
      diag.error('resumewatch: recording an event failed', error);
    }
  }

  onStreamEnd(req: WireRequest, stream: StreamRecord, end: StreamEnd, error: unknown): void {
    try {
      const listening =
        stream.kind === StreamKind.LISTENING || this.openResumes.get(stream)?.kind === StreamKind.LISTENING;
      if (listening && req.sessionId === undefined && stream.lastEventId !== undefined)
        this.listeningCursors.set(stream.lastEventId, true);
      if (stream.kind === StreamKind.LISTENING && !stream.isResume) {
        const attempt = this.openListens.get(stream);
        if (attempt) {
          this.openListens.delete(stream);
          this.listeningEnded(attempt, stream, end);
        }
      }
      if (this.openResumes.size > 0) {
        const attempt = this.openResumes.get(stream);
        // The client closing a resumed stream gives its request up (below): what it replayed is decided now.
        if (attempt?.verdict) this.finish(stream, attempt, undefined, end === 'abort' ? ErrorType.ABORTED : undefined);
        else if (attempt)
          this.settleSilent(
            stream,
            attempt,
            { ended: end },
            end === 'clean' ? undefined : end === 'abort' ? ErrorType.ABORTED : errorType(error),
          );
      }
      // A stream that errored or closed may be resumed (session era); only a cancelled one gives its
      // requests up. In the 2026-07-28 era nothing resumes: a stream that ended without the result lost it.
      // At a proxy an abort is its client's connection gone (or the proxy's idle timer): in the session era
      // a break like any other, since a disconnection is no cancellation (2025-11-25: the client may resume,
      // or send notifications/cancelled); what it does about it is told at the request's end.
      const clientGone = end === 'abort' && req.clientScope !== undefined;
      if (end !== 'abort' || clientGone) {
        // A body the observer could not read (its Content-Encoding) says nothing of its requests' results.
        if (stream.unread) return;
        for (const record of stream.requests) {
          const state = this.requests.get(record);
          if (!state?.span || record.terminalCount > 0) continue;
          if (state.stateless) this.broke(state, clientGone ? ErrorType.ABORTED : ErrorType.STREAM_BROKEN);
          else if (stream.kind !== StreamKind.LISTENING) {
            // Resumable, if the client holds an event id of it; what it does about it is told at the request's end.
            if (clientGone) {
              this.clientDropped.set(state, true);
              if (state.reissueKey !== undefined) this.droppedWork.noteBroken(state.reissueKey, state);
            }
            state.broken = true;
            // A task call's reply lost on the client's side (the stream broke before it): a later call
            // with its digest re-issues it (ATTR_MCP_REQUEST_REISSUE_OF_*), unless a resume brings the reply.
            if (!clientGone && state.record.taskRequested) this.noteBroken(state);
            if (stream.deliveredEventId !== undefined) state.cursor = true;
            // A break (neither a clean end nor the client's drop) with no cursor, ever: nothing resumes it.
            else if (end !== 'clean' && !clientGone && !state.cursor) this.unresumable(state);
          }
        }
        return;
      }
      for (const record of stream.requests) {
        const state = this.requests.get(record);
        if (state?.span && state.stateless && record.terminalCount === 0) this.broke(state, ErrorType.ABORTED);
        else if (state?.span) this.endRequest(state, ErrorType.ABORTED);
        this.givenUpPoll(this.heldPolls.take(record), ErrorType.ABORTED);
      }
    } catch (failure) {
      diag.error('resumewatch: recording a stream end failed', failure);
    }
  }

  private startRequest(tracer: Tracer, req: WireRequest, record: RequestRecord, parent: Context): void {
    const attributes: Attributes = {
      [ATTR_MCP_METHOD_NAME]: record.method,
      [ATTR_JSONRPC_REQUEST_ID]: record.id,
      [ATTR_NETWORK_TRANSPORT]: 'tcp',
      [ATTR_NETWORK_PROTOCOL_NAME]: 'http',
    };
    this.server.addTo(attributes, req.url);
    if (req.sessionId !== undefined) attributes[ATTR_MCP_SESSION_ID] = req.sessionId;
    // An initialize's own version is the one it asks for (the negotiated one replaces it at its result).
    const version = req.protocolVersion ?? initializeVersion(record.method, initializeParams(req, record));
    if (version !== undefined) attributes[ATTR_MCP_PROTOCOL_VERSION] = version;
    const target = record.target;
    addTargetAttributes(attributes, record.method, target);
    // Tasks: a request naming one carries its id; a call that asked for one says so.
    if (isTaskIdMethod(record.method) && target !== undefined) attributes[ATTR_MCP_TASK_ID] = target;
    if (record.taskRequested) attributes[ATTR_MCP_TASK_REQUESTED] = true;
    const stateless = protocolEra(req.protocolVersion) === ProtocolEra.STATELESS;
    const links = this.reissueAttributes(attributes, req, record, stateless);
    const span = this.startUnder(
      tracer,
      requestSpanName(record.method, target),
      // Two literals, not a spread of `{ links }` or `{}`: a spread copies through the runtime and makes an object more.
      links ? { kind: SpanKind.CLIENT, attributes, links } : { kind: SpanKind.CLIENT, attributes },
      undefined,
      parent,
    );
    const state: RequestState = {
      record,
      span,
      spanContext: span.spanContext(),
      timer: undefined,
      sessionId: req.sessionId,
      protocolVersion: version,
      stateless,
      reissueKey: reissueKeyOf(req, attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST] as string | undefined),
      broken: false,
      cursor: false,
      resumed: false,
      lastResume: undefined,
    };
    state.timer = setTimeout(() => this.endRequest(state, ErrorType.TIMEOUT), this.requestTimeoutMs);
    state.timer.unref();
    this.requests.set(record, state);
    this.openRequests++;
    if (state.sessionId !== undefined) this.trackSession(state);
    if (!stateless && !record.inputRound && state.reissueKey !== undefined && this.droppedWork.size > 0)
      this.reissuedAfterDrop(state.reissueKey);
  }

  /** Pushed out of `clientDropped` by its cap (or let go when it ended): given up with no verdict, if still open. */
  private dropForgotten(state: RequestState): void {
    if (!state.span) return;
    state.broken = false;
    state.resumed = false;
    this.endRequest(state, ErrorType.ABORTED);
  }

  /**
   * At a proxy, session era: this request asks for the same work (same client, same arguments digest,
   * within the re-issue window) as one whose client's connection dropped before its result: the client
   * recovered the call by asking again, so the dropped one is given up with no verdict on its result.
   */
  private reissuedAfterDrop(key: string): void {
    const dropped = this.droppedWork.takeReissued(key);
    if (!dropped?.span || dropped.record.terminalCount > 0) return;
    dropped.broken = false;
    dropped.resumed = false;
    this.endRequest(dropped, ErrorType.ABORTED);
  }

  /**
   * The arguments digest, the input round, and (2026-07-28) the broken request of this client this one
   * re-issues: its span ids as attributes, and a link to it.
   */
  private reissueAttributes(
    attributes: Attributes,
    req: WireRequest,
    record: RequestRecord,
    stateless: boolean,
  ): Link[] | undefined {
    // Only a request that names its work (tools/call, prompts/get, resources/read) can be re-issued:
    // the observer digested that work when it described the request (the record keeps no body).
    if (record.workDigest === undefined) return undefined;
    const digest = keyedArgumentsDigest(record.workDigest, this.digestKey);
    attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST] = digest;
    // A Multi Round-Trip round answers the server's input request: the same call going on, not a re-issue.
    if (record.inputRound) {
      attributes[ATTR_MCP_REQUEST_INPUT_ROUND] = true;
      return undefined;
    }
    // 2026-07-28: any call; in the session era, a call that asks for a task (its re-issue is a second task).
    if (!stateless && !record.taskRequested) return undefined;
    const key = reissueKeyOf(req, digest)!;
    let first = this.broken.takeReissued(key);
    // At a proxy, session era: a task call whose client dropped before its reply (its span still open).
    if (first === undefined && !stateless && this.droppedWork.size > 0) {
      const dropped = this.droppedWork.peek(key);
      if (dropped?.record.taskRequested)
        first = { context: dropped.spanContext, idempotencyKey: dropped.record.idempotencyKey };
    }
    // A call with the key of an earlier call of the same work that was answered with a task.
    if (first === undefined && record.idempotencyKey !== undefined && this.keyedTasks.size > 0)
      first = this.keyedTasks.takeReissued(keyedTaskKey(key, record.idempotencyKey));
    if (first === undefined) return undefined;
    attributes[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID] = first.context.traceId;
    attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID] = first.context.spanId;
    if (first.idempotencyKey !== undefined && first.idempotencyKey === record.idempotencyKey)
      attributes[ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY] = true;
    return [{ context: first.context }];
  }

  /** A request that may be re-issued lost its reply: it awaits its re-issue (see `broken`). */
  private noteBroken(state: RequestState): void {
    if (state.reissueKey === undefined) return;
    this.broken.noteBroken(state.reissueKey, {
      context: state.spanContext,
      idempotencyKey: state.record.idempotencyKey,
    });
  }

  /** A 2026-07-28 request lost its stream before its result: its span ends, and it awaits its re-issue. */
  private broke(state: RequestState, type: string): void {
    this.noteBroken(state);
    this.endRequest(state, type);
  }

  private trackSession(state: RequestState): void {
    let open = this.openBySession.get(state.sessionId!);
    if (!open) this.openBySession.set(state.sessionId!, (open = new Set()));
    open.add(state);
  }

  /** The client sent `notifications/cancelled` for these requests. */
  private cancelled(records: readonly RequestRecord[]): void {
    for (const record of records) {
      const state = this.requests.get(record);
      if (state?.span) this.endRequest(state, ErrorType.CANCELLED);
      this.requestGivenUp((attempt) => attempt.concerned === record, ErrorType.CANCELLED);
      this.givenUpPoll(this.heldPolls.take(record), ErrorType.CANCELLED);
    }
  }

  /**
   * The client deleted the session: its listening streams still open end because of it (the server closes
   * a deleted session's streams, whenever that comes), so their end is no refusal (listeningEnded). The
   * DELETE leaves before the server can close anything for it: the mark always precedes that end.
   */
  private listeningDeleted(req: WireRequest): void {
    // The session's recent streams (capped by the observer): its listening GETs among them.
    for (const stream of req.session?.streams ?? []) {
      const attempt = this.openListens.get(stream);
      if (attempt) attempt.sessionDeleted = true;
    }
  }

  /** The client deleted the session: its open requests end, and the silent resumes of them. */
  private sessionEnded(sessionId: string): void {
    const open = this.openBySession.get(sessionId);
    if (open) for (const state of [...open]) this.endRequest(state, ErrorType.ABORTED);
    this.requestGivenUp(
      (attempt) => attempt.req.sessionId === sessionId && attempt.kind !== StreamKind.LISTENING,
      ErrorType.ABORTED,
    );
    for (const held of this.heldPolls.takeSession(sessionId)) this.givenUpPoll(held, ErrorType.ABORTED);
  }

  /** The client gave requests up: cancelled them (`cancelled`), or deleted their session (`aborted`). */
  private requestGivenUp(concerns: (attempt: Attempt) => boolean, end: RequestEnd): void {
    for (const [stream, attempt] of [...this.openResumes]) {
      if (!concerns(attempt)) continue;
      if (attempt.verdict) this.finish(stream, attempt, undefined, end);
      else this.settleSilent(stream, attempt, { requestEnded: true }, ErrorType.CANCELLED);
    }
  }

  private requestsAnswered(req: WireRequest, res: WireResponse): void {
    const ok = res.status >= 200 && res.status < 300;
    // Indexed: no array iterator and result object per request where the loop runs unoptimized.
    for (let i = 0; i < req.requests.length; i++) {
      const state = this.requests.get(req.requests[i]!);
      if (!state?.span) continue;
      if (state.sessionId === undefined && res.sessionId !== undefined) {
        state.sessionId = res.sessionId;
        state.span.setAttribute(ATTR_MCP_SESSION_ID, res.sessionId);
        this.trackSession(state);
      }
      // On every answered request: the detector counts a request in its era only when the server accepted it.
      state.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, res.status);
      if (!ok) this.endRequest(state, String(res.status));
    }
  }

  private startAttempt(req: WireRequest, active: Context): void {
    const resume = req.resume;
    const kind = resume
      ? (resume.from?.kind ??
        (req.sessionId === undefined && this.listeningCursors.has(resume.lastEventId)
          ? StreamKind.LISTENING
          : undefined))
      : req.httpMethod === 'GET'
        ? StreamKind.LISTENING
        : req.httpMethod === 'POST'
          ? StreamKind.REQUEST
          : undefined;
    const listening = kind === StreamKind.LISTENING;
    const attempt: Attempt = {
      req,
      active,
      startTime: nowMs(),
      from: resume?.from,
      // The listening stream concerns no request, whatever is replayed on it.
      concerned: listening ? undefined : resume ? resume.requests[0] : req.requests[0],
      terminalObserved: !listening && (resume?.terminalObserved ?? false),
      responseTime: undefined,
      status: undefined,
      kind,
      verdict: undefined,
      events: 0,
      replayedTerminal: false,
      timer: undefined,
      stream: undefined,
    };
    attempt.timer = setTimeout(() => this.failed(req, ErrorType.TIMEOUT), this.requestTimeoutMs);
    attempt.timer.unref();
    this.pending.set(req, attempt);
    const concerned = attempt.concerned && this.requests.get(attempt.concerned);
    if (resume && concerned) concerned.resumed = true;
    // The request's next resume: its held poll was a poll.
    if (resume && attempt.concerned) this.emitHeldPoll(this.heldPolls.take(attempt.concerned));
  }

  private attemptAnswered(attempt: Attempt, res: WireResponse): void {
    this.pending.delete(attempt.req);
    clearTimeout(attempt.timer);
    attempt.timer = undefined;
    attempt.responseTime = nowMs();
    attempt.status = res.status;
    attempt.stream = res.stream;
    if (res.stream && attempt.req.resume) attempt.kind = res.stream.kind ?? attempt.kind;
    const ok = res.status >= 200 && res.status < 300;
    const resume = attempt.req.resume;
    if (!resume) {
      this.emit(attempt, { error: ok ? undefined : String(res.status) });
      // Its stream is followed to its end: one the server ends at once with no message refused it.
      if (ok && res.stream && attempt.kind === StreamKind.LISTENING && res.stream.format === 'sse')
        this.openListens.set(res.stream, attempt);
    } else if (ok && res.stream) {
      const stream = res.stream;
      this.openResumes.set(stream, attempt);
      const deadline = this.deadlineOf(attempt);
      if (deadline !== undefined) {
        attempt.timer = setTimeout(
          () => this.settleSilent(stream, attempt, { deadlinePassed: true }),
          Math.max(0, deadline - Date.now()),
        );
        attempt.timer.unref();
      }
    } else {
      // A 2xx without a body ended at once; any other status decides by itself.
      const verdict = resumeVerdict({
        status: res.status,
        messages: 0,
        ended: 'clean',
        pollingAnnounced: resume.from?.pollingAnnounced ?? false,
        deadlinePassed: false,
        requestEnded: false,
      })!;
      if (verdict.outcome === ResumeOutcome.POLL && this.holdPoll(attempt, verdict)) return;
      this.emit(attempt, { verdict, error: ok ? undefined : String(res.status) });
    }
  }

  /** When the request a silent resume concerns reaches its deadline; none for the listening stream. */
  private deadlineOf(attempt: Attempt): number | undefined {
    if (attempt.kind === StreamKind.LISTENING) return undefined;
    const record = attempt.concerned;
    const state = record && this.requests.get(record);
    const started = record ? record.startedAt : attempt.req.startedAt;
    // A request this recorder started has its span's timer; one it did not (another process's) counts from the resume.
    return (state ? started : Math.max(started, attempt.req.startedAt)) + this.requestTimeoutMs;
  }

  /**
   * No response: a network error (`lostReply`: the request may have reached the server), a refusal (by
   * the guard or another listener) or the headers timeout.
   */
  private failed(req: WireRequest, type: string, lostReply = false): void {
    try {
      for (const record of req.requests) {
        const state = this.requests.get(record);
        if (!state?.span) continue;
        // A task call that got no response (the connection dropped before the handle): a later call with its digest re-issues it.
        if (lostReply && record.taskRequested && req.clientScope === undefined) this.noteBroken(state);
        this.endRequest(state, type);
      }
      const attempt = this.pending.get(req);
      if (!attempt) return;
      this.pending.delete(req);
      clearTimeout(attempt.timer);
      this.emit(attempt, { verdict: NO_RESPONSE, error: type });
    } catch (failure) {
      diag.error('resumewatch: recording a failed request failed', failure);
    }
  }

  /** Takes the verdict of a silent resumed stream, if what happened gives one, and emits its spans. */
  private settleSilent(
    stream: StreamRecord,
    attempt: Attempt,
    seen: { ended?: StreamEnd; deadlinePassed?: boolean; requestEnded?: boolean },
    error?: string,
  ): void {
    if (this.openResumes.get(stream) !== attempt || attempt.verdict) return;
    const verdict = resumeVerdict({
      status: attempt.status ?? 0,
      messages: stream.messageEvents,
      ended: seen.ended,
      pollingAnnounced: stream.pollingAnnounced,
      deadlinePassed: seen.deadlinePassed ?? false,
      requestEnded: seen.requestEnded ?? false,
    });
    if (!verdict) return;
    clearTimeout(attempt.timer);
    attempt.timer = undefined;
    attempt.verdict = verdict;
    // A continuation of a request's stream is emitted with the request's terminal on it (or the
    // stream's end); one of the listening stream at once: it has no terminal of its own.
    if (
      verdict.outcome === ResumeOutcome.CONTINUATION &&
      attempt.kind !== StreamKind.LISTENING &&
      stream.terminalEvents === 0
    ) {
      // It waits for the terminal, or the request's end: its deadline (here too, for a request this
      // recorder no longer holds open, as a proxy's whose client went away and came back with the cursor).
      const deadline = this.deadlineOf(attempt);
      if (deadline !== undefined) {
        attempt.timer = setTimeout(
          () => this.finish(stream, attempt, undefined, ErrorType.TIMEOUT),
          Math.max(0, deadline - Date.now()),
        );
        attempt.timer.unref();
      }
      return;
    }
    this.finish(stream, attempt, verdict.outcome === ResumeOutcome.ERROR ? error : undefined);
  }

  /**
   * Emits the spans of a resume whose verdict is taken. `requestEnd`: its request ends now (its deadline,
   * an abort, a cancellation); a continuation that did not bring the request's terminal is then decided
   * again (`verdictAtRequestEnd`): at the deadline or an abort it was a partial replay.
   */
  private finish(stream: StreamRecord, attempt: Attempt, error?: string, requestEnd?: RequestEnd): void {
    if (this.openResumes.get(stream) !== attempt) return;
    this.openResumes.delete(stream);
    clearTimeout(attempt.timer);
    attempt.timer = undefined;
    attempt.events = stream.messageEvents;
    attempt.replayedTerminal = stream.terminalEvents > 0;
    const record = attempt.concerned;
    if (
      attempt.verdict !== undefined &&
      requestEnd !== undefined &&
      requestEnd !== ErrorType.CANCELLED &&
      record !== undefined &&
      record.terminalCount === 0
    )
      attempt.verdict = verdictAtRequestEnd(attempt.verdict, requestEnd === ErrorType.TIMEOUT);
    const first = stream.requests[0];
    if (attempt.concerned === undefined && attempt.kind === undefined && first !== undefined) {
      // The cursor was not one the observer could place; the first replayed terminal named its request
      // (the stream carried none before it), and was a duplicate if its first terminal came on another stream.
      attempt.concerned = first;
      attempt.terminalObserved = first.firstTerminalStream !== stream;
    }
    if (attempt.verdict?.outcome === ResumeOutcome.POLL && this.holdPoll(attempt, attempt.verdict)) return;
    this.emit(attempt, { verdict: attempt.verdict, error });
  }

  /** The attributes every span of an attempt carries. */
  private attemptAttributes(attempt: Attempt): Attributes {
    const { req, concerned } = attempt;
    const base: Attributes = {
      [ATTR_HTTP_REQUEST_METHOD]: req.httpMethod,
      [ATTR_MCP_STREAM_ID]: attempt.stream ? this.streamId(attempt.stream) : this.responseId(req),
    };
    if (req.sessionId !== undefined) base[ATTR_MCP_SESSION_ID] = req.sessionId;
    if (req.protocolVersion !== undefined) base[ATTR_MCP_PROTOCOL_VERSION] = req.protocolVersion;
    if (concerned) base[ATTR_JSONRPC_REQUEST_ID] = concerned.id;
    if (attempt.kind !== undefined) base[ATTR_MCP_STREAM_KIND] = attempt.kind;
    if (attempt.status !== undefined) base[ATTR_HTTP_RESPONSE_STATUS_CODE] = attempt.status;
    if (attempt.kind === StreamKind.LISTENING) {
      // Without a session, who re-opened the stream: the proxy's client, or this recorder's (its client process).
      if (req.sessionId === undefined) {
        if (req.clientAddress !== undefined) base[ATTR_CLIENT_ADDRESS] = req.clientAddress;
        else base[ATTR_MCP_CLIENT_INSTANCE_ID] = this.prefix;
      }
      // The pace the server asked for: a re-open at least that long after the stream's end keeps it.
      const retry = attempt.stream?.retryMs;
      if (retry !== undefined) base[ATTR_MCP_STREAM_RETRY_MS] = retry;
    }
    // What the guard did about the request (refused it, reported its resume failed), decided before this recorder saw it.
    if (req.guardAction !== undefined) base[ATTR_MCP_GUARD_ACTION] = req.guardAction;
    if (req.guardProof !== undefined) base[ATTR_MCP_GUARD_PROOF] = req.guardProof;
    return base;
  }

  /**
   * A plain GET of the listening stream answered 2xx, its stream ended: ended by the server (not the
   * client's abort, nor after the client's DELETE of its session) within LISTENING_CLOSED_AT_ONCE_MS with
   * no JSON-RPC message, the server offered the stream in name only (cline/cline#12119): a refusal, told
   * as one (SPAN_LISTENING_REFUSED), from the GET to the stream's end.
   */
  private listeningEnded(attempt: Attempt, stream: StreamRecord, end: StreamEnd): void {
    const endTime = nowMs();
    if (end === 'abort' || attempt.sessionDeleted || stream.unread || stream.messageEvents > 0) return;
    if (endTime - attempt.startTime > LISTENING_CLOSED_AT_ONCE_MS) return;
    const span = this.startUnder(
      this.tracer(),
      SPAN_LISTENING_REFUSED,
      { kind: SpanKind.CLIENT, attributes: this.attemptAttributes(attempt), startTime: attempt.startTime },
      undefined,
      attempt.active,
    );
    span.end(endTime);
  }

  /** Creates the reattach and resume spans of a finished attempt, with their recorded times. */
  private emit(attempt: Attempt, emitted: Emitted): void {
    const { verdict, error, endTime = nowMs() } = emitted;
    const { req, concerned } = attempt;
    const tracer = this.tracer();
    const { active } = attempt;
    const base = this.attemptAttributes(attempt);
    if (req.reattach) {
      const accepted = attempt.status !== undefined && attempt.status >= 200 && attempt.status < 300;
      const attributes: Attributes = {
        ...base,
        [ATTR_MCP_REATTACH_TRIGGER]: req.reattach.trigger,
        [ATTR_MCP_REATTACH_ACCEPTED]: accepted,
      };
      if (req.reattach.previous) attributes[ATTR_MCP_STREAM_PREVIOUS_ID] = this.streamId(req.reattach.previous);
      const span = this.startUnder(
        tracer,
        SPAN_SESSION_REATTACH,
        { kind: SpanKind.CLIENT, attributes, startTime: attempt.startTime },
        concerned,
        active,
      );
      if (!accepted) setError(span, attempt.status === undefined ? (error ?? ErrorType.OTHER) : String(attempt.status));
      span.end(attempt.responseTime ?? endTime);
    } else if (
      !req.resume &&
      attempt.kind === StreamKind.LISTENING &&
      attempt.status !== undefined &&
      !(attempt.status >= 200 && attempt.status < 300)
    ) {
      // A refused GET (a 405 from a server that offers no listening stream) is no reattach and no resume:
      // its own span, so that a client re-opening it again and again shows (listening_stream_loop).
      const span = this.startUnder(
        tracer,
        SPAN_LISTENING_REFUSED,
        { kind: SpanKind.CLIENT, attributes: { ...base }, startTime: attempt.startTime },
        concerned,
        active,
      );
      setError(span, String(attempt.status));
      span.end(attempt.responseTime ?? endTime);
    }
    if (req.resume && verdict !== undefined) {
      // Its request's last resume, for the request span to say (endRequest emits the request's held poll
      // and open resumes after it took the span, before it ends it).
      const state = concerned && this.requests.get(concerned);
      if (state) state.lastResume = verdict.outcome;
      const attributes: Attributes = {
        ...base,
        [ATTR_MCP_RESUME_LAST_EVENT_ID]: req.resume.lastEventId,
        [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: attempt.terminalObserved,
        [ATTR_MCP_RESUME_OUTCOME]: verdict.outcome,
        [ATTR_MCP_RESUME_EVIDENCE]: verdict.evidence,
        [ATTR_MCP_RESUME_REPLAYED_EVENTS]: attempt.events,
        [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: attempt.replayedTerminal,
      };
      if (attempt.from) attributes[ATTR_MCP_STREAM_RESUMED_FROM_ID] = this.streamId(attempt.from);
      const span = this.startUnder(
        tracer,
        SPAN_STREAM_RESUME,
        { kind: SpanKind.CLIENT, attributes, startTime: attempt.startTime },
        concerned,
        active,
      );
      if (verdict.outcome === ResumeOutcome.ERROR) setError(span, error ?? ErrorType.OTHER);
      else if (error !== undefined) setError(span, error);
      span.end(endTime);
    }
  }

  private recordTerminal(event: WireEvent, terminal: TerminalObservation): void {
    const record = terminal.request;
    // The request's result came: its held poll was a poll.
    this.emitHeldPoll(this.heldPolls.take(record));
    const state = this.requests.get(record);
    const sessionId = event.stream.sessionId || state?.sessionId;
    const protocolVersion =
      event.request.protocolVersion ?? (sessionId ? this.observer.getSession(sessionId)?.protocolVersion : undefined);
    const attributes: Attributes = {
      [ATTR_JSONRPC_REQUEST_ID]: record.id,
      [ATTR_MCP_METHOD_NAME]: record.method,
      [ATTR_MCP_STREAM_ID]: this.streamId(event.stream),
      [ATTR_MCP_TERMINAL_OUTCOME]: terminal.outcome,
      [ATTR_MCP_TERMINAL_DUPLICATE]: terminal.duplicate,
      [ATTR_MCP_TERMINAL_DELIVERY]: terminal.delivery,
    };
    if (sessionId) attributes[ATTR_MCP_SESSION_ID] = sessionId;
    if (protocolVersion !== undefined) attributes[ATTR_MCP_PROTOCOL_VERSION] = protocolVersion;
    // The request's tool, prompt or resource, as on its request span: with no session (2026-07-28), the
    // name is what a Collector routes both attempts of a call on (deploy/collector/config.yaml).
    addTargetName(attributes, record.method, record.target);
    if (event.eventId !== undefined) attributes[ATTR_MCP_EVENT_ID] = event.eventId;
    if (terminal.errorCode !== undefined) attributes[ATTR_RPC_RESPONSE_STATUS_CODE] = String(terminal.errorCode);
    if (terminal.foreign) attributes[ATTR_MCP_TERMINAL_FOREIGN] = true;
    if (terminal.conflict) attributes[ATTR_MCP_TERMINAL_CONFLICT] = true;
    if (terminal.firstStream) attributes[ATTR_MCP_TERMINAL_FIRST_STREAM_ID] = this.streamId(terminal.firstStream);
    this.server.addTo(attributes, event.request.url);
    if (event.guardAction !== undefined) attributes[ATTR_MCP_GUARD_ACTION] = event.guardAction;
    if (event.guardProof !== undefined) attributes[ATTR_MCP_GUARD_PROOF] = event.guardProof;
    this.startUnder(
      this.tracer(),
      SPAN_REQUEST_TERMINAL,
      { kind: SpanKind.INTERNAL, attributes },
      record,
      otelContext.active(),
    ).end();

    // Only the first terminal (delivered, even when foreign) ends the request span.
    if (terminal.duplicate || terminal.conflict || !state?.span) return;
    const span = state.span;
    this.taskAnswer(state, event.messages[terminal.messageIndex]);
    // At a proxy, session era: a task call's answer read on after its client left, before any of it was
    // written (StreamRecord.unwritten): the client never got the handle, so a later call of the same work
    // re-issues this one (see `droppedWork`), and the task this answer created is its first attempt's.
    if (event.stream.unwritten && record.taskRequested && !state.stateless && state.reissueKey !== undefined)
      this.droppedWork.noteBroken(state.reissueKey, state);
    // Set again only when it differs from the span's (an initialize's negotiated version): the same value costs a call.
    if (protocolVersion !== undefined && protocolVersion !== state.protocolVersion) {
      state.protocolVersion = protocolVersion;
      span.setAttribute(ATTR_MCP_PROTOCOL_VERSION, protocolVersion);
    }
    if (terminal.outcome === TerminalOutcome.ERROR) {
      const code = terminal.errorCode === undefined ? ErrorType.OTHER : String(terminal.errorCode);
      span.setAttribute(ATTR_RPC_RESPONSE_STATUS_CODE, code);
      this.endRequest(state, code);
    } else {
      this.endRequest(
        state,
        record.method === 'tools/call' && isToolError(event, record.id) ? ErrorType.TOOL_ERROR : undefined,
      );
    }
  }

  /**
   * What the answer shows of a task, on the request's span: the handle a call was answered with (its
   * id, status, shape, ttl, poll interval), a `tasks/*` answer's status, the outcome delivered, the task
   * gone. Member look-ups on the message the observer parsed; most answers show none.
   */
  private taskAnswer(state: RequestState, message: JsonRpcMessage | undefined): void {
    const record = state.record;
    // A task call whose reply arrived after all (a resume brought it): nothing to re-issue.
    if (state.broken && record.taskRequested && state.reissueKey !== undefined) {
      if (this.broken.peek(state.reissueKey)?.context === state.spanContext) this.broken.takeReissued(state.reissueKey);
    }
    const facts = message === undefined ? undefined : taskFactsOfAnswer(record.method, message);
    if (facts === undefined) return;
    this.keyedTask(state, facts);
    const attributes: Attributes = {};
    addTaskFacts(attributes, facts, !isTaskIdMethod(record.method));
    state.span!.setAttributes(attributes);
  }

  /**
   * `keyedTasks`: a keyed call answered with a task is noted (a later call with its work and key re-issues
   * it); a `tasks/*` answer that ends that task's life for its client (its outcome delivered, cancelled,
   * gone) forgets it.
   */
  private keyedTask(state: RequestState, facts: TaskFacts): void {
    const { record } = state;
    const byTask = isTaskIdMethod(record.method);
    // A tasks/result answer names no task: the request did (its target, `params.taskId`).
    const taskId = byTask ? (facts.taskId ?? record.target) : facts.taskId;
    if (taskId === undefined) return;
    if (!byTask) {
      if (record.idempotencyKey === undefined || state.reissueKey === undefined) return;
      const key = keyedTaskKey(state.reissueKey, record.idempotencyKey);
      this.keyedTasks.noteBroken(key, { context: state.spanContext, idempotencyKey: record.idempotencyKey, taskId });
      this.keyedByTask.set(taskId, key);
      return;
    }
    if (!facts.outcomeDelivered && facts.gone === undefined && facts.status !== TaskStatus.CANCELLED) return;
    const key = this.keyedByTask.get(taskId);
    if (key === undefined) return;
    this.keyedByTask.delete(taskId);
    if (this.keyedTasks.peek(key)?.taskId === taskId) this.keyedTasks.takeReissued(key);
  }

  /**
   * A task status notification (told by the observer on streams where one may come): one
   * SPAN_TASK_STATUS span, a child of the request whose stream carried it, if any.
   */
  private taskNotices(event: WireEvent): void {
    const messages = event.messages;
    for (let i = 0; i < messages.length; i++) {
      const facts = taskFactsOfNotification(messages[i]!);
      if (facts === undefined) continue;
      const attributes: Attributes = { [ATTR_MCP_STREAM_ID]: this.streamId(event.stream) };
      addTaskFacts(attributes, facts, true);
      const sessionId = event.stream.sessionId || event.request.sessionId;
      if (sessionId) attributes[ATTR_MCP_SESSION_ID] = sessionId;
      if (event.request.protocolVersion !== undefined)
        attributes[ATTR_MCP_PROTOCOL_VERSION] = event.request.protocolVersion;
      const carrier = event.stream.kind === StreamKind.LISTENING ? undefined : event.stream.requests[0];
      this.startUnder(
        this.tracer(),
        SPAN_TASK_STATUS,
        { kind: SpanKind.INTERNAL, attributes },
        carrier,
        otelContext.active(),
      ).end();
    }
  }

  private endRequest(state: RequestState, error: string | undefined): void {
    const span = state.span;
    if (!span) return;
    state.span = undefined;
    clearTimeout(state.timer);
    state.timer = undefined;
    this.openRequests--;
    if (this.clientDropped.size > 0) this.clientDropped.delete(state);
    if (state.sessionId !== undefined) {
      const open = this.openBySession.get(state.sessionId);
      if (open?.delete(state) && open.size === 0) this.openBySession.delete(state.sessionId);
    }
    // The request's deadline passed: a resume of it still silent, or its held poll, is an empty replay
    // (evidence deadline). Given up: its held poll is told so before the span says what the client did.
    const end =
      error === ErrorType.TIMEOUT || error === ErrorType.ABORTED || error === ErrorType.CANCELLED ? error : undefined;
    const held = end === undefined ? undefined : this.heldPolls.take(state.record);
    if (held && end === ErrorType.TIMEOUT) this.expirePoll(held, false);
    else if (held && end !== undefined) this.givenUpPoll(held, end);
    // A resume of it not answered by its deadline brought nothing by then (an empty replay, evidence
    // deadline); one not answered when the client aborted it was given up with it. Its late answer, if
    // any, is the request's no more: the request span says what its last resume was.
    if (end !== undefined && end !== ErrorType.CANCELLED && this.pending.size > 0) {
      for (const [req, attempt] of [...this.pending]) {
        if (!req.resume || attempt.concerned !== state.record) continue;
        this.pending.delete(req);
        clearTimeout(attempt.timer);
        this.emit(
          attempt,
          end === ErrorType.TIMEOUT ? { verdict: DEADLINE_PASSED } : { verdict: GIVEN_UP, error: end },
        );
      }
    }
    if (this.openResumes.size > 0) {
      for (const [stream, attempt] of [...this.openResumes]) {
        if (attempt.concerned !== state.record) continue;
        if (attempt.verdict) this.finish(stream, attempt, undefined, end);
        else if (error === ErrorType.TIMEOUT) this.settleSilent(stream, attempt, { deadlinePassed: true });
      }
    }
    if (end !== undefined && end !== ErrorType.CANCELLED) this.recovery(state, span);
    if (error !== undefined) setError(span, error);
    span.end();
  }

  /**
   * Session era: a request that ends at its deadline or by an abort without its terminal, after a stream
   * of it ended without it, says what the client did about that (ATTR_MCP_REQUEST_RECOVERY), and the
   * outcome of its last resume: the detector's evidence of a lost result.
   */
  private recovery(state: RequestState, span: Span): void {
    if (state.stateless || state.record.terminalCount > 0 || !(state.resumed || state.broken)) return;
    if (state.resumed) {
      span.setAttribute(ATTR_MCP_REQUEST_RECOVERY, RequestRecovery.RESUMED);
      if (state.lastResume !== undefined) span.setAttribute(ATTR_MCP_RESUME_OUTCOME, state.lastResume);
    } else {
      span.setAttribute(
        ATTR_MCP_REQUEST_RECOVERY,
        state.cursor ? RequestRecovery.NOT_RESUMED : RequestRecovery.NO_EVENT_ID,
      );
    }
  }

  /**
   * Session era: the request's stream broke (the server's side, not its reader's) before its terminal,
   * and neither it nor an earlier stream of the request gave an event id: no cursor exists, so no resume
   * can bring the result, and the break is its request's end (error.type `stream_broken`, recovery
   * `no_event_id`), told now rather than at the deadline. The detector's lost-result rule decides.
   */
  private unresumable(state: RequestState): void {
    state.span?.setAttribute(ATTR_MCP_REQUEST_RECOVERY, RequestRecovery.NO_EVENT_ID);
    this.endRequest(state, ErrorType.STREAM_BROKEN);
  }

  /** Holds a `poll` of an unfinished request (not of the listening stream); false when it is emitted at once. */
  private holdPoll(attempt: Attempt, verdict: ResumeVerdict): boolean {
    const record = attempt.concerned;
    if (!record || attempt.kind === StreamKind.LISTENING || attempt.terminalObserved || record.terminalCount > 0)
      return false;
    const deadline = this.deadlineOf(attempt);
    if (deadline === undefined) return false;
    attempt.verdict = verdict;
    const previous = this.heldPolls.hold(record, attempt.req.sessionId, { attempt, endTime: nowMs() }, deadline);
    this.emitHeldPoll(previous);
    return true;
  }

  /** A held poll the request's fate showed to be one. */
  private emitHeldPoll(held: HeldPoll | undefined): void {
    if (held) this.emit(held.attempt, { verdict: held.attempt.verdict, endTime: held.endTime });
  }

  /** The client gave the request up while its last resume had ended empty. */
  private givenUpPoll(held: HeldPoll | undefined, error: string): void {
    if (held) this.emit(held.attempt, { verdict: GIVEN_UP, error, endTime: held.endTime });
  }

  /**
   * The request's deadline passed with its last resume ended empty: the server lost it. Evicted by the
   * cap, or released at shutdown, it leaves as what the wire said: a poll.
   */
  private expirePoll(held: HeldPoll, asPoll: boolean): void {
    try {
      if (asPoll) this.emitHeldPoll(held);
      else this.emit(held.attempt, { verdict: DEADLINE_PASSED, endTime: held.endTime });
    } catch (error) {
      diag.error('resumewatch: recording a held poll failed', error);
    }
  }

  /**
   * Starts a span within `active`, a child of `record`'s request span when this recorder holds it. A record
   * tracer (record-tracer.ts: the gateway's when only its detector reads the spans) takes the parent's
   * span context and `options.attributes` as they are; any other tracer gets the parent in a Context.
   * `options.attributes` is the caller's own object, built for this span and never touched after.
   */
  private startUnder(
    tracer: Tracer,
    name: string,
    options: SpanOptions,
    record: RequestRecord | undefined,
    active: Context,
  ): Span {
    const state = record && this.requests.get(record);
    if (isRecordTracer(tracer)) return tracer.startRecordSpan(name, options, state?.spanContext, active);
    return tracer.startSpan(name, options, state ? trace.setSpanContext(active, state.spanContext) : active);
  }

  /** Stands in for a stream id when a response has no body (or there was no response). */
  private responseId(req: WireRequest): string {
    return `${this.prefix}-r${req.seq}`;
  }
}

/** A request's key among broken requests: its digest, prefixed with its client at a proxy (one recorder, many clients). */
function reissueKeyOf(req: WireRequest, digest: string | undefined): string | undefined {
  if (digest === undefined) return undefined;
  return req.clientScope === undefined ? digest : `${req.clientScope}\n${digest}`;
}

/** A keyed task call's entry among `keyedTasks`: its re-issue key (client and digest) and its idempotency key. */
function keyedTaskKey(reissueKey: string, idempotencyKey: string): string {
  return `${reissueKey}\n${idempotencyKey}`;
}

/**
 * The params of the initialize request `record` among the request's messages (read in onRequest: a
 * record keeps no body, and a proxy's request keeps its messages only until then).
 */
function initializeParams(req: WireRequest, record: RequestRecord): unknown {
  if (record.method !== 'initialize') return undefined;
  for (const message of req.messages) {
    const id = (message as { id?: unknown }).id;
    if (
      (message as { method?: unknown }).method === 'initialize' &&
      String(id) === record.id &&
      (typeof id === 'string') === record.idIsString
    )
      return (message as { params?: unknown }).params;
  }
  return undefined;
}
