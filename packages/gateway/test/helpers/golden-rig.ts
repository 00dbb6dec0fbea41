import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { startServer } from '@resumewatch/daemon';
import type { RunningServer } from '@resumewatch/daemon';
import type { Finding } from '@resumewatch/detector';
import {
  instrumentEventStore,
  instrumentFetch,
  instrumentMcpServer,
  instrumentServerTransport,
} from '@resumewatch/instrumentation';
import {
  LAB_SERVER_SCENARIO_NAMES,
  LOOP_SCENARIO_NAMES,
  TASK_SCENARIO_NAMES,
  V2_SERVER_SCENARIO_NAMES,
  runScenario,
  scenarioClients,
  startLabServer,
} from '@resumewatch/lab';
import type {
  FetchLike,
  LabServer,
  ScenarioClient,
  ScenarioName,
  ScenarioOptions,
  ScenarioSummary,
} from '@resumewatch/lab';
import { ATTR_SERVICE_NAME, TaskStatus } from '@resumewatch/semconv';
import type { RunningGateway } from '../../src/index.js';
import { startGateway } from '../../src/index.js';
import { gatewayMcpUrl, settleGateway, waitFor } from './e2e-rig.js';

// The golden record of issue 40: what the gateway and `serve` report on every lab scenario, pinned at the
// commit before the performance work, so that a rewrite of the gateway's observation path, of the wire
// observer's readers or of serve's decoders is checked against today's behaviour.
//
// One run of a scenario is seen from three vantage points at once:
// - the gateway (observe mode), in front of the scenario's server: its built-in detector's findings and
//   the counters of its /metrics;
// - `serve` over OTLP/JSON and `serve` over OTLP/protobuf (one in-process serve each, fresh per run):
//   the instrumented client's fetch, and the lab server where the scenario lets it be decorated, export
//   every span through both real exporters; the findings of each side (service `client`, `server`).
//
// Where the gateway sits is each family's own (as the existing parity tests put it): the session-era lab
// server behind it (e2e-lab-parity); the task and loop scenarios' `front` (between the fault cut and the
// server: e2e-task-scenarios, e2e-loop-scenarios); the 2026-07-28 scenarios start their server inside the
// scenario with no `front`, so the client's fetch is pointed at a gateway started in front of each origin
// it calls (the fault proxy of the re-issue scenarios: the cut is then between the gateway and its
// upstream, as in e2e-modern; session-client-modern-server calls three origins, two proxies and its
// server: three gateways, their findings and counters taken together). `healthy` is one run, not the
// parity test's three-client load (whose count of runs is the clock's). The loop scenarios' servers take
// no decoration: their serve has client spans alone.
//
// What is timing-dependent, and how it is kept out of the comparison, each said where it is done:
// the detectors' clocks stand still during a run (runOnce); the poll storms announce a longer interval
// (POLL_STORM_INTERVAL_MS); the task scenarios' poll-counted series are `timed` (POLL_COUNTED); a run
// that was not its scenario is run again (notTheScenario).

/** One run: a scenario with one of its clients (and, for the task re-issues, with an idempotency key). */
interface GoldenCase {
  /** The golden record's key: `scenario`, `scenario [client]` for the SDK runs, `scenario (keyed)`. */
  id: string;
  name: ScenarioName;
  client?: ScenarioClient;
  keyed?: boolean;
}

/** A finding as the golden record holds it: what must stay identical and is the same in every run. */
type GoldenFinding = Record<string, string | number | boolean>;

interface GoldenVantage {
  findings: GoldenFinding[];
}

export interface GoldenRun {
  gateway: GoldenVantage & {
    /** The counters of the gateway's /metrics (non-zero samples, `_total`), `name{labels}` → value. */
    metrics: Record<string, number | typeof TIMED>;
  };
  /** serve, by encoding, then by the side whose spans it read. */
  serve: Record<'json' | 'protobuf', { client: GoldenFinding[]; server: GoldenFinding[] }>;
}

const REISSUES: readonly ScenarioName[] = ['task-reissue-after-lost-reply', 'modern-task-duplicate'];

/**
 * Every lab scenario, with every client it runs with, and the task re-issues keyed too: in three groups
 * of about 30 s each, one test file each, so that `pnpm test` runs them side by side.
 */
