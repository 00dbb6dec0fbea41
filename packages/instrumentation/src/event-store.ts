import { randomBytes } from 'node:crypto';
import { SpanKind, context as otelContext, diag } from '@opentelemetry/api';
import type { Span, TracerProvider } from '@opentelemetry/api';
import { BoundedMap, isJsonRpcMessage, isResponse } from '@resumewatch/wire';
import { createIdRecorder, withIdPolicy } from './id-policy.js';
import type { IdPolicyOptions } from './id-policy.js';
import { tracerSource } from './instrument-fetch.js';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_RESUMED_FROM_ID,
  ResumeOutcome,
  SPAN_STREAM_RESUME,
} from './semconv.js';
import { errorType, setError } from './span-util.js';

/** The SDK's EventStore (server/streamableHttp), structurally: this package does not load the SDK. */
export interface EventStoreLike<Message = unknown> {
  storeEvent(streamId: string, message: Message): Promise<string>;
  replayEventsAfter(lastEventId: string, options: { send: (eventId: string, message: Message) => Promise<void> }): Promise<string>;
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
}

interface StreamState {
  /** When the stream's terminal response was stored, if it was. */
  terminalAt: number | undefined;
  requestId: string | undefined;
}

/** The request id of a response (result or error): the stream's terminal event. */
function responseId(message: unknown): string | undefined {
  if (!isJsonRpcMessage(message) || !isResponse(message)) return undefined;
  const id = message.id;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
}

/**
 * Wraps an MCP SDK EventStore so that every replay it serves is a resume span (SPAN_STREAM_RESUME,
 * kind SERVER) saying whether the stream had already delivered its terminal response before the replay,
 * how many events were replayed and whether the terminal was among them. Per-stream state is bounded.
 * The store is patched in place (its other methods and state are untouched) and returned.
 */
export function instrumentEventStore<S extends EventStoreLike<M>, M = Parameters<S['storeEvent']>[1]>(
  store: S,
  options: EventStoreInstrumentationOptions = {},
): S {
  // Id policy (raw | hmac | omit): applied to every span through the tracer, see id-policy.ts.
  const tracer = withIdPolicy(tracerSource(options.tracerProvider), createIdRecorder(options));
  const streams = new BoundedMap<string, StreamState>(options.maxStreams ?? 10_000, options.streamRetentionMs ?? 3_600_000);
  const prefix = randomBytes(6).toString('hex');
  let replays = 0;
  const sessionOf = (streamId: string | undefined): string | undefined =>
    typeof options.sessionId === 'function' ? options.sessionId(streamId) : options.sessionId;

  const rejected = (lastEventId: string): void => {
    const span = tracer().startSpan(SPAN_STREAM_RESUME, { kind: SpanKind.SERVER }, otelContext.active());
    const sessionId = sessionOf(undefined);
    if (sessionId !== undefined) span.setAttribute(ATTR_MCP_SESSION_ID, sessionId);
    span.setAttribute(ATTR_MCP_RESUME_LAST_EVENT_ID, lastEventId);
    span.setAttribute(ATTR_MCP_STREAM_ID, `${prefix}-${++replays}`);
    // The SDK transport answers a cursor its store does not know with 400.
    finish(span, ResumeOutcome.CURSOR_REJECTED, 0, false, '400');
  };

  const storeEvent = store.storeEvent.bind(store);
  const replayEventsAfter = store.replayEventsAfter.bind(store);
  const patch: EventStoreLike<M> = {
    async storeEvent(streamId, message) {
      const eventId = await storeEvent(streamId, message);
      const id = responseId(message);
      if (id !== undefined) streams.set(streamId, { terminalAt: Date.now(), requestId: id });
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
        const state = streams.get(streamId);
        const requestId = state?.requestId ?? terminal;
        span.setAttribute(ATTR_MCP_STREAM_RESUMED_FROM_ID, streamId);
        const sessionId = sessionOf(streamId);
        if (sessionId !== undefined) span.setAttribute(ATTR_MCP_SESSION_ID, sessionId);
        if (requestId !== undefined) span.setAttribute(ATTR_JSONRPC_REQUEST_ID, requestId);
        span.setAttribute(ATTR_MCP_REQUEST_TERMINAL_OBSERVED, state?.terminalAt !== undefined && state.terminalAt <= started);
        finish(span, events > 0 ? ResumeOutcome.CONTINUATION : ResumeOutcome.EMPTY_REPLAY, events, terminal !== undefined, undefined);
        return streamId;
      } catch (error) {
        const sessionId = sessionOf(undefined);
        if (sessionId !== undefined) span.setAttribute(ATTR_MCP_SESSION_ID, sessionId);
        finish(span, ResumeOutcome.ERROR, events, terminal !== undefined, errorType(error));
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
  return Object.assign(store, patch);
}

function finish(span: Span, outcome: ResumeOutcome, events: number, terminal: boolean, error: string | undefined): void {
  span.setAttribute(ATTR_MCP_RESUME_OUTCOME, outcome);
  span.setAttribute(ATTR_MCP_RESUME_REPLAYED_EVENTS, events);
  span.setAttribute(ATTR_MCP_RESUME_REPLAYED_TERMINAL, terminal);
  if (error !== undefined) setError(span, error);
  span.end();
}
