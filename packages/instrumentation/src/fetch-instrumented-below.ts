import { channel } from 'node:diagnostics_channel';

/**
 * The diagnostics channel on which undici (Node's fetch) publishes each request as it is created: where
 * HTTP client instrumentations of fetch (`@opentelemetry/instrumentation-undici`, which
 * `@opentelemetry/auto-instrumentations-node` enables, and APM agents) add their trace context headers.
 * Undici's name, not the project's.
 */
const undiciRequestCreate = channel('undici:request:create');

/**
 * Whether something below the wrapped fetch instruments its requests, and so adds a `traceparent` of
 * its own to each. Undici appends it without looking for one already there.
 */
export function fetchInstrumentedBelow(): boolean {
  return undiciRequestCreate.hasSubscribers;
}
