import {
  EXEMPLAR_TRACE_ID,
  LABEL_ACCEPTED,
  LABEL_DUPLICATE,
  LABEL_ERA,
  LABEL_ENDED_BY,
  LABEL_KIND,
  LABEL_SERVER,
  LABEL_OUTCOME,
  LABEL_RESULT,
  LABEL_SERVICE,
  LABEL_SHAPE,
  LABEL_VERSION,
  METRICS,
  METRIC_DETECTION_LAG_SECONDS,
  METRIC_EVIDENCE_BYTES,
  METRIC_EVIDENCE_REQUESTS,
  METRIC_EVIDENCE_WINDOW_BYTES,
  METRIC_FINDINGS_RETRACTED_TOTAL,
  METRIC_FINDINGS_TOTAL,
  METRIC_LISTENING_RESUMES_TOTAL,
  METRIC_MCP_REQUESTS_TOTAL,
  METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL,
  METRIC_RECONNECT_STORMS_ENDED_TOTAL,
  METRIC_SERVER_DEFECTS_TOTAL,
  METRIC_RECONNECT_STORMS_ACTIVE,
  METRIC_RECONNECT_STORM_ATTEMPTS,
  METRIC_RESUME_ATTEMPTS_TOTAL,
  METRIC_RESUME_OUTCOMES_CORRECTED_TOTAL,
  METRIC_SESSION_REATTACH_TOTAL,
  METRIC_SPANS_RECEIVED_TOTAL,
  METRIC_STATE_EVICTIONS_TOTAL,
  METRIC_TERMINAL_EVENTS_TOTAL,
  METRIC_TRACKED_REQUESTS,
  METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS,
  METRIC_LIVE_TASKS,
  METRIC_TASK_EVICTIONS_TOTAL,
  METRIC_TASK_POLLS_TOTAL,
  METRIC_SESSIONS_STARTED_TOTAL,
  METRIC_TASKS_CREATED_TOTAL,
  FindingRecord,
  ProtocolEra,
  ResumeOutcome,
  type FindingKind,
  type MetricDescriptor,
  type SpanReceivedResult,
  type StormEnd,
  TaskShape,
} from '@resumewatch/semconv';
import { CappedLabels } from '@resumewatch/bounded';
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  type OpenMetricsContentType,
  type RegistryContentType,
} from 'prom-client';
import {
  OTHER_SERVICE,
  SPAN_KIND_CLIENT,
  SPAN_KIND_SERVER,
  type DetectorEvents,
  type DetectorStats,
  type Finding,
  type Operation,
  type SpanKindCode,
} from '@resumewatch/detector';
import { DEFAULT_MAX_TOOLS, OperationHistogram } from './operation-histogram.js';

type Metric = Counter<string> | Gauge<string> | Histogram<string>;

/**
 * Default of `--max-services`: `service` and `server` label values before `other`. Smaller than the
 * core's cap on the services it keeps apart, for a different reason: every label value is a set of
 * Prometheus series.
 */
export const DEFAULT_MAX_SERVICES = 100;

/**
 * `version` label values of refused negotiations before `other`: a client writes the version it asks
 * for, so the label is capped; MCP has had five revisions in two years, so real traffic never reaches it.
 */
const MAX_VERSIONS = 16;

/** What the metrics read from the detector at each scrape: counts of its state, never kept here. */
export interface DetectorStateSource {
  stats(): DetectorStats;
  activeStormsByService(): Map<string, number>;
  /** The detector's live task records by service (its tasks family; the cap is per service). */
  liveTasksByService(): Map<string, number>;
  /** What the page's evidence holds (serve and the embedded detector have one). */
  evidence?(): { bytes: number; requests: number; windowBytes: number };
}

/** A metric as both registries hold it: [Prometheus text, OpenMetrics]. */
type Pair<M extends Metric> = readonly [M, M];

/**
 * The contract's metrics. Each is declared once (its descriptor in semconv's METRICS) and registered by
 * one call, `register`, which creates it in the two registries that render it: Prometheus text
 * (`prometheus`) and OpenMetrics (`openMetrics`, the only format that carries exemplars). prom-client
 * fixes the format per registry, and its OpenMetrics rendering renames a counter object in place, so a
 * metric object cannot be shared by the two. The values have one owner: per-span counts are plain
 * numbers kept here and counts of the detector's state are read from it, both written into each
 * registry's metric by its collect() at scrape time, so the hot path does not touch prom-client; only
 * the few per-finding metrics (and the histograms, which cannot be set) are updated as events happen.
 * mcp_server_operation_duration_seconds, observed once per request, keeps its own series as plain
 * arrays (operation-histogram.ts), which its histogram in each registry reads at scrape time.
 */
