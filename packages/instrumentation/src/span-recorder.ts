import { randomBytes } from 'node:crypto';
import { SpanKind, context as otelContext, diag, trace } from '@opentelemetry/api';
import type { Attributes, Context, Span, SpanContext, Tracer } from '@opentelemetry/api';
import type {
  RequestRecord,
  StreamEnd,
  StreamRecord,
  TerminalObservation,
  WireEvent,
  WireListener,
  WireObserver,
  WireRequest,
  WireResponse,
} from '@resumewatch/wire';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_EVENT_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REATTACH_TRIGGER,
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
  ATTR_NETWORK_PROTOCOL_NAME,
  ATTR_NETWORK_TRANSPORT,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  GuardAction,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
  mcpRequestSpanName,
} from './semconv.js';
import { ErrorType, ServerAttributes, addTargetAttributes, errorType, isToolError, nowMs, outcomeOfStatus, setError } from './span-util.js';
import type { RecorderStats, TracerSource } from './types.js';

export interface SpanRecorderOptions {
  tracer: TracerSource;
  observer: WireObserver;
  replayWindowMs: number;
  requestTimeoutMs: number;
}

interface RequestState {
  /** Undefined once the span ended; the span context stays to parent late terminal and resume spans. */
  span: Span | undefined;
  readonly spanContext: SpanContext;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Known from the request headers, or from the initialize response. */
  sessionId: string | undefined;
}

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
  streamId: string | undefined;
  /** Events carrying JSON-RPC messages on the resumed stream inside the window; read when it closes. */
  events: number;
  /** A terminal event arrived on the resumed stream inside the window; read when it closes. */
  replayedTerminal: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * Turns the wire observer's events into the contract's spans. Per-request state lives in a WeakMap
 * keyed by the observer's request records (released with them); per-HTTP-request state is held until
 * the response headers arrive, per-stream state until the resume window closes.
 */
export class SpanRecorder implements WireListener {
  /** Makes stream ids unique across observers and processes. */
  private readonly prefix = randomBytes(6).toString('hex');
  private readonly tracer: TracerSource;
  private readonly observer: WireObserver;
  private readonly replayWindowMs: number;
  private readonly requestTimeoutMs: number;
  private readonly requests = new WeakMap<RequestRecord, RequestState>();
  private readonly pending = new Map<WireRequest, Attempt>();
  private readonly windows = new Map<StreamRecord, Attempt>();
  /** What the guard did to an event or a request, told by the guard before this listener's hook runs. */
  private readonly guardActions = new WeakMap<WireEvent | WireRequest, GuardAction>();
  private readonly server = new ServerAttributes();
  private openRequests = 0;

  constructor(options: SpanRecorderOptions) {
    this.tracer = options.tracer;
    this.observer = options.observer;
    this.replayWindowMs = options.replayWindowMs;
    this.requestTimeoutMs = options.requestTimeoutMs;
  }

  stats(): RecorderStats {
    return { openRequests: this.openRequests, openResumes: this.windows.size, pendingHttp: this.pending.size };
  }

  /** The contract stream id (ATTR_MCP_STREAM_ID) of a stream seen by this recorder's observer. */
  streamId(stream: StreamRecord): string {
    return `${this.prefix}-${stream.id}`;
  }

  noteGuardAction(subject: WireEvent | WireRequest, action: GuardAction): void {
    this.guardActions.set(subject, action);
  }

  onRequest(req: WireRequest): void {
    try {
      if (req.requests.length === 0 && !req.reattach && !req.resume) return;
      const active = otelContext.active();
      if (req.requests.length > 0) {
        const tracer = this.tracer();
        for (const record of req.requests) this.startRequest(tracer, req, record, active);
      }
      if (req.reattach || req.resume) this.startAttempt(req, active);
    } catch (error) {
      diag.error('resumewatch: recording a request failed', error);
    }
  }

  onRefused(req: WireRequest, error: unknown): void {
    // A listener added before this one (the guard) refused it before onRequest reached this recorder.
    if ((req.reattach || req.resume) && !this.pending.has(req)) this.startAttempt(req, otelContext.active());
    this.failed(req, error, this.guardActions.get(req));
  }

  onFetchError(req: WireRequest, error: unknown): void {
    this.failed(req, error, undefined);
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
    // A replay window reads its counts from the stream record when it closes: only terminals matter here.
    const terminals = event.terminals;
    if (terminals.length === 0) return;
    try {
      for (let i = 0; i < terminals.length; i++) this.recordTerminal(event, terminals[i]!);
    } catch (error) {
      diag.error('resumewatch: recording an event failed', error);
    }
  }

