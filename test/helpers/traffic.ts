// Real traffic for the end-to-end test of alerts and dashboards (test/e2e-prometheus.test.ts): the
// lab's scenarios run over loopback HTTP against lab MCP servers (the real MCP SDK server transport),
// through the real instrumentation (`instrumentFetch`), and their spans leave through the real
// OpenTelemetry SDK (BatchSpanProcessor) and OTLP/HTTP exporter for the detectors. Each scenario has
// its own service.name and its own lab server (server-restart restarts the whole server), and runs back
// to back until stopped, so the counters keep moving while Prometheus scrapes.
//
// Synthetic: `invalidSpansBody` (the instrumentation never emits malformed spans) and
// `serverDefectSpansBody` (the lab's store variants that replay across streams and sessions, and its
// polling and listening-stream scenarios, are not in this traffic yet; until they are, the spans such
// a run records are written here, with the contract's attributes).
import { setTimeout as sleep } from 'node:timers/promises';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { instrumentFetch } from '@resumewatch/instrumentation';
import { runLoad, runScenario, startLabServer } from '@resumewatch/lab';
import type { LabServer, ScenarioName } from '@resumewatch/lab';
import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_ERROR_TYPE,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVICE_NAME,
  ErrorType,
  ResumeEvidence,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
  STATELESS_PROTOCOL_VERSION,
  StreamKind,
  TRACER_SCOPE,
} from '@resumewatch/semconv';

/** The session era's latest revision, negotiated by the synthetic client whose 2026-07-28 probe is refused. */
const SESSION_ERA_VERSION = '2025-11-25';

/** service.name of each scenario's traffic. */
export const Service = {
  /** seed-loop: the result replayed on each reconnect after a clean close, until the cursor is evicted (404). */
  SEED_LOOP: 'e2e-seed-loop',
  /** server-restart: the restarted server accepts the session and answers the resume with 200 and no event. */
  SERVER_RESTART: 'e2e-server-restart',
  /** cursor-evicted: the client drops mid-request, the cursor is evicted, the resume gets 404. */
  CURSOR_EVICTED: 'e2e-cursor-evicted',
  /** healthy: streaming tool calls and side effects answered once, no resume (runLoad). */
  HEALTHY: 'e2e-healthy',
  /**
   * resume-loses-result: the resume replays the missed progress, then the result goes to a stream no
   * connection holds; the request's deadline (3 s) passes while the client waits (4 s).
   */
  LOST_RESULT: 'e2e-lost-result',
  /**
   * Synthetic (serverDefectSpansBody): clients of two defective servers, a retracted empty replay, a
   * listening resume; and two 2026-07-28 calls re-issued after a broken stream, one whose first attempt
   * the server completed all the same (duplicate_execution), one whose fate no span tells
   * (possible_duplicate_execution, once the detector's --reissue-settle has passed).
   */
  SERVER_DEFECTS: 'e2e-server-defects',
  /** Synthetic: the MCP server of the 2026-07-28 calls of SERVER_DEFECTS, whose span tells the first attempt's fate. */
  MODERN_SERVER: 'e2e-modern-server',
} as const;

/** server.address of the defective servers of serverDefectSpansBody. */
export const DefectiveServer = {
  /** Replays every stream of the session into a resumed one (foreign_replay). */
  FOREIGN: 'e2e-replay-every-stream.test',
  /** One store for every session, keyed by request id (conflicting_terminal). */
  CONFLICT: 'e2e-shared-store.test',
} as const;
type ServiceName = (typeof Service)[keyof typeof Service];

const SCENARIOS: [ServiceName, ScenarioName][] = [
  [Service.SEED_LOOP, 'seed-loop'],
  [Service.SERVER_RESTART, 'server-restart'],
  [Service.CURSOR_EVICTED, 'cursor-evicted'],
  [Service.LOST_RESULT, 'resume-loses-result'],
  [Service.HEALTHY, 'healthy'],
];

export interface LabTrafficOptions {
  /** OTLP/HTTP trace URLs (…/v1/traces); every span goes to each of them. */
  endpoints: string[];
  /** Pause between two runs of a failing scenario. Default 300 ms. */
  pauseMs?: number;
  /** Healthy traffic: concurrent clients of each runLoad round. Default 1. */
  healthyClients?: number;
  /** Healthy traffic: length of each runLoad round. Default 2000 ms. */
  healthyRoundMs?: number;
}

