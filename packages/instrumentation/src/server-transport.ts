import { SpanKind, context as otelContext, diag, propagation, trace } from '@opentelemetry/api';
import type { Attributes, Context, Span, TextMapGetter } from '@opentelemetry/api';
import { META_PROTOCOL_VERSION } from '@resumewatch/semconv';
import {
  HEADER_PROTOCOL_VERSION,
  isJsonRpcMessage,
  isRequest,
  isTaskIdMethod,
  isTaskNotification,
  requestTarget,
  requestTaskId,
  taskFactsOfAnswer,
  taskFactsOfNotification,
  taskRequested,
} from '@resumewatch/wire';
import type { JsonRpcMessage } from '@resumewatch/wire';
import { createIdRecorder, withIdPolicy } from './id-policy.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, tracerSource } from './instrument-fetch.js';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_SESSION_ID,
  ATTR_NETWORK_PROTOCOL_NAME,
  ATTR_NETWORK_TRANSPORT,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_REQUESTED,
  SPAN_TASK_STATUS,
} from './semconv.js';
import { addTaskFacts, requestSpanName } from './task-attributes.js';
import { ErrorType } from './semconv.js';
import { addTargetAttributes, initializeVersion, setError } from './span-util.js';
import { sendingFrom, streamLivenessOf } from './stream-liveness.js';
import type { ServerTransportInstrumentationOptions, ServerTransportLike } from './types.js';

interface Open {
  span: Span;
  method: string;
  timer: ReturnType<typeof setTimeout>;
  /** The response stream was closed (the transport closed: the client's cancellation) before the result. */
  closed: boolean;
}

interface Message {
  id?: unknown;
  method?: unknown;
  result?: { isError?: unknown; protocolVersion?: unknown };
  error?: { code?: unknown };
}

type RequestHeaders = Headers | Record<string, string | string[] | undefined>;

/** What the SDK transports pass with a message: the HTTP request's headers (1.x `requestInfo`, v2 `request`). */
interface Extra {
  requestInfo?: { headers?: RequestHeaders };
  request?: { headers?: RequestHeaders };
}

/** Longest task id a span carries (a longer one is not kept, as the wire keeps none). */
const MAX_TASK_ID_CHARS = 256;

/** Default of `cancellationWaitMs`: how long a request whose stream closed is watched for its result. */
export const DEFAULT_CANCELLATION_WAIT_MS = 30_000;

/** The handler-settled hooks of the instrumented transports (instrumentMcpServer tells them). */
const settledHooks = new WeakMap<object, (id: string, produced: boolean) => void>();

/**
 * A request handler of a server connected to `transport` settled: `produced` when it returned a result
 * (the SDK may drop it unsent when the request's stream was closed), false when it threw or its tool
 * failed (`isError`: a tool that stopped on the cancellation).
 */
export function handlerSettled(transport: object | undefined, id: unknown, produced: boolean): void {
  if (transport === undefined || (typeof id !== 'string' && typeof id !== 'number')) return;
  settledHooks.get(transport)?.(String(id), produced);
}

/** The message handlers instrumentServerTransport installed, so that `register` does not wrap one again. */
const wrappedHandlers = new WeakSet<object>();

/**
 * Whether instrumentServerTransport already wraps this transport's message handler: the transport
 * itself, or (for the Node transport, which forwards `onmessage`) the web-standard transport inside it.
 */
export function isInstrumentedServerTransport(transport: ServerTransportLike): boolean {
  const handler = transport.onmessage;
  return handler !== undefined && wrappedHandlers.has(handler);
}

/**
 * Server request spans (kind SERVER, named and attributed as the client's request spans) for an MCP
 * SDK server transport: a span from each incoming JSON-RPC request to the response the transport
 * sends for it. The request's handler runs inside the span's context. Patches the transport in place.
 *
 * With `instrumentEventStore` on the transport's store, the transport also tells the store whether each
 * stream it stores a message for has a live connection (stream-liveness.ts): a response stored while
 * its stream was detached (SEP-1699 polling) was never delivered, so its first replay is no duplicate.
 */
