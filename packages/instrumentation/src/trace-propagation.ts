import { context as otelContext, propagation, trace } from '@opentelemetry/api';
import type { SpanContext } from '@opentelemetry/api';

/**
 * The headers that carry `span` to the server (W3C `traceparent` and `tracestate` with the W3C
 * propagator), through the OpenTelemetry propagation API as the HTTP client instrumentations inject
 * theirs: the server's span of the request then joins the client's trace, so that the detector finds
 * both sides of a re-issued request's first attempt in one trace. Empty without a global propagator.
 */
export function traceContextHeaders(span: SpanContext): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpanContext(otelContext.active(), span), carrier);
  return carrier;
}