  onStreamEnd(_req: WireRequest, stream: StreamRecord, end: StreamEnd, error: unknown): void {
    try {
      if (this.windows.size > 0) {
        const attempt = this.windows.get(stream);
        if (attempt) this.closeWindow(stream, attempt, end, error);
      }
      // A stream that errored or closed may be resumed; only a cancelled one gives its requests up.
      if (end !== 'abort') return;
      for (const record of stream.requests) {
        const state = this.requests.get(record);
        if (state?.span) this.endRequest(state, ErrorType.ABORTED);
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
    if (req.protocolVersion !== undefined) attributes[ATTR_MCP_PROTOCOL_VERSION] = req.protocolVersion;
    const target = record.target;
    addTargetAttributes(attributes, record.method, target);
    const span = tracer.startSpan(mcpRequestSpanName(record.method, target), { kind: SpanKind.CLIENT, attributes }, parent);
    const state: RequestState = { span, spanContext: span.spanContext(), timer: undefined, sessionId: req.sessionId };
    state.timer = setTimeout(() => this.endRequest(state, ErrorType.TIMEOUT), this.requestTimeoutMs);
    state.timer.unref();
    this.requests.set(record, state);
    this.openRequests++;
  }

  private requestsAnswered(req: WireRequest, res: WireResponse): void {
    const ok = res.status >= 200 && res.status < 300;
    for (const record of req.requests) {
      const state = this.requests.get(record);
      if (!state?.span) continue;
      if (state.sessionId === undefined && res.sessionId !== undefined) {
        state.sessionId = res.sessionId;
        state.span.setAttribute(ATTR_MCP_SESSION_ID, res.sessionId);
      }
      if (!ok) {
        state.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, res.status);
        this.endRequest(state, String(res.status));
      }
    }
  }

  private startAttempt(req: WireRequest, active: Context): void {
    const resume = req.resume;
    const attempt: Attempt = {
      req,
      active,
      startTime: nowMs(),
      from: resume?.from,
      concerned: resume ? resume.requests[0] : req.requests[0],
      terminalObserved: resume?.terminalObserved ?? false,
      responseTime: undefined,
      status: undefined,
      streamId: undefined,
      events: 0,
      replayedTerminal: false,
      timer: undefined,
    };
    attempt.timer = setTimeout(() => this.failed(req, undefined, undefined), this.requestTimeoutMs);
    attempt.timer.unref();
    this.pending.set(req, attempt);
  }

  private attemptAnswered(attempt: Attempt, res: WireResponse): void {
    this.pending.delete(attempt.req);
    clearTimeout(attempt.timer);
    attempt.responseTime = nowMs();
    attempt.status = res.status;
    attempt.streamId = res.stream ? this.streamId(res.stream) : this.responseId(attempt.req);
    const ok = res.status >= 200 && res.status < 300;
    if (!attempt.req.resume) {
      this.emit(attempt, undefined, ok ? undefined : String(res.status), undefined);
    } else if (ok && res.stream) {
      const stream = res.stream;
      attempt.timer = setTimeout(() => this.closeWindow(stream, attempt, undefined, undefined), this.replayWindowMs);
      attempt.timer.unref();
      this.windows.set(stream, attempt);
    } else if (ok) {
      this.emit(attempt, ResumeOutcome.EMPTY_REPLAY, undefined, undefined);
    } else {
      this.emit(attempt, outcomeOfStatus(res.status), String(res.status), undefined);
    }
  }

  /** No response: a network error, a refusal (by the guard or another listener) or the headers timeout. */
  private failed(req: WireRequest, error: unknown, guardAction: GuardAction | undefined): void {
    try {
      const type = error === undefined ? ErrorType.TIMEOUT : errorType(error);
      for (const record of req.requests) {
        const state = this.requests.get(record);
        if (state?.span) this.endRequest(state, type);
      }
      const attempt = this.pending.get(req);
      if (!attempt) return;
      this.pending.delete(req);
      clearTimeout(attempt.timer);
      this.emit(attempt, ResumeOutcome.ERROR, type, guardAction);
    } catch (failure) {
      diag.error('resumewatch: recording a failed request failed', failure);
    }
  }

  private closeWindow(stream: StreamRecord, attempt: Attempt, end: StreamEnd | undefined, error: unknown): void {
    if (this.windows.get(stream) !== attempt) return;
    this.windows.delete(stream);
    clearTimeout(attempt.timer);
    // The stream opened with the window, so its counts are those of the window.
    attempt.events = stream.messageEvents;
    attempt.replayedTerminal = stream.terminalEvents > 0;
    const first = stream.requests[0];
    if (attempt.concerned === undefined && first !== undefined) {
      // The cursor was not one the observer could place; the first replayed terminal named its request
      // (the stream carried none before it), and was a duplicate if its first terminal came on another stream.
      attempt.concerned = first;
      attempt.terminalObserved = first.firstTerminalStream !== stream;
    }
    if (attempt.events > 0) this.emit(attempt, ResumeOutcome.CONTINUATION, undefined, undefined);
    else if (end === undefined || end === 'clean') this.emit(attempt, ResumeOutcome.EMPTY_REPLAY, undefined, undefined);
    else this.emit(attempt, ResumeOutcome.ERROR, end === 'abort' ? ErrorType.ABORTED : errorType(error), undefined);
  }

  /** Creates the reattach and resume spans of a finished attempt, with their recorded times. */
  private emit(attempt: Attempt, outcome: ResumeOutcome | undefined, error: string | undefined, guardAction: GuardAction | undefined): void {
    const { req, concerned } = attempt;
    const tracer = this.tracer();
    const parent = this.parentOf(concerned, attempt.active);
    const endTime = nowMs();
    const base: Attributes = {
      [ATTR_HTTP_REQUEST_METHOD]: req.httpMethod,
      [ATTR_MCP_STREAM_ID]: attempt.streamId ?? this.responseId(req),
    };
    if (req.sessionId !== undefined) base[ATTR_MCP_SESSION_ID] = req.sessionId;
    if (req.protocolVersion !== undefined) base[ATTR_MCP_PROTOCOL_VERSION] = req.protocolVersion;
    if (concerned) base[ATTR_JSONRPC_REQUEST_ID] = concerned.id;
    if (attempt.status !== undefined) base[ATTR_HTTP_RESPONSE_STATUS_CODE] = attempt.status;
    const action = guardAction ?? this.guardActions.get(req);
    if (action !== undefined) base[ATTR_MCP_GUARD_ACTION] = action;

    if (req.reattach) {
      const accepted = attempt.status !== undefined && attempt.status >= 200 && attempt.status < 300;
      const attributes: Attributes = { ...base, [ATTR_MCP_REATTACH_TRIGGER]: req.reattach.trigger, [ATTR_MCP_REATTACH_ACCEPTED]: accepted };
      if (req.reattach.previous) attributes[ATTR_MCP_STREAM_PREVIOUS_ID] = this.streamId(req.reattach.previous);
      const span = tracer.startSpan(SPAN_SESSION_REATTACH, { kind: SpanKind.CLIENT, attributes, startTime: attempt.startTime }, parent);
      if (!accepted) setError(span, attempt.status === undefined ? (error ?? ErrorType.OTHER) : String(attempt.status));
      span.end(attempt.responseTime ?? endTime);
    }
    if (req.resume && outcome !== undefined) {
      const attributes: Attributes = {
        ...base,
        [ATTR_MCP_RESUME_LAST_EVENT_ID]: req.resume.lastEventId,
        [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: attempt.terminalObserved,
        [ATTR_MCP_RESUME_OUTCOME]: outcome,
        [ATTR_MCP_RESUME_REPLAYED_EVENTS]: attempt.events,
        [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: attempt.replayedTerminal,
      };
      if (attempt.from) attributes[ATTR_MCP_STREAM_RESUMED_FROM_ID] = this.streamId(attempt.from);
      const span = tracer.startSpan(SPAN_STREAM_RESUME, { kind: SpanKind.CLIENT, attributes, startTime: attempt.startTime }, parent);
      if (error !== undefined) setError(span, error);
      span.end(endTime);
    }
  }

  private recordTerminal(event: WireEvent, terminal: TerminalObservation): void {
    const record = terminal.request;
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
    if (event.eventId !== undefined) attributes[ATTR_MCP_EVENT_ID] = event.eventId;
    if (terminal.errorCode !== undefined) attributes[ATTR_RPC_RESPONSE_STATUS_CODE] = String(terminal.errorCode);
    const guardAction = this.guardActions.get(event);
    if (guardAction !== undefined) attributes[ATTR_MCP_GUARD_ACTION] = guardAction;
    this.tracer()
      .startSpan(SPAN_REQUEST_TERMINAL, { kind: SpanKind.INTERNAL, attributes }, this.parentOf(record, otelContext.active()))
      .end();

    if (terminal.duplicate || !state?.span) return;
    const span = state.span;
    if (protocolVersion !== undefined) span.setAttribute(ATTR_MCP_PROTOCOL_VERSION, protocolVersion);
    if (terminal.outcome === 'error') {
      const code = terminal.errorCode === undefined ? ErrorType.OTHER : String(terminal.errorCode);
      span.setAttribute(ATTR_RPC_RESPONSE_STATUS_CODE, code);
      this.endRequest(state, code);
    } else {
      this.endRequest(state, record.method === 'tools/call' && isToolError(event, record.id) ? ErrorType.TOOL_ERROR : undefined);
    }
  }

  private endRequest(state: RequestState, error: string | undefined): void {
    const span = state.span;
    if (!span) return;
    state.span = undefined;
    clearTimeout(state.timer);
    state.timer = undefined;
    this.openRequests--;
    if (error !== undefined) setError(span, error);
    span.end();
  }

  private parentOf(record: RequestRecord | undefined, active: Context): Context {
    const state = record && this.requests.get(record);
    return state ? trace.setSpanContext(active, state.spanContext) : active;
  }

  /** Stands in for a stream id when a response has no body (or there was no response). */
  private responseId(req: WireRequest): string {
    return `${this.prefix}-r${req.seq}`;
  }
}