export const GOLDEN_GROUPS = {
  /** The session era's scenarios on the lab server, with the raw clients. */
  lab: LAB_SERVER_SCENARIO_NAMES.map((name): GoldenCase => ({ id: name, name, client: 'raw' })),
  /** The same scenarios with the unmodified SDK clients (1.x and v2), where they run with them. */
  sdk: LAB_SERVER_SCENARIO_NAMES.flatMap((name) =>
    scenarioClients(name)
      .filter((client) => client !== 'raw')
      .map((client): GoldenCase => ({ id: `${name} [${client}]`, name, client })),
  ),
  /** The 2026-07-28 scenarios, the task scenarios (and the keyed re-issues) and the loop scenarios. */
  own: [
    ...V2_SERVER_SCENARIO_NAMES.map((name): GoldenCase => ({ id: name, name })),
    ...TASK_SCENARIO_NAMES.map((name): GoldenCase => ({ id: name, name })),
    ...REISSUES.map((name): GoldenCase => ({ id: `${name} (keyed)`, name, keyed: true })),
    ...LOOP_SCENARIO_NAMES.map((name): GoldenCase => ({ id: name, name })),
  ],
} as const;

export const GOLDEN_CASES: readonly GoldenCase[] = Object.values(GOLDEN_GROUPS).flat();

/**
 * The fields of a finding kept whole: its kind and record, and the values that say what happened
 * (outcome, status, reason, how a storm ended, counts). The JSON-RPC request id is kept: the lab's
 * clients number their requests from 1, so it says which request of the run. Left out: every other id
 * (session, trace, span, stream, task: random per run), every time, and `service` (the rig's name).
 */
const KEPT = [
  'kind',
  'record',
  'request_id',
  'outcome',
  'status_code',
  'recovery',
  'request_end',
  'reason',
  'ended_by',
  'ended_by_eviction',
  'duplicates',
  'attempts',
  'polls',
  'server',
] as const;

/** Ids replaced by whether they are there (their value is random per run; their presence is behaviour). */
const PRESENT = ['session_id', 'task_id', 'duplicate_task_id', 'first_trace_id', 'stream_id', 'first_stream_id'];

function goldenFinding(f: Finding): GoldenFinding {
  const out: GoldenFinding = {};
  const fields = f as unknown as Record<string, unknown>;
  for (const key of KEPT) {
    const value = fields[key];
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out[key] = value;
  }
  for (const key of PRESENT) if (fields[key] !== undefined && fields[key] !== '') out[`has_${key}`] = true;
  out.spans = f.span_ids.length;
  return out;
}

/** Findings in one order whatever order they were emitted in (two detectors may emit at different moments). */
const goldenFindings = (findings: readonly Finding[]): GoldenFinding[] =>
  findings
    .map(goldenFinding)
    .map((f) => JSON.stringify(f))
    .sort()
    .map((s) => JSON.parse(s) as GoldenFinding);

/** A Prometheus text exposition's counter samples (`_total`), non-zero, `name{labels}` → value. */
function counters(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const space = line.lastIndexOf(' ');
    const sample = line.slice(0, space);
    const name = sample.split('{')[0]!;
    const value = Number(line.slice(space + 1));
    if (!name.endsWith('_total') || value === 0) continue;
    out[sample] = value;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Forwards to the real exporter and counts what it exported (to wait until serve has it all). */
class CountingExporter implements SpanExporter {
  exported = 0;
  constructor(private readonly inner: SpanExporter) {}
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.exported += spans.length;
    this.inner.export(spans, done);
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** One serve of one encoding, and the exporters of both sides into it. */
interface ServeSink {
  serve: RunningServer;
  exporters: CountingExporter[];
}

async function serveSink(encoding: 'json' | 'protobuf', clock: () => number): Promise<ServeSink> {
  const serve = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null, clock });
  const url = `http://127.0.0.1:${serve.httpPort}/v1/traces`;
  const exporter = () =>
    new CountingExporter(encoding === 'json' ? new JsonExporter({ url }) : new ProtoExporter({ url }));
  return { serve, exporters: [exporter(), exporter()] };
}