export interface ScenarioStats {
  scenario: ScenarioName;
  runs: number;
  failures: number;
  /** The first few failure messages. */
  errors: string[];
}

interface Loop {
  service: ServiceName;
  scenario: ScenarioName;
  lab: LabServer;
  provider: BasicTracerProvider;
  stats: ScenarioStats;
  done?: Promise<void>;
}

/** Bounded wait: resolves when `p` settles or after `ms`, whichever is first. */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    p.then(
      () => undefined,
      () => undefined,
    ),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}

export class LabTraffic {
  private stopped = false;

  private constructor(
    private readonly loops: Loop[],
    private readonly options: Required<LabTrafficOptions>,
  ) {}

  /** Starts a lab server and a tracer provider per scenario, then the scenario loops. */
  static async start(options: LabTrafficOptions): Promise<LabTraffic> {
    const resolved: Required<LabTrafficOptions> = { pauseMs: 300, healthyClients: 1, healthyRoundMs: 2000, ...options };
    const loops: Loop[] = [];
    const traffic = new LabTraffic(loops, resolved);
    try {
      for (const [service, scenario] of SCENARIOS) {
        const provider = new BasicTracerProvider({
          resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: service }),
          spanProcessors: resolved.endpoints.map(
            (url) =>
              new BatchSpanProcessor(new OTLPTraceExporter({ url }), {
                scheduledDelayMillis: 200,
                maxExportBatchSize: 512,
              }),
          ),
        });
        const lab = await startLabServer({ retryIntervalMs: 50 }).catch(async (error: unknown) => {
          await provider.shutdown().catch(() => undefined);
          throw error;
        });
        loops.push({ service, scenario, lab, provider, stats: { scenario, runs: 0, failures: 0, errors: [] } });
      }
    } catch (error) {
      await traffic.stop();
      throw error;
    }
    for (const loop of loops) loop.done = loop.scenario === 'healthy' ? traffic.healthy(loop) : traffic.failing(loop);
    return traffic;
  }

  /** Runs and failures per service, for test diagnostics. */
  stats(): Record<string, ScenarioStats> {
    return Object.fromEntries(this.loops.map((l) => [l.service, { ...l.stats, errors: [...l.stats.errors] }]));
  }

  /** Stops the loops, flushes and shuts down the tracer providers, closes the lab servers; bounded. */
  async stop(): Promise<void> {
    this.stopped = true;
    await within(Promise.allSettled(this.loops.map((l) => l.done)), 20_000);
    await within(Promise.allSettled(this.loops.map((l) => l.provider.shutdown())), 15_000);
    await within(Promise.allSettled(this.loops.map((l) => l.lab.close())), 10_000);
  }

  private fetchFor(loop: Loop): ReturnType<typeof instrumentFetch> {
    // A short request timeout so that every span ends soon after its run (server-restart's request
    // never completes; its span, and its held poll, end at requestTimeoutMs).
    return instrumentFetch({ tracerProvider: loop.provider, requestTimeoutMs: 3_000 });
  }

  private failed(loop: Loop, error: unknown): void {
    loop.stats.failures++;
    if (loop.stats.errors.length < 5) loop.stats.errors.push(error instanceof Error ? error.message : String(error));
  }

  /** One instrumented fetch per run, as per transport: the scenario opens a new session each run. */
  private async failing(loop: Loop): Promise<void> {
    while (!this.stopped) {
      try {
        // server-restart's client waits for its result past the request timeout (3 s): the deadline, not
        // the session's DELETE, ends its held poll, as an empty replay (McpAmbiguousEmptyReplay); and
        // resume-loses-result's continuation, as a partial replay (McpResultsLost).
        await runScenario(loop.scenario, {
          serverUrl: loop.lab.url,
          fetch: this.fetchFor(loop),
          maxReconnects: 10,
          resultWaitMs: 4_000,
        });
        loop.stats.runs++;
      } catch (error) {
        this.failed(loop, error);
      }
      await sleep(this.options.pauseMs);
    }
  }

  private async healthy(loop: Loop): Promise<void> {
    while (!this.stopped) {
      try {
        const report = await runLoad('healthy', {
          serverUrl: loop.lab.url,
          fetch: this.fetchFor(loop),
          clients: this.options.healthyClients,
          durationMs: this.options.healthyRoundMs,
        });
        loop.stats.runs += report.runs;
        loop.stats.failures += report.failures;
        for (const e of report.errors) if (loop.stats.errors.length < 5) loop.stats.errors.push(e);
      } catch (error) {
        this.failed(loop, error);
      }
      await sleep(this.options.pauseMs);
    }
  }
}