export function instrumentServerTransport<T extends ServerTransportLike>(
  transport: T,
  options: ServerTransportInstrumentationOptions = {},
): T {
  // Id policy (raw | hmac | omit): applied to every span through the tracer, see id-policy.ts.
  const tracer = withIdPolicy(tracerSource(options.tracerProvider), createIdRecorder(options));
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const cancellationWaitMs = Math.min(options.cancellationWaitMs ?? DEFAULT_CANCELLATION_WAIT_MS, timeoutMs);
  /** The version the session negotiated (its initialize result): the era of its requests without the header. */
  let negotiated: string | undefined;
  const maxOpen = options.maxOpenRequests ?? 10_000;
  // Capped by refusal, not eviction (a BoundedMap would end someone else's span): past maxOpen a
  // request gets no span; each entry leaves with its response or its timeout.
  const open = new Map<string, Open>();
  /** Messages already given a span: a handler wrapped twice (assigned over itself) must not start two. */
  const seen = new WeakSet<object>();

  const end = (id: string, error: string | undefined, message?: Message): void => {
    const entry = open.get(id);
    if (!entry) return;
    open.delete(id);
    clearTimeout(entry.timer);
    if (transport.sessionId !== undefined) entry.span.setAttribute(ATTR_MCP_SESSION_ID, transport.sessionId);
    const version = message?.result?.protocolVersion;
    if (entry.method === 'initialize' && typeof version === 'string') {
      entry.span.setAttribute(ATTR_MCP_PROTOCOL_VERSION, version);
      negotiated = version;
    }
    // What the answer shows of a task (the handle a call was answered with, a tasks/* answer): member look-ups.
    const facts = message === undefined ? undefined : taskFactsOfAnswer(entry.method, message as JsonRpcMessage);
    if (facts !== undefined) {
      const attributes: Attributes = {};
      addTaskFacts(attributes, facts, !isTaskIdMethod(entry.method));
      entry.span.setAttributes(attributes);
    }
    if (error !== undefined) setError(entry.span, error);
    entry.span.end();
  };

  /**
   * The fate of a request whose stream closed before its result: `completed` true when its handler
   * produced the result afterwards, false when the handler ended without one (it threw, or its tool
   * failed), undefined when nothing was seen within cancellationWaitMs: silence says nothing of whether
   * the work stopped, so the span leaves the fate unknown. The client was not given the result either
   * way: the span ends `aborted`.
   */
  const fate = (id: string, completed: boolean | undefined): void => {
    const entry = open.get(id);
    if (!entry?.closed) return;
    if (completed !== undefined) entry.span.setAttribute(ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION, completed);
    end(id, ErrorType.ABORTED);
  };

  /** The transport closed with requests open: their streams closed before their results. */
  const closed = (): void => {
    for (const [id, entry] of open) {
      if (entry.closed) continue;
      entry.closed = true;
      clearTimeout(entry.timer);
      entry.timer = setTimeout(() => fate(id, undefined), cancellationWaitMs);
      entry.timer.unref();
    }
  };
  settledHooks.set(transport, (id, produced) => fate(id, produced));

  /** One SPAN_TASK_STATUS span for a status notification the server sends (both shapes). */
  const taskNotice = (message: JsonRpcMessage): void => {
    try {
      const facts = taskFactsOfNotification(message);
      if (facts === undefined) return;
      const attributes: Attributes = {};
      addTaskFacts(attributes, facts, true);
      if (transport.sessionId !== undefined) attributes[ATTR_MCP_SESSION_ID] = transport.sessionId;
      if (negotiated !== undefined) attributes[ATTR_MCP_PROTOCOL_VERSION] = negotiated;
      tracer().startSpan(SPAN_TASK_STATUS, { kind: SpanKind.INTERNAL, attributes }).end();
    } catch (error) {
      diag.error('resumewatch: recording a task status failed', error);
    }
  };

  const start = (request: unknown, extra: Extra | undefined): Span | undefined => {
    if (!isJsonRpcMessage(request) || !isRequest(request)) return undefined;
    if (open.size >= maxOpen || seen.has(request)) return undefined;
    seen.add(request);
    const id = String(request.id);
    const target = requestTarget(request);
    // Tasks: a request naming one carries its id (bounded, as the client's spans keep it); a call that asked for one says so.
    const taskId = isTaskIdMethod(request.method) ? requestTaskId(request) : undefined;
    const attributes: Attributes = {
      [ATTR_MCP_METHOD_NAME]: request.method,
      [ATTR_JSONRPC_REQUEST_ID]: id,
      [ATTR_NETWORK_TRANSPORT]: 'tcp',
      [ATTR_NETWORK_PROTOCOL_NAME]: 'http',
    };
    if (transport.sessionId !== undefined) attributes[ATTR_MCP_SESSION_ID] = transport.sessionId;
    const headers = extra?.requestInfo?.headers ?? extra?.request?.headers;
    // Per exchange: the header, else the request's own `_meta` claim (an initialize: the version it asks
    // for, replaced by the negotiated one at its result), else the session's negotiated version.
    const version =
      headerOf(headers, HEADER_PROTOCOL_VERSION) ??
      metaVersion(request.params) ??
      initializeVersion(request.method, request.params) ??
      negotiated;
    if (version !== undefined) attributes[ATTR_MCP_PROTOCOL_VERSION] = version;
    addTargetAttributes(attributes, request.method, target);
    if (taskId !== undefined && taskId.length <= MAX_TASK_ID_CHARS) attributes[ATTR_MCP_TASK_ID] = taskId;
    if (taskRequested(request)) attributes[ATTR_MCP_TASK_REQUESTED] = true;
    const span = tracer().startSpan(
      requestSpanName(request.method, target),
      { kind: SpanKind.SERVER, attributes },
      parentOf(headers),
    );
    end(id, ErrorType.ABORTED);
    const timer = setTimeout(() => end(id, ErrorType.TIMEOUT), timeoutMs);
    timer.unref();
    open.set(id, { span, method: request.method, timer, closed: false });
    return span;
  };

  type Handler = (message: never, extra?: never) => void;
  const wrap = (handler: Handler | undefined): Handler | undefined => {
    if (!handler) return handler;
    const wrapped = function (this: unknown, message: never, extra?: never): void {
      let span: Span | undefined;
      try {
        span = start(message, extra as Extra | undefined);
      } catch (error) {
        diag.error('resumewatch: recording a server request failed', error);
      }
      if (!span) return handler.call(this, message, extra);
      return otelContext.with(trace.setSpan(otelContext.active(), span), () => handler.call(this, message, extra));
    };
    wrappedHandlers.add(wrapped);
    return wrapped;
  };

  // The Node transport forwards onmessage to an inner web-standard transport through an accessor:
  // keep going through it, so the handler still reaches the transport that calls it.
  const inherited = findAccessor(transport, 'onmessage');
  let handler = wrap(transport.onmessage);
  if (inherited) inherited.set!.call(transport, handler);
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    enumerable: true,
    get: () => (inherited ? (inherited.get!.call(transport) as Handler | undefined) : handler),
    set: (next: Handler | undefined) => {
      handler = wrap(next);
      if (inherited) inherited.set!.call(transport, handler);
    },
  });

  const send = transport.send.bind(transport);
  // Named to an instrumented event store while `send` stores the message: it tells a response stored
  // for a stream with a live connection (delivered) from one stored while the stream was detached.
  const liveness = streamLivenessOf(transport);
  transport.send = ((message: never, sendOptions?: never) => {
    const m = message as Message;
    // A task status notification the server sends: one mcp.task.status span (a string compare per notification).
    if (m && typeof m === 'object' && isTaskNotification(m as JsonRpcMessage)) taskNotice(m as JsonRpcMessage);
    if (m && typeof m === 'object' && m.method === undefined && m.id !== undefined && m.id !== null && open.size > 0) {
      const id = String(m.id);
      const entry = open.get(id);
      if (entry?.closed) {
        // Sent after its stream closed (the SDK 1.x sends it; the client never reads it): the work ran on.
        fate(id, m.error === undefined && m.result?.isError !== true);
      } else if (entry && m.error !== undefined) {
        const code = typeof m.error.code === 'number' ? String(m.error.code) : ErrorType.OTHER;
        entry.span.setAttribute(ATTR_RPC_RESPONSE_STATUS_CODE, code);
        end(id, code, m);
      } else if (entry) {
        end(id, entry.method === 'tools/call' && m.result?.isError === true ? ErrorType.TOOL_ERROR : undefined, m);
      }
    }
    return sendingFrom(liveness, () => send(message, sendOptions));
  }) as T['send'];

  // Closing the transport closes the request's stream (the v2 SDK's per-request transport closes when
  // the client closes its response: the 2026-07-28 cancellation).
  const closable = transport as unknown as { close?: () => Promise<void> };
  const close = closable.close?.bind(transport);
  if (close)
    closable.close = () => {
      if (open.size > 0) closed();
      return close();
    };
  // A transport can also close without its own close(): on a DELETE, the SDK 1.x Node transport closes
  // the web-standard transport inside it, which calls the handler the outer one handed it.
  watchInnerClose(transport, () => {
    if (open.size > 0) closed();
  });
  return transport;
}

