import {
  EXEMPLAR_TRACE_ID,
  LABEL_ACCEPTED,
  LABEL_DUPLICATE,
  LABEL_ENDED_BY,
  LABEL_KIND,
  LABEL_SERVER,
  LABEL_OUTCOME,
  LABEL_RESULT,
  LABEL_SERVICE,
  METRICS,
  METRIC_DETECTION_LAG_SECONDS,
  METRIC_FINDINGS_RETRACTED_TOTAL,
  METRIC_FINDINGS_TOTAL,
  METRIC_LISTENING_RESUMES_TOTAL,
  METRIC_RECONNECT_STORMS_ENDED_TOTAL,
  METRIC_SERVER_DEFECTS_TOTAL,
  METRIC_RECONNECT_STORMS_ACTIVE,
  METRIC_RECONNECT_STORM_ATTEMPTS,
  METRIC_RESUME_ATTEMPTS_TOTAL,
  METRIC_SESSION_REATTACH_TOTAL,
  METRIC_SPANS_RECEIVED_TOTAL,
  METRIC_STATE_EVICTIONS_TOTAL,
  METRIC_TERMINAL_EVENTS_TOTAL,
  METRIC_TRACKED_REQUESTS,
  FindingRecord,
  type FindingKind,
  type MetricDescriptor,
  type ResumeOutcome,
  type SpanReceivedResult,
  type StormEnd,
} from '@resumewatch/semconv';
import { CappedLabels } from '@resumewatch/bounded';
import { Counter, Gauge, Histogram, Registry, type OpenMetricsContentType, type RegistryContentType } from 'prom-client';
import { DEFAULT_MAX_SERVICES, OTHER_SERVICE } from './core/services.js';
import type { DetectorEvents, DetectorStats, Finding } from './core/types.js';

type Metric = Counter<string> | Gauge<string> | Histogram<string>;

/**
 * The contract's metrics, in a Prometheus-format registry and an OpenMetrics one (prom-client fixes the
 * format per registry, and only OpenMetrics carries exemplars). Per-span counts are plain numbers kept
 * here and copied into both registries at scrape time, so the hot path does not touch prom-client.
 */
export class DetectorMetrics implements DetectorEvents {
  readonly prometheus = new Registry();
  readonly openMetrics = new Registry<OpenMetricsContentType>();
  private readonly sets: Record<string, Metric>[] = [];
  /** `service` label values, capped at maxServices (the rest: `other`). */
  private readonly services: CappedLabels<string>;
  /** Plain counts per `service` label, indexed by the label's number in `services`. */
  private readonly counts: ServiceCounts[] = [];
  private readonly spanResults = new Map<SpanReceivedResult, number>();
  /** `server` label values of server-defect counts, capped at maxServices like `service` (the rest: `other`). */
  private readonly servers: CappedLabels<string>;