/** A tracer provider of one side, exporting to both serves. */
function provider(service: string, exporters: CountingExporter[]): BasicTracerProvider {
  return new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: service }),
    spanProcessors: exporters.map(
      (e) => new BatchSpanProcessor(e, { maxExportBatchSize: 512, scheduledDelayMillis: 50 }),
    ),
  });
}

/** Every span serve has taken in, whatever it made of it. */
function received(serve: RunningServer): number {
  const spans = serve.detector.stats().spans;
  return spans.accepted + spans.duplicate + spans.invalid + spans.ignored;
}

/** The 2026-07-28 scenarios start their own server and name no front: the client's fetch is sent to a gateway in front of it. */
function fetchThroughGateway(
  inner: FetchLike,
  start: (upstream: string) => Promise<RunningGateway>,
): { fetch: FetchLike; gateways: () => Promise<RunningGateway[]> } {
  const byOrigin = new Map<string, Promise<RunningGateway>>();
  const fetch: FetchLike = async (input, init) => {
    if (typeof input !== 'string' && !(input instanceof URL))
      throw new Error('golden rig: a Request input is not routed');
    const url = new URL(input);
    let gateway = byOrigin.get(url.origin);
    if (!gateway) byOrigin.set(url.origin, (gateway = start(url.href)));
    return inner(gatewayMcpUrl(await gateway, url.href), init);
  };
  return { fetch, gateways: () => Promise.all(byOrigin.values()) };
}

/**
 * The poll storms' announced interval: 2 s rather than the scenarios' 0.5 s. Their client polls every
 * 10 ms for 2.5 s; a poll is early when it follows the last by less than half the interval, and ten early
 * polls in a row are the storm. On a loaded machine a poll's round trip through the instrumented client,
 * the gateway and the server took 250 ms and more, the run of early polls broke, and some runs had no
 * storm at all: the scenario had not happened, whatever the detector. Polls under 1 s apart still storm.
 */
const POLL_STORMS: readonly ScenarioName[] = ['task-poll-storm', 'modern-task-poll-storm'];
const POLL_STORM_INTERVAL_MS = 2_000;

/**
 * What a task scenario's client does depends on time: it polls `tasks/get` until its task is done (at
 * the announced interval, or as fast as it can in the poll storms), so the number of polls, and of the
 * exchanges, requests, spans and terminal events that carry them, differs from run to run (task-rereads:
 * 9 POSTs or 10). These series of the gateway's /metrics keep their names and labels in the record, with
 * the value `timed`; their findings, and every other counter, are compared whole.
 */
const POLL_COUNTED = [
  'resumewatch_gateway_exchanges_total{method="POST"',
  'resumewatch_mcp_requests_total{',
  'resumewatch_spans_received_total{',
  'resumewatch_task_polls_total{',
  'resumewatch_terminal_events_total{',
];
const TIMED = 'timed';
/**
 * Timed in every scenario: a listening GET that its server ends with no message within
 * LISTENING_CLOSED_AT_ONCE_MS is a span (a refusal the loops family counts), one ended later is not, so a
 * loaded machine's pace moves the spans received by one (sdk-error-resume: 8 or 9). The findings, the
 * loops' included, are compared whole.
 */
const PACE_COUNTED = ['resumewatch_spans_received_total{'];

/** The request deadline where it is the evidence, as the existing rigs give it (e2e-lab-parity, e2e-lab). */
const requestTimeoutOf = (name: ScenarioName): number =>
  name === 'server-restart' ? 2_000 : name === 'resume-loses-result' ? 3_000 : 10_000;

/**
 * Whether the lab's run was the scenario, by what its client and server saw (the scenario's summary,
 * never the findings): a reason if not. A few task scenarios wait on time, and on a machine loaded past
 * its cores they can run out of it before the thing they stage happens. Such a run is not the scenario,
 * and its findings say nothing of the detector: it is run again (GOLDEN_ATTEMPTS).
 */