export class DetectorMetrics implements DetectorEvents {
  readonly prometheus = new Registry();
  readonly openMetrics = new Registry<OpenMetricsContentType>();
  private readonly findingsTotal: Pair<Counter<string>>;
  private readonly retractedTotal: Pair<Counter<string>>;
  private readonly correctedTotal: Pair<Counter<string>>;
  private readonly stormAttempts: Pair<Histogram<string>>;
  private readonly stormsEndedTotal: Pair<Counter<string>>;
  private readonly serverDefectsTotal: Pair<Counter<string>>;
  private readonly detectionLag: Pair<Histogram<string>>;
  /** `service` label values, capped at maxServices (the rest: `other`). */
  private readonly services: CappedLabels<string>;
  /** Plain counts per `service` label, indexed by the label's number in `services`. */
  private readonly counts: ServiceCounts[] = [];
  private readonly spanResults = new Map<SpanReceivedResult, number>();
  /** `server` label values of server-defect counts, capped at maxServices like `service` (the rest: `other`). */
  private readonly servers: CappedLabels<string>;
  /** `version` label values of refused negotiations (the protocol version a client asked for), capped. */
  private readonly versions = new CappedLabels<string>(MAX_VERSIONS, OTHER_SERVICE);
  /** The metrics another door added (addCollected), in the order added. */
  private readonly added: { name: string; read: () => Iterable<readonly [Record<string, string>, number]> }[] = [];
  /** mcp.server.operation.duration, kept as plain arrays and read by its histograms at scrape time. */
  private readonly operations: OperationHistogram;
  /** The kind of the request spans that time a server's operations: see timeServerOperationsAtProxy. */
  private operationKind: SpanKindCode = SPAN_KIND_SERVER;

  constructor(
    maxServices = DEFAULT_MAX_SERVICES,
    private readonly detector?: DetectorStateSource,
    /** `gen_ai_tool_name` label values of mcp_server_operation_duration_seconds before `other` (`--max-tools`). */
    maxTools = DEFAULT_MAX_TOOLS,
  ) {
    this.services = new CappedLabels(maxServices, OTHER_SERVICE);
    this.servers = new CappedLabels(maxServices, OTHER_SERVICE);
    this.openMetrics.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const collectors: Partial<Record<string, (metric: Metric) => void>> = {
      [METRIC_SPANS_RECEIVED_TOTAL]: (m) => this.collectSpans(counter(m)),
      [METRIC_TERMINAL_EVENTS_TOTAL]: (m) => this.collectTerminals(counter(m)),
      [METRIC_RESUME_ATTEMPTS_TOTAL]: (m) => this.collectResumes(counter(m), (c) => c.resumes),
      [METRIC_LISTENING_RESUMES_TOTAL]: (m) => this.collectResumes(counter(m), (c) => c.listeningResumes),
      [METRIC_SESSION_REATTACH_TOTAL]: (m) => this.collectReattaches(counter(m)),
      [METRIC_RECONNECT_STORMS_ACTIVE]: (m) => this.collectActiveStorms(gauge(m)),
      [METRIC_TRACKED_REQUESTS]: (m) => this.collectTracked(gauge(m)),
      [METRIC_MCP_REQUESTS_TOTAL]: (m) => this.collectRequests(counter(m)),
      [METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL]: (m) => this.collectRefusedNegotiations(counter(m)),
      [METRIC_STATE_EVICTIONS_TOTAL]: (m) => this.collectEvictions(counter(m)),
      [METRIC_EVIDENCE_BYTES]: (m) => this.collectEvidence(gauge(m), (e) => e.bytes),
      [METRIC_EVIDENCE_REQUESTS]: (m) => this.collectEvidence(gauge(m), (e) => e.requests),
      [METRIC_EVIDENCE_WINDOW_BYTES]: (m) => this.collectEvidence(gauge(m), (e) => e.windowBytes),
      [METRIC_TASKS_CREATED_TOTAL]: (m) => this.collectTasksCreated(counter(m)),
      [METRIC_TASK_POLLS_TOTAL]: (m) => this.collectTaskPolls(counter(m)),
      [METRIC_SESSIONS_STARTED_TOTAL]: (m) => this.collectSessionsStarted(counter(m)),
      [METRIC_LIVE_TASKS]: (m) => this.collectLiveTasks(gauge(m)),
      [METRIC_TASK_EVICTIONS_TOTAL]: (m) => this.collectTaskEvictions(counter(m)),
    };
    const byName = new Map<string, Pair<Metric>>();
    let operations: OperationHistogram | undefined;
    for (const d of METRICS) {
      if (d.name !== METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS) {
        byName.set(d.name, this.register(d, collectors[d.name]));
        continue;
      }
      // Its values live in its own series (one observation per request, no label hashing on the way).
      operations = new OperationHistogram(d, maxTools);
      operations.register(this.prometheus as Registry<RegistryContentType>, false);
      operations.register(this.openMetrics as Registry<RegistryContentType>, true);
    }
    this.operations = operations!;
    const named = (name: string): Pair<Metric> => byName.get(name)!;
    this.findingsTotal = pairOf(named(METRIC_FINDINGS_TOTAL), counter);
    this.retractedTotal = pairOf(named(METRIC_FINDINGS_RETRACTED_TOTAL), counter);
    this.correctedTotal = pairOf(named(METRIC_RESUME_OUTCOMES_CORRECTED_TOTAL), counter);
    this.stormAttempts = pairOf(named(METRIC_RECONNECT_STORM_ATTEMPTS), histogram);
    this.stormsEndedTotal = pairOf(named(METRIC_RECONNECT_STORMS_ENDED_TOTAL), counter);
    this.serverDefectsTotal = pairOf(named(METRIC_SERVER_DEFECTS_TOTAL), counter);
    this.detectionLag = pairOf(named(METRIC_DETECTION_LAG_SECONDS), histogram);
  }