  constructor(
    maxServices = DEFAULT_MAX_SERVICES,
    private readonly statsSource?: () => DetectorStats,
  ) {
    this.services = new CappedLabels(maxServices, OTHER_SERVICE);
    this.servers = new CappedLabels(maxServices, OTHER_SERVICE);
    this.openMetrics.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    // prom-client renders metrics in registration order and calls each collect() first: hooking the
    // first metric refreshes every plain count before any of them is read.
    const collect = (): void => this.sync();
    for (const [registry, om] of [[this.prometheus, false], [this.openMetrics, true]] as const) {
      const set: Record<string, Metric> = {};
      METRICS.forEach((d, i) => (set[d.name] = create(d, registry as Registry<RegistryContentType>, om, i === 0 ? collect : undefined)));
      this.sets.push(set);
    }
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

  stormStarted(service: string): void {
    this.countsFor(service).stormsActive++;
  }

  stormEnded(service: string): void {
    this.countsFor(service).stormsActive--;
  }

  stormFinalized(service: string, attempts: number, endedBy: StormEnd): void {
    const labels = { [LABEL_SERVICE]: this.service(service) };
    const ended = { ...labels, [LABEL_ENDED_BY]: endedBy };
    for (const set of this.sets) {
      (set[METRIC_RECONNECT_STORM_ATTEMPTS] as Histogram<string>).observe(labels, attempts);
      (set[METRIC_RECONNECT_STORMS_ENDED_TOTAL] as Counter<string>).inc(ended);
    }
  }

  serverDefect(kind: FindingKind, server: string): void {
    const labels = { [LABEL_KIND]: kind, [LABEL_SERVER]: this.server(server) };
    for (const set of this.sets) (set[METRIC_SERVER_DEFECTS_TOTAL] as Counter<string>).inc(labels);
  }

  listeningResume(service: string, outcome: ResumeOutcome): void {
    const r = this.countsFor(service).listeningResumes;
    r.set(outcome, (r.get(outcome) ?? 0) + 1);
  }

  /**
   * Counts a line of the findings stream: a finding (with its trace id as exemplar, and the detection lag
   * when a span completed it), a retraction; a storm_ended record is counted by stormFinalized.
   */
  finding(f: Finding, lagSeconds?: number): void {
    if (f.record !== undefined) {
      if (f.record === FindingRecord.RETRACTION) {
        const labels = { [LABEL_KIND]: f.kind, [LABEL_SERVICE]: this.service(f.service) };
        for (const set of this.sets) (set[METRIC_FINDINGS_RETRACTED_TOTAL] as Counter<string>).inc(labels);
      }
      return;
    }
    const labels = { [LABEL_KIND]: f.kind, [LABEL_SERVICE]: this.service(f.service) };
    const [prom, om] = this.sets as [Record<string, Metric>, Record<string, Metric>];
    (prom[METRIC_FINDINGS_TOTAL] as Counter<string>).inc(labels);
    (om[METRIC_FINDINGS_TOTAL] as Counter<string>).inc({ labels, value: 1, exemplarLabels: { [EXEMPLAR_TRACE_ID]: f.trace_id } });
    if (lagSeconds !== undefined && lagSeconds >= 0) {
      for (const set of this.sets) (set[METRIC_DETECTION_LAG_SECONDS] as Histogram<string>).observe(lagSeconds);
    }
  }

  /** Renders for the Accept header: OpenMetrics (with exemplars) when asked for, else Prometheus text. */
  async render(accept: string | undefined): Promise<{ contentType: string; body: string }> {
    if (accept?.includes('application/openmetrics-text')) {
      return { contentType: this.openMetrics.contentType, body: await this.openMetrics.metrics() };
    }
    return { contentType: this.prometheus.contentType, body: await this.prometheus.metrics() };
  }

  private sync(): void {
    const stats = this.statsSource?.();
    for (const set of this.sets) {
      const spans = set[METRIC_SPANS_RECEIVED_TOTAL] as Counter<string>;
      const terminals = set[METRIC_TERMINAL_EVENTS_TOTAL] as Counter<string>;
      const resumes = set[METRIC_RESUME_ATTEMPTS_TOTAL] as Counter<string>;
      const listening = set[METRIC_LISTENING_RESUMES_TOTAL] as Counter<string>;
      const reattaches = set[METRIC_SESSION_REATTACH_TOTAL] as Counter<string>;
      const storms = set[METRIC_RECONNECT_STORMS_ACTIVE] as Gauge<string>;
      for (const m of [spans, terminals, resumes, listening, reattaches]) m.reset();
      storms.reset();
      for (const [result, n] of this.spanResults) spans.inc({ [LABEL_RESULT]: result }, n);
      for (const c of this.counts) {
        const service = { [LABEL_SERVICE]: c.label };
        if (c.terminalFirst) terminals.inc({ ...service, [LABEL_DUPLICATE]: 'false' }, c.terminalFirst);
        if (c.terminalDuplicate) terminals.inc({ ...service, [LABEL_DUPLICATE]: 'true' }, c.terminalDuplicate);
        for (const [outcome, n] of c.resumes) resumes.inc({ ...service, [LABEL_OUTCOME]: outcome }, n);
        for (const [outcome, n] of c.listeningResumes) listening.inc({ ...service, [LABEL_OUTCOME]: outcome }, n);
        if (c.reattachAccepted) reattaches.inc({ ...service, [LABEL_ACCEPTED]: 'true' }, c.reattachAccepted);
        if (c.reattachRefused) reattaches.inc({ ...service, [LABEL_ACCEPTED]: 'false' }, c.reattachRefused);
        storms.set(service, c.stormsActive);
      }
      if (stats) {
        (set[METRIC_TRACKED_REQUESTS] as Gauge<string>).set(stats.tracked);
        const ev = set[METRIC_STATE_EVICTIONS_TOTAL] as Counter<string>;
        ev.reset();
        ev.inc(stats.evictions);
      }
    }
  }
}

class ServiceCounts {
  terminalFirst = 0;
  terminalDuplicate = 0;
  reattachAccepted = 0;
  reattachRefused = 0;
  stormsActive = 0;
  readonly resumes = new Map<ResumeOutcome, number>();
  readonly listeningResumes = new Map<ResumeOutcome, number>();
  constructor(readonly label: string) {}
}

function create(d: MetricDescriptor, registry: Registry<RegistryContentType>, openMetrics: boolean, collect?: () => void): Metric {
  const common = { name: d.name, help: d.help, labelNames: [...d.labelNames], registers: [registry], ...(collect ? { collect } : {}) };
  switch (d.type) {
    case 'counter':
      return new Counter({ ...common, enableExemplars: openMetrics && d.name === METRIC_FINDINGS_TOTAL });
    case 'gauge':
      return new Gauge(common);
    case 'histogram':
      return new Histogram({ ...common, buckets: [...(d.buckets ?? [])] });
  }
}