/**
 * For a transport whose `onclose` is an accessor handing the handler to a transport inside it (the SDK
 * 1.x Node transport): the inner transport gets a handler that calls `hook` first. Reading `onclose`
 * still gives the handler that was set (the SDK's Protocol chains on it at connect). A transport whose
 * `onclose` is a plain property closes through its own close(), patched above.
 */
function watchInnerClose(transport: object, hook: () => void): void {
  let descriptor: PropertyDescriptor | undefined;
  for (
    let o: object | null = transport;
    o !== null && descriptor === undefined;
    o = Object.getPrototypeOf(o) as object | null
  )
    descriptor = Object.getOwnPropertyDescriptor(o, 'onclose');
  const { get, set } = descriptor ?? {};
  if (get === undefined || set === undefined) return;
  let handler = get.call(transport) as (() => void) | undefined;
  const hooked = (): void => {
    hook();
    handler?.();
  };
  Object.defineProperty(transport, 'onclose', {
    configurable: true,
    enumerable: descriptor!.enumerable ?? false,
    get: () => handler,
    set: (next: (() => void) | undefined) => {
      handler = next;
      set.call(transport, hooked);
    },
  });
  set.call(transport, hooked);
}

/** A header of the request, from the SDK's record (1.x) or a web `Headers` (v2). */
function headerOf(headers: RequestHeaders | undefined, name: string): string | undefined {
  if (headers === undefined) return undefined;
  const value = headers instanceof Headers ? headers.get(name) : headers[name];
  return typeof value === 'string' ? value : undefined;
}