  /**
   * Adds another door's metric (the gateway's), registered like the contract's. `read` gives its values
   * at each scrape, as (labels, value) pairs: counts kept as plain numbers by the door, never updated here.
   */
  addCollected(d: MetricDescriptor, read: () => Iterable<readonly [Record<string, string>, number]>): void {
    this.added.push({ name: d.name, read });
    this.register(d, (metric) => {
      metric.reset();
      for (const [labels, value] of read()) {
        if (metric instanceof Counter) metric.inc(labels, value);
        else if (metric instanceof Gauge) metric.set(labels, value);
      }
    });
  }

  /**
   * The added metrics' values now (the page's header shows them), read from the same `read` as a scrape:
   * by metric name, each series as its label values joined by a space (empty without labels).
   */
  addedValues(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const { name, read } of this.added) {
      const series: Record<string, number> = {};
      for (const [labels, value] of read()) series[Object.values(labels).join(' ')] = value;
      out[name] = series;
    }
    return out;
  }

  /** The one registration of a metric: its object in each registry, each with the same collect(). */
  private register(d: MetricDescriptor, collect?: (metric: Metric) => void): Pair<Metric> {
    return [
      create(d, this.prometheus as Registry<RegistryContentType>, false, collect),
      create(d, this.openMetrics as Registry<RegistryContentType>, true, collect),
    ];
  }

  /** The `server` label value: the server.address itself while fewer than maxServices are known, else `other`. */
  server(address: string): string {
    return this.servers.labelOf(address);
  }

  /** The `service` label value: the service itself while fewer than maxServices are known, else `other`. */
  service(name: string): string {
    return this.countsFor(name).label;
  }

  private countsFor(name: string): ServiceCounts {
    const id = this.services.idOf(name);
    return (this.counts[id] ??= new ServiceCounts(this.services.keyOf(id)!));
  }

  span(result: SpanReceivedResult): void {
    this.spans(result, 1);
  }

  spans(result: SpanReceivedResult, n: number): void {
    this.spanResults.set(result, (this.spanResults.get(result) ?? 0) + n);
  }

  terminal(service: string, duplicate: boolean): void {
    const c = this.countsFor(service);
    if (duplicate) c.terminalDuplicate++;
    else c.terminalFirst++;
  }

  resume(service: string, outcome: ResumeOutcome): void {
    const r = this.countsFor(service).resumes;
    r.set(outcome, (r.get(outcome) ?? 0) + 1);
  }

  reattach(service: string, accepted: boolean): void {
    const c = this.countsFor(service);
    if (accepted) c.reattachAccepted++;
    else c.reattachRefused++;
  }

  stormFinalized(service: string, attempts: number, endedBy: StormEnd): void {
    const labels = { [LABEL_SERVICE]: this.service(service) };
    const ended = { ...labels, [LABEL_ENDED_BY]: endedBy };
    for (const m of this.stormAttempts) m.observe(labels, attempts);
    for (const m of this.stormsEndedTotal) m.inc(ended);
  }

  serverDefect(kind: FindingKind, server: string): void {
    const labels = { [LABEL_KIND]: kind, [LABEL_SERVER]: this.server(server) };
    for (const m of this.serverDefectsTotal) m.inc(labels);
  }

  request(service: string, era: ProtocolEra): void {
    const c = this.countsFor(service);
    if (era === ProtocolEra.STATELESS) c.requestsStateless++;
    else c.requestsSessions++;
  }

  negotiationRefused(service: string, version: string): void {
    const refused = this.countsFor(service).refusedNegotiations;
    const id = this.versions.idOf(version);
    refused[id] = (refused[id] ?? 0) + 1;
  }

  /** MCP requests accepted by era, over every service: the counts of METRIC_MCP_REQUESTS_TOTAL. */
  eraCounts(): Record<ProtocolEra, number> {
    const eras = { [ProtocolEra.SESSIONS]: 0, [ProtocolEra.STATELESS]: 0 };
    for (const c of this.counts) {
      eras[ProtocolEra.SESSIONS] += c.requestsSessions;
      eras[ProtocolEra.STATELESS] += c.requestsStateless;
    }
    return eras;
  }

  /**
   * The door is a proxy in front of the MCP server (the gateway): its own client request spans, one per
   * exchange it forwarded, time the server's operations as its clients see them. Without it (serve) the
   * servers' own spans (kind SERVER) do; a client's spans time its waits, not the server's work.
   */
  timeServerOperationsAtProxy(): void {
    this.operationKind = SPAN_KIND_CLIENT;
  }

  operation(op: Operation): void {
    if (op.kind !== this.operationKind) return;
    const id = this.services.idOf(op.service);
    // Every service label number has its counts (the collectors walk them), this one's too.
    const counts = (this.counts[id] ??= new ServiceCounts(this.services.keyOf(id)!));
    this.operations.observe(id, counts.label, op);
  }

  taskCreated(service: string, shape: TaskShape): void {
    const c = this.countsFor(service);
    if (shape === TaskShape.EXTENSION) c.tasksCreatedExtension++;
    else c.tasksCreatedAugmented++;
  }

  taskPolled(service: string): void {
    this.countsFor(service).taskPolls++;
  }

  sessionStarted(service: string): void {
    this.countsFor(service).sessionsStarted++;
  }

  listeningResume(service: string, outcome: ResumeOutcome): void {
    const r = this.countsFor(service).listeningResumes;
    r.set(outcome, (r.get(outcome) ?? 0) + 1);
  }

  /**
   * Counts a line of the findings stream: a finding (with its trace id as exemplar, and the detection lag
   * when a span completed it), a retraction, an outcome_corrected record (a resume counted as a
   * continuation); a storm_ended record is counted by stormFinalized.
   */
  finding(f: Finding, lagSeconds?: number): void {
    if (f.record !== undefined) {
      if (f.record === FindingRecord.RETRACTION) {
        const labels = { [LABEL_KIND]: f.kind, [LABEL_SERVICE]: this.service(f.service) };
        for (const m of this.retractedTotal) m.inc(labels);
      } else if (f.record === FindingRecord.OUTCOME_CORRECTED) {
        // The core corrects only a resume counted as a continuation: the outcome it was counted under.
        const labels = { [LABEL_SERVICE]: this.service(f.service), [LABEL_OUTCOME]: ResumeOutcome.CONTINUATION };
        for (const m of this.correctedTotal) m.inc(labels);
      }
      return;
    }
    const labels = { [LABEL_KIND]: f.kind, [LABEL_SERVICE]: this.service(f.service) };
    const [prometheus, openMetrics] = this.findingsTotal;
    prometheus.inc(labels);
    openMetrics.inc({ labels, value: 1, exemplarLabels: { [EXEMPLAR_TRACE_ID]: f.trace_id } });
    if (lagSeconds !== undefined && lagSeconds >= 0) for (const m of this.detectionLag) m.observe(lagSeconds);
  }

  /** Renders for the Accept header: OpenMetrics (with exemplars) when asked for, else Prometheus text. */
  async render(accept: string | undefined): Promise<{ contentType: string; body: string }> {
    if (accept?.includes('application/openmetrics-text')) {
      return { contentType: this.openMetrics.contentType, body: await this.openMetrics.metrics() };
    }
    return { contentType: this.prometheus.contentType, body: await this.prometheus.metrics() };
  }

  // Each collect() rewrites its metric from the plain counts: prom-client counters have no set(), so the
  // supported way is reset() then inc() by the total, in the same label order as ever.

  private collectSpans(spans: Counter<string>): void {
    spans.reset();
    for (const [result, n] of this.spanResults) spans.inc({ [LABEL_RESULT]: result }, n);
  }

  private collectRequests(requests: Counter<string>): void {
    requests.reset();
    for (const c of this.counts) {
      if (c.requestsSessions)
        requests.inc({ [LABEL_SERVICE]: c.label, [LABEL_ERA]: ProtocolEra.SESSIONS }, c.requestsSessions);
      if (c.requestsStateless)
        requests.inc({ [LABEL_SERVICE]: c.label, [LABEL_ERA]: ProtocolEra.STATELESS }, c.requestsStateless);
    }
  }

  private collectRefusedNegotiations(refused: Counter<string>): void {
    refused.reset();
    for (const c of this.counts) {
      c.refusedNegotiations.forEach((n, id) => {
        refused.inc({ [LABEL_SERVICE]: c.label, [LABEL_VERSION]: this.versions.keyOf(id)! }, n);
      });
    }
  }

  private collectTerminals(terminals: Counter<string>): void {
    terminals.reset();
    for (const c of this.counts) {
      if (c.terminalFirst) terminals.inc({ [LABEL_SERVICE]: c.label, [LABEL_DUPLICATE]: 'false' }, c.terminalFirst);
      if (c.terminalDuplicate)
        terminals.inc({ [LABEL_SERVICE]: c.label, [LABEL_DUPLICATE]: 'true' }, c.terminalDuplicate);
    }
  }

  private collectResumes(resumes: Counter<string>, outcomes: (c: ServiceCounts) => Map<ResumeOutcome, number>): void {
    resumes.reset();
    for (const c of this.counts) {
      for (const [outcome, n] of outcomes(c)) resumes.inc({ [LABEL_SERVICE]: c.label, [LABEL_OUTCOME]: outcome }, n);
    }
  }

  private collectReattaches(reattaches: Counter<string>): void {
    reattaches.reset();
    for (const c of this.counts) {
      if (c.reattachAccepted)
        reattaches.inc({ [LABEL_SERVICE]: c.label, [LABEL_ACCEPTED]: 'true' }, c.reattachAccepted);
      if (c.reattachRefused) reattaches.inc({ [LABEL_SERVICE]: c.label, [LABEL_ACCEPTED]: 'false' }, c.reattachRefused);
    }
  }

  /** Every known service label has its series: the reported storms of that service not yet ended. */
  private collectActiveStorms(storms: Gauge<string>): void {
    storms.reset();
    for (const c of this.counts) c.stormsActive = 0;
    for (const [service, n] of this.detector?.activeStormsByService() ?? []) this.countsFor(service).stormsActive += n;
    for (const c of this.counts) storms.set({ [LABEL_SERVICE]: c.label }, c.stormsActive);
  }

  /** Without a detector (a detector-less registry, as in tests) the state metrics stay at 0. */
  private collectTracked(tracked: Gauge<string>): void {
    const stats = this.detector?.stats();
    if (stats) tracked.set(stats.tracked);
  }

  private collectEvidence(
    metric: Gauge<string>,
    read: (e: ReturnType<NonNullable<DetectorStateSource['evidence']>>) => number,
  ): void {
    const evidence = this.detector?.evidence?.();
    if (evidence) metric.set(read(evidence));
  }

  private collectTasksCreated(created: Counter<string>): void {
    created.reset();
    for (const c of this.counts) {
      if (c.tasksCreatedAugmented)
        created.inc({ [LABEL_SERVICE]: c.label, [LABEL_SHAPE]: TaskShape.AUGMENTED }, c.tasksCreatedAugmented);
      if (c.tasksCreatedExtension)
        created.inc({ [LABEL_SERVICE]: c.label, [LABEL_SHAPE]: TaskShape.EXTENSION }, c.tasksCreatedExtension);
    }
  }

  private collectSessionsStarted(started: Counter<string>): void {
    started.reset();
    for (const c of this.counts) if (c.sessionsStarted) started.inc({ [LABEL_SERVICE]: c.label }, c.sessionsStarted);
  }

  private collectTaskPolls(polls: Counter<string>): void {
    polls.reset();
    for (const c of this.counts) if (c.taskPolls) polls.inc({ [LABEL_SERVICE]: c.label }, c.taskPolls);
  }

  /**
   * Every known service label has its series, as for the active storms: the task records the detector
   * holds of that service now (read from its tasks family at the scrape; the cap, --max-tasks, is per
   * service, so this says which service nears it). Services past maxServices add up under `other`.
   */
  private collectLiveTasks(live: Gauge<string>): void {
    live.reset();
    for (const c of this.counts) c.liveTasks = 0;
    for (const [service, n] of this.detector?.liveTasksByService() ?? []) this.countsFor(service).liveTasks += n;
    for (const c of this.counts) live.set({ [LABEL_SERVICE]: c.label }, c.liveTasks);
  }

  private collectTaskEvictions(evictions: Counter<string>): void {
    const stats = this.detector?.stats();
    if (!stats) return;
    evictions.reset();
    evictions.inc(stats.taskEvictions);
  }

  private collectEvictions(evictions: Counter<string>): void {
    const stats = this.detector?.stats();
    if (!stats) return;
    evictions.reset();
    evictions.inc(stats.evictions);
  }
}

