/**
 * How the client benchmarks build each fetch they compare. The only place that names options of the
 * wrappers, so that a change of their options (a rename, an option removed) is followed here once;
 * options are passed through as a plain object and only those the wrapper still declares are read.
 */
import type { TracerProvider } from '@opentelemetry/api';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { guardedFetch } from '@resumewatch/guard';
import type { FetchLike } from '@resumewatch/wire';
import { instrumentFetch } from '../src/index.js';
import type { InstrumentFetchOptions } from '../src/index.js';

/** instrumentFetch with spans through `provider`; `extra` is handed through unchanged. */
export function ourInstrumentedFetch(provider: TracerProvider, extra: Record<string, unknown> = {}): FetchLike {
  return instrumentFetch({ tracerProvider: provider, ...extra } as InstrumentFetchOptions);
}

/** The guard alone, as an application installs it. */
export function ourGuardedFetch(extra: Record<string, unknown> = {}): FetchLike {
  return guardedFetch(extra as Parameters<typeof guardedFetch>[0] & object);
}

/**
 * @opentelemetry/instrumentation-undici, the stock OpenTelemetry instrumentation of Node's fetch: one
 * client span per HTTP request, from undici's diagnostics channels. It sees every fetch of the process
 * while enabled, so a benchmark enables it only around its own rounds; the client it measures uses the
 * SDK's plain fetch.
 */
export function undiciInstrumentation(provider: TracerProvider): { enable(): void; disable(): void } {
  // Constructed enabled (with `enabled: false` it subscribes on enable() but records nothing), then
  // switched off until a round asks for it.
  const instrumentation = new UndiciInstrumentation();
  instrumentation.disable();
  instrumentation.setTracerProvider(provider);
  return {
    enable: () => instrumentation.enable(),
    disable: () => instrumentation.disable(),
  };
}
