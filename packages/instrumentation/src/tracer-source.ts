import type { Tracer } from '@opentelemetry/api';

/**
 * How the span recorder obtains its tracer: resolved at each span, so that a tracer provider set after
 * instrumentFetch (or the instrumentation's own, once enabled) is used. Internal.
 */
export type TracerSource = () => Tracer;