function metaVersion(params: Record<string, unknown> | undefined): string | undefined {
  const meta = params?._meta as Record<string, unknown> | undefined;
  const version = meta?.[META_PROTOCOL_VERSION];
  return typeof version === 'string' ? version : undefined;
}

const headersGetter: TextMapGetter<RequestHeaders> = {
  keys: (carrier) => (carrier instanceof Headers ? [...carrier.keys()] : Object.keys(carrier)),
  get: (carrier, key) => (carrier instanceof Headers ? (carrier.get(key) ?? undefined) : carrier[key]),
};

/**
 * The span's parent: the active span (an HTTP server instrumentation's), else the trace context the
 * request carries (`traceparent`), so that a client that propagates it shares its trace.
 */
function parentOf(headers: RequestHeaders | undefined): Context {
  const active = otelContext.active();
  if (headers === undefined || trace.getSpan(active) !== undefined) return active;
  return propagation.extract(active, headers, headersGetter);
}

function findAccessor(object: object, name: string): PropertyDescriptor | undefined {
  for (let o: object | null = object; o; o = Object.getPrototypeOf(o) as object | null) {
    const descriptor = Object.getOwnPropertyDescriptor(o, name);
    if (descriptor) return descriptor.get && descriptor.set ? descriptor : undefined;
  }
  return undefined;
}
