import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  instrumentEventStore,
  instrumentFetch,
  instrumentMcpServer,
  instrumentServerTransport,
} from '@resumewatch/instrumentation';
import {
  V2_SERVER_SCENARIO_NAMES,
  runScenario,
  startLabServer,
  type ScenarioName,
  type TaskScenarioName,
} from '@resumewatch/lab';
import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';
import { waitFor } from '../../../detector/test/helpers/wait.js';

/** One OTLP/HTTP export request as an exporter sent it: replayed byte for byte. */
export interface OtlpBatch {
  body: Buffer;
  contentType: string;
}

/**
 * A stand-in collector on 127.0.0.1 that keeps every OTLP/HTTP export request it receives, in arrival
 * order, and acknowledges it: the real exporters' bodies, recorded once and replayed as often as a test likes.
 */
async function startOtlpRecorder(): Promise<{ url: string; batches: OtlpBatch[]; close(): Promise<void> }> {
  const batches: OtlpBatch[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      batches.push({ body: Buffer.concat(chunks), contentType: req.headers['content-type'] ?? 'application/json' });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    batches,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Spans per export request: small, so that a kill can fall between any few spans of a scenario. */
const SPANS_PER_BATCH = 3;

function provider(url: string, service: string): BasicTracerProvider {
  return new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: service }),
    spanProcessors: [
      new BatchSpanProcessor(new JsonExporter({ url }), {
        maxExportBatchSize: SPANS_PER_BATCH,
        scheduledDelayMillis: 20,
      }),
    ],
  });
}

/**
 * Runs one lab scenario once with the instrumentation on both sides (the client's fetch as
 * `<service>/client`, the lab server's store and transports as `<service>/server`), and returns the
 * OTLP/JSON export requests the real exporter sent, in order.
 */
export async function recordLabScenario(
  name: ScenarioName,
  service: string,
  options: { requestTimeoutMs?: number } = {},
): Promise<OtlpBatch[]> {
  const recorder = await startOtlpRecorder();
  const clientProvider = provider(recorder.url, `${service}/client`);
  const serverProvider = provider(recorder.url, `${service}/server`);
  const lab = await startLabServer({
    retryIntervalMs: 50,
    wrapEventStore: (store, sessionId) => instrumentEventStore(store, { sessionId, tracerProvider: serverProvider }),
    onTransport: (transport) => void instrumentServerTransport(transport, { tracerProvider: serverProvider }),
  });
  const fetch = instrumentFetch({
    tracerProvider: clientProvider,
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
  });
  try {
    await runScenario(name, { serverUrl: lab.url, controlUrl: lab.controlUrl, fetch, maxReconnects: 5 });
    await waitFor(() => {
      const stats = fetch.stats();
      return stats.openResumes === 0 && stats.pendingHttp === 0 && stats.heldPolls === 0;
    }, `the client spans of ${name} to end`);
  } finally {
    await lab.close();
    await Promise.all([clientProvider.shutdown(), serverProvider.shutdown()]);
    await recorder.close();
  }
  return recorder.batches;
}

/** The v2 scenarios start their own server: this URL is never called. */
const UNUSED_LAB_URL = 'http://127.0.0.1:9/mcp';

/**
 * recordLabScenario for a 2026-07-28 scenario (it starts its own v2 server): the client's fetch as
 * `<service>/client`, the v2 server through instrumentMcpServer as `<service>/server`. A first attempt's
 * server span joins its trace only under a W3C propagator, as the OpenTelemetry Node SDK registers it
 * (the caller sets it).
 */
