import { trace } from '@opentelemetry/api';
import type { TracerProvider } from '@opentelemetry/api';
import { WireObserver } from '@resumewatch/wire';
import type { FetchLike } from '@resumewatch/wire';
import { TRACER_SCOPE } from './semconv.js';
import { SpanRecorder } from './span-recorder.js';
import type { InstrumentFetchOptions, InstrumentedFetch, TracerSource } from './types.js';
import { PACKAGE_VERSION } from './version.js';

export const DEFAULT_REPLAY_WINDOW_MS = 2_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;

const instrumented = new WeakSet<FetchLike>();

/** Whether `fetch` came from instrumentFetch (so it is not wrapped twice). */
export function isInstrumentedFetch(fetch: unknown): fetch is InstrumentedFetch {
  return typeof fetch === 'function' && instrumented.has(fetch as FetchLike);
}

/**
 * A fetch that observes the MCP Streamable HTTP wire and emits the request, reattach, resume and
 * terminal spans. Use one per transport (or per client): its session and request state is scoped to
 * it, as a transport's is. Without `fetch`, calls the global fetch at each call.
 */
export function instrumentFetch(options?: InstrumentFetchOptions): InstrumentedFetch;
export function instrumentFetch(fetch: FetchLike | undefined, options?: InstrumentFetchOptions): InstrumentedFetch;
export function instrumentFetch(
  fetchOrOptions?: FetchLike | InstrumentFetchOptions,
  maybeOptions?: InstrumentFetchOptions,
): InstrumentedFetch {
  const fetch = typeof fetchOrOptions === 'function' ? fetchOrOptions : undefined;
  const options = (typeof fetchOrOptions === 'function' ? maybeOptions : (fetchOrOptions ?? maybeOptions)) ?? {};
  return createInstrumentedFetch(fetch, options, tracerSource(options.tracerProvider));
}

export function tracerSource(provider: TracerProvider | undefined): TracerSource {
  const tracer = (provider ?? trace).getTracer(TRACER_SCOPE, PACKAGE_VERSION);
  return () => tracer;
}

/** Shared by instrumentFetch and McpResumeInstrumentation (which supplies its own tracer). */
export function createInstrumentedFetch(
  fetch: FetchLike | undefined,
  options: InstrumentFetchOptions,
  tracer: TracerSource,
): InstrumentedFetch {
  const observer = new WireObserver(options.observer);
  const recorder = new SpanRecorder({
    tracer,
    observer,
    replayWindowMs: options.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
  });
  observer.addListener(recorder);
  const target: FetchLike = fetch ?? ((input, init) => globalThis.fetch(input, init));
  const wrapped = observer.wrap(target);
  Object.defineProperties(wrapped, {
    observer: { value: observer },
    stats: { value: () => recorder.stats() },
  });
  instrumented.add(wrapped);
  return wrapped as InstrumentedFetch;
}
