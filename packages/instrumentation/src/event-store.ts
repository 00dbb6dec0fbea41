import { randomBytes } from 'node:crypto';
import { SpanKind, context as otelContext, diag } from '@opentelemetry/api';
import type { Span } from '@opentelemetry/api';
import { BoundedMap } from '@resumewatch/bounded';
import { isJsonRpcMessage, isResponse } from '@resumewatch/wire';
import { createIdRecorder, withIdPolicy } from './id-policy.js';
import { tracerSource } from './instrument-fetch.js';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_RESUMED_FROM_ID,
  ResumeEvidence,
  ResumeOutcome,
  SPAN_STREAM_RESUME,
} from './semconv.js';
import { errorType, setError } from './span-util.js';
import { storingTransport } from './stream-liveness.js';
import type { EventStoreInstrumentationOptions, EventStoreLike } from './types.js';

/** A replay that sent no message for a stream whose request was still running: no verdict yet. */
interface SilentReplay {
  readonly span: Span;
  timer: ReturnType<typeof setTimeout> | undefined;
}

interface StreamState {
  /** When the stream's terminal response was stored, if it was. */
  terminalAt: number | undefined;
  /**
   * The stored response reached a client: it was stored while its stream had a live connection (or
   * with no instrumented transport to tell), or a replay has sent it since. A response stored while
   * the stream was detached (SEP-1699: the server closed it, the client is between polls) has not.
   */
  terminalDelivered: boolean;
  requestId: string | undefined;
  /** A priming event (SEP-1699: stored as a message that is not JSON-RPC, `{}`) was stored for the stream. */
  primed: boolean;
  /** The stream's last replay, while it has no verdict. */
  silent: SilentReplay | undefined;
}

/** The request id of a response (result or error): the stream's terminal event. */
function responseId(message: unknown): string | undefined {
  if (!isJsonRpcMessage(message) || !isResponse(message)) return undefined;
  const id = message.id;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
}

/** Stores instrumentEventStore patched, so that `register` does not patch a store a second time. */
const instrumentedStores = new WeakSet<object>();

/** Whether instrumentEventStore already patched this store. */
export function isInstrumentedEventStore(store: object): boolean {
  return instrumentedStores.has(store);
}

/**
 * Wraps an MCP SDK EventStore so that every replay it serves is a resume span (SPAN_STREAM_RESUME,
 * kind SERVER) saying whether the stream had already delivered its terminal response before the replay,
 * how many events were replayed and whether the terminal was among them. Per-stream state is bounded.
 *
 * Delivered means written to a live connection, or sent by an earlier replay. With
 * `instrumentServerTransport` on the transport that owns the store, a response stored while its stream
 * had no connection (SEP-1699 polling: the server closed the stream with `closeSSEStream`, or the
 * connection went away) is not delivered: the replay that sends it first has
 * `mcp.request.terminal_observed=false`, the next ones `true`. Without it, every stored response counts
 * as delivered when stored.
 * The store is patched in place (its other methods and state are untouched) and returned.
 *
 * The outcome follows `resumeVerdict`, on evidence: a replay that sent a JSON-RPC message is a
 * `continuation`; one that sent none for a stream whose response was already stored is an
 * `empty_replay` (nothing more will come). One that sent none for a running request has no verdict
 * yet, as the transport sends live events on the resumed stream: the next message stored for the
 * stream makes it a `continuation`, the client's next replay of the stream (it came back, so the
 * resumed stream ended without a message) a `poll` if the stream was primed, else an `empty_replay`,
 * and the request's deadline an `empty_replay` (evidence `deadline`).
 */