function notTheScenario(name: ScenarioName, summary: ScenarioSummary): string | undefined {
  const details = summary.details;
  if (POLL_STORMS.includes(name)) {
    // The storm: at least 11 polls in a row, each within a quarter of the announced interval of the last,
    // as the server received them (the detector's rule: 10 polls in a row within half of it).
    let run = 0;
    let longest = 0;
    for (const gap of details.serverPollGaps as number[]) {
      run = gap < POLL_STORM_INTERVAL_MS / 4 ? run + 1 : 0;
      longest = Math.max(longest, run);
    }
    return longest >= 11 ? undefined : `its longest run of fast polls was ${longest}`;
  }
  // The loss: the client's one poll found the task working (the 2026-07-28 extension's answer to a poll
  // of a completed task carries its result: a slow first poll is a delivery), then the task completed,
  // its ttl passed and the server purged it, before the client's late read.
  if (name === 'modern-task-lost') {
    if (details.statusSeen !== TaskStatus.WORKING) return `its poll found the task ${String(details.statusSeen)}`;
    if (details.completedOnServer !== true || details.purged !== true)
      return 'the task did not complete and expire within its waits';
  }
  if (name === 'task-result-after-expiry' && details.purged !== true) return 'the task was not purged within its wait';
  return undefined;
}

/** Runs of a case, at most, until the lab's run is its scenario (notTheScenario). */
const GOLDEN_ATTEMPTS = 3;

/** Runs one case seen by the gateway and by both serves; what each reported, as the golden record holds it. */
export async function runGoldenCase(c: GoldenCase): Promise<GoldenRun> {
  const reasons: string[] = [];
  for (let attempt = 1; attempt <= GOLDEN_ATTEMPTS; attempt++) {
    const { run, summary } = await runOnce(c);
    const reason = notTheScenario(c.name, summary);
    if (reason === undefined) return run;
    reasons.push(reason);
  }
  throw new Error(`${c.id}: the lab's run was not the scenario in ${GOLDEN_ATTEMPTS} attempts (${reasons.join('; ')})`);
}