class ServiceCounts {
  terminalFirst = 0;
  terminalDuplicate = 0;
  reattachAccepted = 0;
  reattachRefused = 0;
  /** Reported storms not yet ended, as the detector counted them at the last scrape. */
  stormsActive = 0;
  readonly resumes = new Map<ResumeOutcome, number>();
  readonly listeningResumes = new Map<ResumeOutcome, number>();
  requestsSessions = 0;
  requestsStateless = 0;
  tasksCreatedAugmented = 0;
  tasksCreatedExtension = 0;
  taskPolls = 0;
  sessionsStarted = 0;
  /** Live task records, as the detector counted them at the last scrape. */
  liveTasks = 0;
  /** Refused negotiations, indexed by the `version` label's number (sparse: forEach skips the holes). */
  readonly refusedNegotiations: number[] = [];
  constructor(readonly label: string) {}
}

function create(
  d: MetricDescriptor,
  registry: Registry<RegistryContentType>,
  openMetrics: boolean,
  collect?: (metric: Metric) => void,
): Metric {
  const common = {
    name: d.name,
    help: d.help,
    labelNames: [...d.labelNames],
    registers: [registry],
    // prom-client calls collect() with the metric as `this`.
    ...(collect
      ? {
          collect(this: Metric) {
            collect(this);
          },
        }
      : {}),
  };
  switch (d.type) {
    case 'counter':
      // Exemplars where a finding names its trace, in the one format that carries them.
      return new Counter({ ...common, enableExemplars: openMetrics && d.name === METRIC_FINDINGS_TOTAL });
    case 'gauge':
      return new Gauge(common);
    case 'histogram':
      return new Histogram({ ...common, buckets: [...(d.buckets ?? [])] });
  }
}

function pairOf<M extends Metric>(pair: Pair<Metric>, as: (metric: Metric) => M): Pair<M> {
  return [as(pair[0]), as(pair[1])];
}

function counter(metric: Metric): Counter<string> {
  if (!(metric instanceof Counter)) throw new TypeError('the metric is not a counter');
  return metric;
}
function gauge(metric: Metric): Gauge<string> {
  if (!(metric instanceof Gauge)) throw new TypeError('the metric is not a gauge');
  return metric;
}
function histogram(metric: Metric): Histogram<string> {
  if (!(metric instanceof Histogram)) throw new TypeError('the metric is not a histogram');
  return metric;
}