export function instrumentEventStore<S extends EventStoreLike<M>, M = Parameters<S['storeEvent']>[1]>(
  store: S,
  options: EventStoreInstrumentationOptions = {},
): S {
  // Id policy (raw | hmac | omit): applied to every span through the tracer, see id-policy.ts.
  const tracer = withIdPolicy(tracerSource(options.tracerProvider), createIdRecorder(options));
  const streams = new BoundedMap<string, StreamState>(
    options.maxStreams ?? 10_000,
    options.streamRetentionMs ?? 3_600_000,
  );
  const prefix = randomBytes(6).toString('hex');
  const deadlineMs = options.requestTimeoutMs ?? 300_000;
  let replays = 0;
  const stateOf = (streamId: string): StreamState => {
    let state = streams.get(streamId);
    if (!state) {
      state = {
        terminalAt: undefined,
        terminalDelivered: false,
        requestId: undefined,
        primed: false,
        silent: undefined,
      };
      streams.set(streamId, state);
    }
    return state;
  };
  /** Gives a silent replay its verdict and ends its span. */
  const settle = (
    state: StreamState,
    outcome: ResumeOutcome,
    evidence: ResumeEvidence,
    events: number,
    terminal?: string,
  ): void => {
    const silent = state.silent;
    if (!silent) return;
    state.silent = undefined;
    clearTimeout(silent.timer);
    if (terminal !== undefined) silent.span.setAttribute(ATTR_JSONRPC_REQUEST_ID, terminal);
    finish(silent.span, outcome, evidence, events, terminal !== undefined);
  };
  const sessionOf = (streamId: string | undefined): string | undefined =>
    typeof options.sessionId === 'function' ? options.sessionId(streamId) : options.sessionId;

  const rejected = (lastEventId: string): void => {
    const span = tracer().startSpan(SPAN_STREAM_RESUME, { kind: SpanKind.SERVER }, otelContext.active());
    const sessionId = sessionOf(undefined);
    if (sessionId !== undefined) span.setAttribute(ATTR_MCP_SESSION_ID, sessionId);
    span.setAttribute(ATTR_MCP_RESUME_LAST_EVENT_ID, lastEventId);
    span.setAttribute(ATTR_MCP_STREAM_ID, `${prefix}-${++replays}`);
    // The SDK transport answers a cursor its store does not know with 400.
    finish(span, ResumeOutcome.CURSOR_REJECTED, ResumeEvidence.STATUS, 0, false, '400');
  };

  const storeEvent = store.storeEvent.bind(store);
  const replayEventsAfter = store.replayEventsAfter.bind(store);
  const patch: EventStoreLike<M> = {
    async storeEvent(streamId, message) {
      // Synchronously, before any await: the instrumented transport whose send is storing, if any.
      const from = storingTransport();
      const eventId = await storeEvent(streamId, message);
      try {
        const id = responseId(message);
        const state = stateOf(streamId);
        // Asked now, as the transport decides now whether to write the stored event to a connection.
        // Unknown (no instrumented transport): live, as a store alone cannot tell.
        const live = from?.isLive(streamId) !== false;
        if (id !== undefined) {
          state.terminalAt = Date.now();
          state.terminalDelivered = live;
          state.requestId = id;
        }
        if (!isJsonRpcMessage(message)) state.primed = true;
        // A message the transport sends live on the resumed stream: the silent replay was a continuation.
        // Stored while the stream is detached, it went nowhere: the client's next poll replays it.
        else if (state.silent && live) settle(state, ResumeOutcome.CONTINUATION, ResumeEvidence.MESSAGE, 1, id);
      } catch (error) {
        diag.error('resumewatch: recording a stored event failed', error);
      }
      return eventId;
    },

    async replayEventsAfter(lastEventId, { send }) {
      const started = Date.now();
      const span = tracer().startSpan(SPAN_STREAM_RESUME, { kind: SpanKind.SERVER }, otelContext.active());
      span.setAttribute(ATTR_MCP_RESUME_LAST_EVENT_ID, lastEventId);
      span.setAttribute(ATTR_MCP_STREAM_ID, `${prefix}-${++replays}`);
      let events = 0;
      let terminal: string | undefined;
      try {
        const streamId = await replayEventsAfter(lastEventId, {
          send: (eventId, message) => {
            if (isJsonRpcMessage(message)) events++;
            terminal ??= responseId(message);
            return send(eventId, message);
          },
        });
        const state = stateOf(streamId);
        // The client is back for this stream: its previous resumed stream ended without a message.
        settle(state, state.primed ? ResumeOutcome.POLL : ResumeOutcome.EMPTY_REPLAY, ResumeEvidence.BODY_END, 0);
        const requestId = state.requestId ?? terminal;
        span.setAttribute(ATTR_MCP_STREAM_RESUMED_FROM_ID, streamId);
        const sessionId = sessionOf(streamId);
        if (sessionId !== undefined) span.setAttribute(ATTR_MCP_SESSION_ID, sessionId);
        if (requestId !== undefined) span.setAttribute(ATTR_JSONRPC_REQUEST_ID, requestId);
        // The response had reached a client before this replay began. One stored while the stream was
        // detached and replayed now for the first time is a first delivery, not a replay of a known result.
        const finished = state.terminalAt !== undefined && state.terminalAt <= started && state.terminalDelivered;
        if (terminal !== undefined && terminal === state.requestId) state.terminalDelivered = true;
        span.setAttribute(ATTR_MCP_REQUEST_TERMINAL_OBSERVED, finished);
        if (events > 0) {
          finish(span, ResumeOutcome.CONTINUATION, ResumeEvidence.MESSAGE, events, terminal !== undefined);
        } else if (finished) {
          // The response is in the past: nothing more will come on this stream.
          finish(span, ResumeOutcome.EMPTY_REPLAY, ResumeEvidence.BODY_END, 0, false);
        } else {
          const silent: SilentReplay = { span, timer: undefined };
          silent.timer = setTimeout(() => {
            if (state.silent === silent) settle(state, ResumeOutcome.EMPTY_REPLAY, ResumeEvidence.DEADLINE, 0);
          }, deadlineMs);
          silent.timer.unref();
          state.silent = silent;
        }
        return streamId;
      } catch (error) {
        const sessionId = sessionOf(undefined);
        if (sessionId !== undefined) span.setAttribute(ATTR_MCP_SESSION_ID, sessionId);
        finish(span, ResumeOutcome.ERROR, ResumeEvidence.BODY_END, events, terminal !== undefined, errorType(error));
        throw error;
      }
    },
  };
  if (store.getStreamIdForEventId) {
    const lookup = store.getStreamIdForEventId.bind(store);
    // Unknown to the store: the SDK answers 400 and never replays, so the resume is recorded here.
    patch.getStreamIdForEventId = async (eventId) => {
      const streamId = await lookup(eventId);
      if (streamId === undefined) {
        try {
          rejected(eventId);
        } catch (error) {
          diag.error('resumewatch: recording a rejected cursor failed', error);
        }
      }
      return streamId;
    };
  }
  instrumentedStores.add(store);
  return Object.assign(store, patch);
}

/** Ends a server resume span with its verdict, what the replay sent (`events`, whether the `terminal` was among them) and an error type. */
function finish(
  span: Span,
  outcome: ResumeOutcome,
  evidence: ResumeEvidence,
  events: number,
  terminal: boolean,
  error?: string,
): void {
  span.setAttribute(ATTR_MCP_RESUME_OUTCOME, outcome);
  span.setAttribute(ATTR_MCP_RESUME_EVIDENCE, evidence);
  span.setAttribute(ATTR_MCP_RESUME_REPLAYED_EVENTS, events);
  span.setAttribute(ATTR_MCP_RESUME_REPLAYED_TERMINAL, terminal);
  if (error !== undefined) setError(span, error);
  span.end();
}