async function runOnce(c: GoldenCase): Promise<{ run: GoldenRun; summary: ScenarioSummary }> {
  const closers: (() => Promise<unknown>)[] = [];
  const gateways: RunningGateway[] = [];
  try {
    // Every detector's clock stands still while the scenario runs, and moves once, past every window,
    // when all its spans are in (below): what time decides (a ttl passed, a storm ended quietly, a
    // re-issue settled) is then decided on the whole run, never on where a clock tick fell in it. (A
    // tick between task-result-after-expiry's expiry and the client's read of the gone task made its
    // lost_task_result `ttl_passed` in some runs, `gone` in others.)
    const frozen = Date.now();
    const clock = (): number => frozen;
    const sinks = { json: await serveSink('json', clock), protobuf: await serveSink('protobuf', clock) };
    closers.push(
      () => sinks.json.serve.close(),
      () => sinks.protobuf.serve.close(),
    );
    const clientProvider = provider('client', [sinks.json.exporters[0]!, sinks.protobuf.exporters[0]!]);
    const serverProvider = provider('server', [sinks.json.exporters[1]!, sinks.protobuf.exporters[1]!]);
    closers.push(
      () => clientProvider.shutdown(),
      () => serverProvider.shutdown(),
    );
    const requestTimeoutMs = requestTimeoutOf(c.name);
    const instrumented = instrumentFetch({ tracerProvider: clientProvider, requestTimeoutMs });
    const startFront = async (upstream: string): Promise<RunningGateway> => {
      const gateway = await startGateway({
        upstream,
        port: 0,
        requestTimeoutMs,
        detector: { config: { metricsPort: 0 }, output: null, clock },
      });
      gateways.push(gateway);
      closers.push(() => gateway.close());
      return gateway;
    };
    // The scenario closes its front before its server: the gateway stays, for its findings.
    const front = async (serverUrl: string) => ({
      url: gatewayMcpUrl(await startFront(serverUrl), serverUrl),
      close: () => Promise.resolve(),
    });
    const decorateServer = <S extends object>(s: S): S =>
      instrumentMcpServer(s, { tracerProvider: serverProvider, cancellationWaitMs: 5_000 });

    let options: ScenarioOptions;
    if ((LAB_SERVER_SCENARIO_NAMES as readonly string[]).includes(c.name)) {
      const lab: LabServer = await startLabServer({
        retryIntervalMs: 50,
        wrapEventStore: (store, sessionId) =>
          instrumentEventStore(store, { sessionId, tracerProvider: serverProvider }),
        onTransport: (transport) => void instrumentServerTransport(transport, { tracerProvider: serverProvider }),
      });
      closers.push(() => lab.close());
      const gateway = await startFront(lab.url);
      const sdk = c.client !== undefined && c.client !== 'raw';
      options = {
        serverUrl: gatewayMcpUrl(gateway, lab.url),
        controlUrl: lab.controlUrl,
        fetch: instrumented,
        client: c.client,
        maxReconnects: sdk || c.name === 'endless-loop' ? 5 : 10,
        ...(sdk && c.name === 'resume-loses-result' ? { resultWaitMs: 5_000 } : {}),
      };
    } else if ((V2_SERVER_SCENARIO_NAMES as readonly string[]).includes(c.name)) {
      const routed = fetchThroughGateway(instrumented, startFront);
      options = {
        serverUrl: 'http://127.0.0.1:9/mcp',
        fetch: routed.fetch,
        client: 'sdk-v2',
        modernServer: { decorateServer },
      };
    } else if ((TASK_SCENARIO_NAMES as readonly string[]).includes(c.name)) {
      options = {
        serverUrl: 'http://127.0.0.1:9/mcp',
        fetch: instrumented,
        tasks: {
          front,
          decorateServer,
          ...(c.keyed ? { idempotencyKey: true } : {}),
          ...(POLL_STORMS.includes(c.name) ? { pollIntervalMs: POLL_STORM_INTERVAL_MS } : {}),
        },
        modernServer: { decorateServer },
      };
    } else {
      // The loop scenarios: their servers take no decoration; the client's spans alone.
      options = { serverUrl: 'http://127.0.0.1:9/mcp', fetch: instrumented, loops: { front } };
    }

    const summary = await runScenario(c.name, options);

    await waitFor(() => {
      const s = instrumented.stats();
      return s.openRequests === 0 && s.openResumes === 0 && s.pendingHttp === 0 && s.heldPolls === 0;
    }, `the client spans of ${c.id} to end`);
    // One gateway, but for session-client-modern-server, whose clients call three origins (two fault
    // proxies and the server): a gateway in front of each, their findings and counters taken together.
    if (gateways.length === 0) throw new Error(`golden rig: no gateway saw ${c.id}`);
    for (const gateway of gateways) await settleGateway(gateway);
    await Promise.all([clientProvider.forceFlush(), serverProvider.forceFlush()]);
    for (const sink of [sinks.json, sinks.protobuf]) {
      const exported = () => sink.exporters.reduce((n, e) => n + e.exported, 0);
      await waitFor(() => received(sink.serve) >= exported(), `the spans of ${c.id} in serve`);
    }
    // Every timed decision at one point of every run, once all spans are in: past the storm window and a
    // re-issue's settle time (then, too, past the task scenarios' default ttl of 60 s).
    const detectors = [...gateways.map((g) => g.detector!), sinks.json.serve, sinks.protobuf.serve];
    const now = Date.now();
    for (const d of detectors) d.detector.advance(now + Math.max(d.config.stormWindowMs, d.config.reissueSettleMs) + 1);

    const metrics: Record<string, number> = {};
    for (const gateway of gateways) {
      const text = await (await fetch(`http://127.0.0.1:${gateway.detector!.metricsPort}/metrics`)).text();
      for (const [sample, value] of Object.entries(counters(text))) metrics[sample] = (metrics[sample] ?? 0) + value;
    }
    const polls = (TASK_SCENARIO_NAMES as readonly string[]).includes(c.name);
    const serveFindings = (sink: ServeSink) => {
      const all = sink.serve.findings();
      return {
        client: goldenFindings(all.filter((f) => f.service === 'client')),
        server: goldenFindings(all.filter((f) => f.service === 'server')),
      };
    };
    const run: GoldenRun = {
      gateway: {
        findings: goldenFindings(gateways.flatMap((g) => g.detector!.findings())),
        metrics: Object.fromEntries(
          Object.entries(metrics)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([sample, value]) => [
              sample,
              (polls && POLL_COUNTED.some((p) => sample.startsWith(p))) ||
              PACE_COUNTED.some((p) => sample.startsWith(p))
                ? TIMED
                : value,
            ]),
        ),
      },
      serve: { json: serveFindings(sinks.json), protobuf: serveFindings(sinks.protobuf) },
    };
    return { run, summary };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}
