import { vi } from 'vitest';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { BasicTracerProvider, ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { instrumentEventStore, instrumentFetch, instrumentServerTransport } from '@resumewatch/instrumentation';
import type { GuardOptions, InstrumentedFetch } from '@resumewatch/instrumentation';
import { startLabServer } from '@resumewatch/lab';
import type { LabServer } from '@resumewatch/lab';
import { startServer } from '../src/index.js';
import type { Finding, RunningServer } from '../src/index.js';
import { providerWith } from './otlp.js';

/** How spans travel to the detector: each is the real OpenTelemetry OTLP exporter of that protocol. */
export type Protocol = 'json' | 'proto' | 'grpc';
/** Whose spans the detector gets: the instrumented client's, or the instrumented lab server's alone. */
export type Side = 'client' | 'server';

/** One lab server, one `resumewatch serve` and one tracer provider exporting to it, for one test. */
export interface Rig {
  lab: LabServer;
  detector: RunningServer;
  provider: BasicTracerProvider;
  service: string;
  /** Client side: an instrumented fetch; server side: a plain fetch (the server's store and transports are instrumented). */
  fetch: InstrumentedFetch | typeof globalThis.fetch;
  /** Waits for the client's open resume spans, exports everything, lets the storm window pass. */
  settle(): Promise<void>;
  findings(sessionId?: string): Finding[];
  close(): Promise<void>;
}

function exporter(protocol: Protocol, detector: RunningServer): SpanExporter {
  const http = `http://127.0.0.1:${detector.httpPort}/v1/traces`;
  if (protocol === 'json') return new JsonExporter({ url: http });
  if (protocol === 'proto') return new ProtoExporter({ url: http });
  return new GrpcExporter({ url: `http://127.0.0.1:${detector.grpcPort}` });
}

/** Polls until `check` is truthy; bounded and generous for a loaded machine. */
export function waitFor<T>(check: () => T | undefined | false, what: string, timeoutMs = 20_000): Promise<T> {
  return vi.waitFor(
    () => {
      const value = check();
      if (!value) throw new Error(`timed out waiting for ${what}`);
      return value;
    },
    { timeout: timeoutMs, interval: 25 },
  );
}

/** Optional parts of a client-side rig. */
export interface RigOptions {
  /** Enforce the guard in the instrumented client fetch (`instrumentFetch({ guard })`). */
  guard?: boolean | GuardOptions;
  /** Also hands every exported span to this function (to read the spans' own attributes). */
  tee?: (spans: readonly ReadableSpan[]) => void;
}

/** The exporter, also handing each batch to `tee`. */
function teed(inner: SpanExporter, tee: RigOptions['tee']): SpanExporter {
  if (!tee) return inner;
  return {
    export(spans, done) {
      tee(spans);
      inner.export(spans, done);
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

let serial = 0;

export async function startRig(side: Side, protocol: Protocol, options: RigOptions = {}): Promise<Rig> {
  const service = `e2e-${side}-${protocol}-${++serial}`;
  const detector = await startServer({ port: 0, grpcPort: 0, metricsPort: 0, output: null });
  const tracerProvider = providerWith(teed(exporter(protocol, detector), options.tee), service);
  const lab =
    side === 'server'
      ? await startLabServer({
          retryIntervalMs: 50,
          wrapEventStore: (store, sessionId) => instrumentEventStore(store, { sessionId, tracerProvider }),
          onTransport: (transport) => void instrumentServerTransport(transport, { tracerProvider }),
        })
      : await startLabServer({ retryIntervalMs: 50 });
  // A request the restart killed never ends; its span must not outlive the test by minutes.
  const instrumented = side === 'client' ? instrumentFetch({ tracerProvider, replayWindowMs: 500, requestTimeoutMs: 10_000, guard: options.guard }) : undefined;
  const findings = (sessionId?: string): Finding[] =>
    detector.findings().filter((f) => f.service === service && (sessionId === undefined || f.session_id === sessionId));
  return {
    lab,
    detector,
    provider: tracerProvider,
    service,
    fetch: instrumented ?? globalThis.fetch,
    findings,
    async settle() {
      if (instrumented) {
        await waitFor(() => instrumented.stats().openResumes === 0 && instrumented.stats().pendingHttp === 0, 'the client resume spans to end');
      }
      await tracerProvider.forceFlush();
      // A storm seen only by server spans ends when the window passes quietly (the eviction is the lab's 404,
      // answered before any store replay); the detector's clock is moved past it instead of waiting a minute.
      detector.detector.advance(Date.now() + detector.config.stormWindowMs + 1);
    },
    async close() {
      await Promise.allSettled([lab.close(), tracerProvider.shutdown()]);
      await detector.close();
    },
  };
}
