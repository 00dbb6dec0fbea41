import { trace } from '@opentelemetry/api';
import type { TracerProvider } from '@opentelemetry/api';
import { createGuardListener } from '@resumewatch/guard';
import type { GuardListener, GuardOptions } from '@resumewatch/guard';
import { DEFAULT_REISSUE_WINDOW_MS, WireObserver } from '@resumewatch/wire';
import type { FetchLike, RequestRecord } from '@resumewatch/wire';
import { callBelowInstrumentedFetch } from './fetch-scope.js';
import { createIdRecorder, withIdPolicy } from './id-policy.js';
import { TRACER_SCOPE } from './semconv.js';
import { SpanRecorder, type OpenRequestSpan } from './span-recorder.js';
import type { TracerSource } from './tracer-source.js';
import type { InstrumentFetchOptions, InstrumentedFetch } from './types.js';
import { PACKAGE_VERSION } from './version.js';

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
  // Id policy (raw | hmac | omit): applied to every span through the tracer, see id-policy.ts.
  const ids = createIdRecorder(options);
  tracer = withIdPolicy(tracer, ids);
  const observer = new WireObserver(options.observer);
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const recorder = new SpanRecorder({
    tracer,
    observer,
    requestTimeoutMs,
    digestKey: ids.digestKey,
    reissueWindowMs: options.reissueWindowMs ?? DEFAULT_REISSUE_WINDOW_MS,
  });
  // The observer calls the guard (a deciding listener) before the recorder whatever the order they are
  // added in; what it did travels on the request or event (`guardAction`), which the recorder reads.
  observer.addListener(recorder);
  const guardOptions = options.guard === true ? {} : options.guard || undefined;
  const guard = guardOptions ? guardListener(guardOptions, requestTimeoutMs) : undefined;
  if (guard) observer.addListener(guard, { filters: true });
  const below: FetchLike = fetch ?? ((input, init) => globalThis.fetch(input, init));
  // Marked, so that the global fetch patch of `register` does not instrument the same exchange again.
  const target: FetchLike = (input, init) => callBelowInstrumentedFetch(() => below(input, init));
  const observed = observer.wrap(target);
  const wrapped = guard ? withGuardFetchSide(observed, guard, guardOptions!) : observed;
  Object.defineProperties(wrapped, {
    observer: { value: observer },
    guard: { value: guard },
    stats: { value: () => recorder.stats() },
    requestSpans: {
      value: {
        open: () => recorder.openRequestSpans(),
        openOf: (record: RequestRecord) => recorder.openRequestSpan(record),
        reopen: (open: OpenRequestSpan, url: string) => recorder.reopenRequest(open, url),
        handOver: () => recorder.handOverRequestSpans(),
      },
    },
  });
  instrumented.add(wrapped);
  return wrapped as InstrumentedFetch;
}

/**
 * The guard's fetch side around the observed fetch, as guardedFetch applies it: the task guard outside the
 * observer (a poll it delays is observed, and timed, when it leaves; a re-issue of a live task's call it
 * answers with the task's handle never reaches the observer, so no span claims a call the server never saw),
 * the idempotency keys outside both (they must be in the body before the guard and the observer read it),
 * and outermost the session refusals (a request on a session the server refused, or a GET after its 405,
 * answered with the server's own earlier answer: seen by nothing else, no span claims it reached the server).
 */
function withGuardFetchSide(observed: FetchLike, guard: GuardListener, options: GuardOptions): FetchLike {
  const tasked = guard.withTaskGuard(observed);
  const keyed = options.idempotencyKey ? guard.withIdempotencyKeys(tasked) : tasked;
  return guard.withSessionRefusals(keyed);
}

function guardListener(options: GuardOptions, requestTimeoutMs: number): GuardListener {
  // One deadline for the spans and the guard, unless the guard was given its own.
  return createGuardListener({ requestDeadlineMs: requestTimeoutMs, ...options });
}