/** An OTLP/JSON body whose spans the detector must count as invalid (ids of the wrong length). */
export function invalidSpansBody(n: number): string {
  const spans = Array.from({ length: n }, (_, i) => ({
    traceId: 'abc',
    spanId: `x${i}`,
    name: SPAN_REQUEST_TERMINAL,
    kind: 1,
    startTimeUnixNano: '1',
    endTimeUnixNano: '2',
  }));
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: ATTR_SERVICE_NAME, value: { stringValue: 'e2e-broken-exporter' } }] },
        scopeSpans: [{ scope: { name: TRACER_SCOPE }, spans }],
      },
    ],
  });
}

type OtlpValue = { stringValue: string } | { boolValue: boolean } | { intValue: string };
export function otlpAttributes(attrs: Record<string, string | number | boolean>): { key: string; value: OtlpValue }[] {
  return Object.entries(attrs).map(([key, v]) => ({
    key,
    value:
      typeof v === 'string' ? { stringValue: v } : typeof v === 'boolean' ? { boolValue: v } : { intValue: String(v) },
  }));
}

/**
 * One round of the spans a client of defective servers records (OTLP/JSON, service SERVER_DEFECTS), with a
 * session of its own per `round`: a result replayed on the listening stream (a foreign terminal, and the
 * listening stream's resume), a second, different result for a finished request (a conflicting
 * terminal), and an empty replay whose request then gets its result (a retracted ambiguous_empty_replay);
 * two 2026-07-28 calls re-issued after a broken stream; a 2026-07-28 probe refused, then the session era.
 */
