import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { BasicTracerProvider, ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { instrumentEventStore, instrumentFetch, instrumentServerTransport } from '@resumewatch/instrumentation';
import type { GuardOptions, InstrumentedFetch } from '@resumewatch/instrumentation';
import { startLabServer } from '@resumewatch/lab';
import type { LabServer } from '@resumewatch/lab';
import { SPAN_STREAM_RESUME } from '@resumewatch/semconv';
import { startServer } from '../../src/index.js';
import type { RunningServer } from '../../src/index.js';
import type { Finding } from '@resumewatch/detector';
import { providerWith } from '../../../detector/test/helpers/otlp.js';
import { waitFor } from '../../../detector/test/helpers/wait.js';

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
  /** Waits for the client's open resume spans, exports everything (serve has it), lets the storm window pass. */
  settle(): Promise<void>;
  findings(sessionId?: string): Finding[];
  /** The resume spans exported to the detector, as sent (to check their attributes). */
  resumeSpans(): readonly ReadableSpan[];
  close(): Promise<void>;
}

/**
 * Forwards to the real exporter and keeps the resume spans it exported (a test's few), counting the
 * exports not yet answered: the provider's forceFlush exports what is still queued, but does not wait
 * for a batch its timer already handed to the exporter (BatchSpanProcessor), which may reach `serve`
 * after it on a loaded machine.
 */
class ResumeRecordingExporter implements SpanExporter {
  readonly resumes: ReadableSpan[] = [];
  /** Exports handed to the real exporter and not yet answered by it. */
  inFlight = 0;
  constructor(private readonly inner: SpanExporter) {}
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    for (const span of spans)
      if (span.name === SPAN_STREAM_RESUME && this.resumes.length < 1_000) this.resumes.push(span);
    this.inFlight++;
    this.inner.export(spans, (result) => {
      this.inFlight--;
      done(result);
    });
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

function exporter(protocol: Protocol, detector: RunningServer): SpanExporter {
  const http = `http://127.0.0.1:${detector.httpPort}/v1/traces`;
  if (protocol === 'json') return new JsonExporter({ url: http });
  if (protocol === 'proto') return new ProtoExporter({ url: http });
  return new GrpcExporter({ url: `http://127.0.0.1:${detector.grpcPort}` });
}

/** Optional parts of a client-side rig. */
export interface RigOptions {
  /** Enforce the guard in the instrumented client fetch (`instrumentFetch({ guard })`). */
  guard?: boolean | GuardOptions;
  /** Also hands every exported span to this function (to read the spans' own attributes). */
  tee?: (spans: readonly ReadableSpan[]) => void;
  /**
   * The instrumented client's request deadline. Default 10000 ms (a request the restart killed never
   * ends; its span must not outlive the test by minutes); shorter where the deadline is the evidence.
   */
  requestTimeoutMs?: number;
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
  const recording = new ResumeRecordingExporter(teed(exporter(protocol, detector), options.tee));
  const tracerProvider = providerWith(recording, service);
  const lab =
    side === 'server'
      ? await startLabServer({
          retryIntervalMs: 50,
          wrapEventStore: (store, sessionId) => instrumentEventStore(store, { sessionId, tracerProvider }),
          onTransport: (transport) => void instrumentServerTransport(transport, { tracerProvider }),
        })
      : await startLabServer({ retryIntervalMs: 50 });
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const instrumented =
    side === 'client' ? instrumentFetch({ tracerProvider, requestTimeoutMs, guard: options.guard }) : undefined;
  const findings = (sessionId?: string): Finding[] =>
    detector.findings().filter((f) => f.service === service && (sessionId === undefined || f.session_id === sessionId));
  return {
    lab,
    detector,
    provider: tracerProvider,
    service,
    fetch: instrumented ?? globalThis.fetch,
    findings,
    resumeSpans: () => recording.resumes,
    async settle() {
      if (instrumented) {
        await waitFor(() => {
          const stats = instrumented.stats();
          return stats.openResumes === 0 && stats.pendingHttp === 0 && stats.heldPolls === 0;
        }, 'the client resume spans to end');
      }
      await tracerProvider.forceFlush();
      // Every batch answered by serve, the timer's too: its spans are in the detector.
      await waitFor(() => recording.inFlight === 0, 'the span exports to be answered');
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
