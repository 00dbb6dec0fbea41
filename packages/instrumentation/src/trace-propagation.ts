import {
  ROOT_CONTEXT,
  TraceFlags,
  context as otelContext,
  createContextKey,
  isSpanContextValid,
  propagation,
  trace,
} from '@opentelemetry/api';
import type { SpanContext, TextMapPropagator } from '@opentelemetry/api';

/**
 * The headers that carry `span` to the server (W3C `traceparent` and `tracestate` with the W3C
 * propagator), through the OpenTelemetry propagation API as the HTTP client instrumentations inject
 * theirs: the server's span of the request then joins the client's trace, so that the detector finds
 * both sides of a re-issued request's first attempt in one trace. Empty without a global propagator.
 */
export function traceContextHeaders(span: SpanContext): Record<string, string> {
  if (isW3CTraceContext(globalPropagator())) return w3cTraceContext(span);
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpanContext(otelContext.active(), span), carrier);
  return carrier;
}

/** The key of @opentelemetry/core's `suppressTracing` (createContextKey is `Symbol.for` of it). */
const SUPPRESS_TRACING = createContextKey('OpenTelemetry SDK Context Key SUPPRESS_TRACING');

/**
 * What @opentelemetry/core's W3CTraceContextPropagator injects for `span` in the active context,
 * written here without its calls through the propagation API (a Context made, the span context read
 * back from it, a setter per header): about 4 k instructions a request at the gateway. Kept to the
 * same expressions, its flags' formatting included.
 */
function w3cTraceContext(span: SpanContext): Record<string, string> {
  const carrier: Record<string, string> = {};
  if (otelContext.active().getValue(SUPPRESS_TRACING) === true || !isSpanContextValid(span)) return carrier;
  carrier.traceparent = traceparentOf(span);
  if (span.traceState) carrier.tracestate = span.traceState.serialize();
  return carrier;
}

function traceparentOf(span: SpanContext): string {
  return `00-${span.traceId}-${span.spanId}-0${Number(span.traceFlags || TraceFlags.NONE).toString(16)}`;
}

/** The API's global propagator: it keeps it behind an accessor TypeScript calls private (there since API 1.0). */
function globalPropagator(): TextMapPropagator | undefined {
  const api = propagation as unknown as { _getGlobalPropagator?: () => TextMapPropagator };
  return typeof api._getGlobalPropagator === 'function' ? api._getGlobalPropagator() : undefined;
}

/** Propagators found to be @opentelemetry/core's W3C one (its class, not overridden, writing what it should). */
const checked = new WeakMap<object, boolean>();

/**
 * Whether `propagator` is @opentelemetry/core's W3CTraceContextPropagator itself (not a subclass, no
 * inject of its own), which this package cannot import (core is no dependency of it): known by its
 * class, and proven once per instance by what its inject writes for a span with flags and a trace
 * state. Anything else (B3, Jaeger, a composite, a wrapped or subclassed W3C) gets its own inject.
 */
function isW3CTraceContext(propagator: TextMapPropagator | undefined): boolean {
  if (propagator === undefined) return false;
  let known = checked.get(propagator);
  if (known === undefined) {
    known = provenW3C(propagator);
    checked.set(propagator, known);
  }
  return known;
}

function provenW3C(propagator: TextMapPropagator): boolean {
  const type = Object.getPrototypeOf(propagator) as { constructor?: { name?: string } } | null;
  if (
    type?.constructor?.name !== 'W3CTraceContextPropagator' ||
    Object.prototype.hasOwnProperty.call(propagator, 'inject')
  )
    return false;
  const fields = propagator.fields();
  if (fields.length !== 2 || fields[0] !== 'traceparent' || fields[1] !== 'tracestate') return false;
  const probe: SpanContext = {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: TraceFlags.SAMPLED,
    traceState: { serialize: () => 'probe=1' } as SpanContext['traceState'],
  };
  const injected: Record<string, string> = {};
  try {
    propagator.inject(trace.setSpanContext(ROOT_CONTEXT, probe), injected, {
      set: (carrier, key, value) => ((carrier as Record<string, string>)[key] = value),
    });
  } catch {
    return false;
  }
  const keys = Object.keys(injected);
  return (
    keys.length === 2 &&
    keys[0] === 'traceparent' &&
    injected.traceparent === traceparentOf(probe) &&
    keys[1] === 'tracestate' &&
    injected.tracestate === 'probe=1'
  );
}