export function serverDefectSpansBody(round: number, nowMs = Date.now()): string {
  const session = `e2e-defects-${round}`;
  const trace = (round + 1).toString(16).padStart(32, '0');
  let n = 0;
  const span = (name: string, kind: number, offsetMs: number, attrs: Record<string, string | number | boolean>) => ({
    traceId: trace,
    spanId: ((round * 16 + ++n) >>> 0).toString(16).padStart(16, '0'),
    name,
    kind,
    startTimeUnixNano: `${Math.round(nowMs + offsetMs)}000000`,
    endTimeUnixNano: `${Math.round(nowMs + offsetMs + 1)}000000`,
    attributes: otlpAttributes({ [ATTR_MCP_SESSION_ID]: session, ...attrs }),
  });
  const spans = [
    // request 1 answered on its own stream; the listening stream's resume replays that result again.
    span(SPAN_REQUEST_TERMINAL, 1, 0, { [ATTR_JSONRPC_REQUEST_ID]: '1', [ATTR_MCP_STREAM_ID]: 'post-1' }),
    span(SPAN_STREAM_RESUME, 3, 10, {
      [ATTR_MCP_STREAM_ID]: 'get-2',
      [ATTR_MCP_STREAM_KIND]: StreamKind.LISTENING,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
      [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.CONTINUATION,
      [ATTR_MCP_RESUME_EVIDENCE]: ResumeEvidence.MESSAGE,
      [ATTR_MCP_RESUME_REPLAYED_EVENTS]: 1,
    }),
    span(SPAN_REQUEST_TERMINAL, 1, 11, {
      [ATTR_JSONRPC_REQUEST_ID]: '1',
      [ATTR_MCP_STREAM_ID]: 'get-2',
      [ATTR_MCP_TERMINAL_DUPLICATE]: true,
      [ATTR_MCP_TERMINAL_FOREIGN]: true,
      [ATTR_MCP_TERMINAL_FIRST_STREAM_ID]: 'post-1',
      [ATTR_SERVER_ADDRESS]: DefectiveServer.FOREIGN,
    }),
    // request 2 answered, then answered differently (another session's result) on a resumed stream.
    span(SPAN_REQUEST_TERMINAL, 1, 20, { [ATTR_JSONRPC_REQUEST_ID]: '2', [ATTR_MCP_STREAM_ID]: 'post-3' }),
    span(SPAN_REQUEST_TERMINAL, 1, 30, {
      [ATTR_JSONRPC_REQUEST_ID]: '2',
      [ATTR_MCP_STREAM_ID]: 'get-4',
      [ATTR_MCP_TERMINAL_CONFLICT]: true,
      [ATTR_MCP_TERMINAL_FIRST_STREAM_ID]: 'post-3',
      [ATTR_SERVER_ADDRESS]: DefectiveServer.CONFLICT,
    }),
    // request 3: an empty replay on evidence, then its result after all: the finding is retracted.
    span(SPAN_STREAM_RESUME, 3, 40, {
      [ATTR_JSONRPC_REQUEST_ID]: '3',
      [ATTR_MCP_STREAM_ID]: 'get-5',
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
      [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.EMPTY_REPLAY,
      [ATTR_MCP_RESUME_EVIDENCE]: ResumeEvidence.BODY_END,
      [ATTR_MCP_RESUME_REPLAYED_EVENTS]: 0,
    }),
    span(SPAN_REQUEST_TERMINAL, 1, 50, { [ATTR_JSONRPC_REQUEST_ID]: '3', [ATTR_MCP_STREAM_ID]: 'post-6' }),
  ];
  // The 2026-07-28 era: no session, a trace per request. Two first attempts whose streams broke, each
  // re-issued; the server says it completed the first one after its stream closed.
  const traceOf = (prefix: string) => prefix + (round + 1).toString(16).padStart(31, '0');
  const request = (t: string, kind: number, offsetMs: number, attrs: Record<string, string | number | boolean>) => ({
    ...span(SPAN_REQUEST_TERMINAL, kind, offsetMs, {}),
    traceId: t,
    name: 'tools/call side_effect',
    attributes: otlpAttributes({ [ATTR_MCP_METHOD_NAME]: 'tools/call', ...attrs }),
  });
  const executedTwice = request(traceOf('a'), 3, 60, {
    [ATTR_JSONRPC_REQUEST_ID]: 1,
    [ATTR_ERROR_TYPE]: ErrorType.STREAM_BROKEN,
  });
  const fateUnknown = request(traceOf('c'), 3, 60, {
    [ATTR_JSONRPC_REQUEST_ID]: 2,
    [ATTR_ERROR_TYPE]: ErrorType.STREAM_BROKEN,
  });
  const reissueOf = (first: { traceId: string; spanId: string }) => ({
    [ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID]: first.traceId,
    [ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]: first.spanId,
  });
  const modern = [
    executedTwice,
    fateUnknown,
    request(traceOf('b'), 3, 70, { [ATTR_JSONRPC_REQUEST_ID]: 3, ...reissueOf(executedTwice) }),
    request(traceOf('d'), 3, 70, { [ATTR_JSONRPC_REQUEST_ID]: 4, ...reissueOf(fateUnknown) }),
  ];
  // A client probing for 2026-07-28 at a session-era server: its server/discover refused (400), counted
  // apart by the version asked, not as 2026-07-28 traffic; the client falls back to initialize, accepted
  // in the session era. All of this service's era traffic is in the session era.
  const negotiation = (t: string, offsetMs: number, method: string, attrs: Record<string, string | number>) => ({
    ...request(t, 3, offsetMs, {}),
    name: method,
    attributes: otlpAttributes({ [ATTR_MCP_METHOD_NAME]: method, ...attrs }),
  });
  const fallback = [
    negotiation(traceOf('e'), 80, 'server/discover', {
      [ATTR_JSONRPC_REQUEST_ID]: 'probe',
      [ATTR_MCP_PROTOCOL_VERSION]: STATELESS_PROTOCOL_VERSION,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 400,
      [ATTR_ERROR_TYPE]: '400',
    }),
    negotiation(traceOf('f'), 90, 'initialize', {
      [ATTR_JSONRPC_REQUEST_ID]: 0,
      [ATTR_MCP_PROTOCOL_VERSION]: SESSION_ERA_VERSION,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
      [ATTR_MCP_SESSION_ID]: `${session}-fallback`,
    }),
  ];
  const server = [
    request(traceOf('a'), 2, 61, {
      [ATTR_JSONRPC_REQUEST_ID]: 1,
      [ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION]: true,
    }),
  ];
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: otlpAttributes({ [ATTR_SERVICE_NAME]: Service.SERVER_DEFECTS }) },
        scopeSpans: [{ scope: { name: TRACER_SCOPE }, spans: [...spans, ...modern, ...fallback] }],
      },
      {
        resource: { attributes: otlpAttributes({ [ATTR_SERVICE_NAME]: Service.MODERN_SERVER }) },
        scopeSpans: [{ scope: { name: TRACER_SCOPE }, spans: server }],
      },
    ],
  });
}