export async function recordModernScenario(
  name: (typeof V2_SERVER_SCENARIO_NAMES)[number],
  service: string,
): Promise<OtlpBatch[]> {
  const recorder = await startOtlpRecorder();
  const clientProvider = provider(recorder.url, `${service}/client`);
  const serverProvider = provider(recorder.url, `${service}/server`);
  const fetch = instrumentFetch({ tracerProvider: clientProvider, requestTimeoutMs: 10_000 });
  try {
    await runScenario(name, {
      serverUrl: UNUSED_LAB_URL,
      fetch,
      client: 'sdk-v2',
      modernServer: {
        decorateServer: (s) => instrumentMcpServer(s, { tracerProvider: serverProvider, cancellationWaitMs: 5_000 }),
      },
    });
    await waitFor(() => {
      const s = fetch.stats();
      return s.openRequests === 0 && s.openResumes === 0 && s.pendingHttp === 0 && s.heldPolls === 0;
    }, `the client spans of ${name} to end`);
  } finally {
    await Promise.all([clientProvider.shutdown(), serverProvider.shutdown()]);
    await recorder.close();
  }
  return recorder.batches;
}

const REISSUES: readonly TaskScenarioName[] = ['task-reissue-after-lost-reply', 'modern-task-duplicate'];

/**
 * recordLabScenario for a task scenario (`task-*`, `modern-task-*`: each starts its own server): the
 * client's fetch as `<service>/client`, the SDK 1.x task server (and the v2 server, whose extension
 * tasks the lab answers itself) through instrumentMcpServer as `<service>/server`. `idempotencyKey`: the
 * re-issue scenarios send one (then the duplicate is certain). A re-issue's first task is never fetched:
 * its ttl is made longer than any test run, so that no serve's clock passes it (a lost_task_result at a
 * moment no two runs share); `finalize` moves the clock past it.
 */
export async function recordTaskScenario(
  name: TaskScenarioName,
  service: string,
  options: { idempotencyKey?: boolean } = {},
): Promise<OtlpBatch[]> {
  const recorder = await startOtlpRecorder();
  const clientProvider = provider(recorder.url, `${service}/client`);
  const serverProvider = provider(recorder.url, `${service}/server`);
  const fetch = instrumentFetch({ tracerProvider: clientProvider, requestTimeoutMs: 10_000 });
  try {
    await runScenario(name, {
      serverUrl: UNUSED_LAB_URL,
      fetch,
      tasks: {
        idempotencyKey: options.idempotencyKey,
        ttlMs: REISSUES.includes(name) ? 10 * 60_000 : undefined,
        decorateServer: (s) => instrumentMcpServer(s, { tracerProvider: serverProvider }),
      },
      modernServer: { decorateServer: (s) => instrumentMcpServer(s, { tracerProvider: serverProvider }) },
    });
    await waitFor(() => {
      const s = fetch.stats();
      return s.openRequests === 0 && s.openResumes === 0 && s.pendingHttp === 0 && s.heldPolls === 0;
    }, `the client spans of ${name} to end`);
  } finally {
    await Promise.all([clientProvider.shutdown(), serverProvider.shutdown()]);
    await recorder.close();
  }
  return recorder.batches;
}

/**
 * The batches with every span's times moved by `ms` (OTLP/JSON bodies, nanosecond strings). Moved ahead
 * of the wall clock, no ttl of a recorded task passes by serve's clock while they are sent: what time
 * decides is then seen at the same point of every run (once all spans are in, when the clock is moved).
 */
export function shiftedBatches(batches: readonly OtlpBatch[], ms: number): OtlpBatch[] {
  const by = BigInt(ms) * 1_000_000n;
  const move = (t: string | number | undefined) => (t === undefined ? t : String(BigInt(t) + by));
  return batches.map((batch) => {
    const body = JSON.parse(batch.body.toString('utf8')) as {
      resourceSpans?: Array<{
        scopeSpans?: Array<{
          spans?: Array<{ startTimeUnixNano?: string | number; endTimeUnixNano?: string | number }>;
        }>;
      }>;
    };
    for (const rs of body.resourceSpans ?? [])
      for (const ss of rs.scopeSpans ?? [])
        for (const span of ss.spans ?? []) {
          span.startTimeUnixNano = move(span.startTimeUnixNano);
          span.endTimeUnixNano = move(span.endTimeUnixNano);
        }
    return { body: Buffer.from(JSON.stringify(body)), contentType: batch.contentType };
  });
}
