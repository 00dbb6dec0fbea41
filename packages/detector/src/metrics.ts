import {
  EXEMPLAR_TRACE_ID,
  LABEL_ACCEPTED,
  LABEL_DUPLICATE,
  LABEL_KIND,
  LABEL_OUTCOME,
  LABEL_RESULT,
  LABEL_SERVICE,
  METRICS,
  METRIC_DETECTION_LAG_SECONDS,
  METRIC_FINDINGS_TOTAL,
  METRIC_RECONNECT_STORMS_ACTIVE,
  METRIC_RECONNECT_STORM_ATTEMPTS,
  METRIC_RESUME_ATTEMPTS_TOTAL,
  METRIC_SESSION_REATTACH_TOTAL,
  METRIC_SPANS_RECEIVED_TOTAL,
  METRIC_STATE_EVICTIONS_TOTAL,
  METRIC_TERMINAL_EVENTS_TOTAL,
  METRIC_TRACKED_REQUESTS,
  type MetricDescriptor,
  type ResumeOutcome,
  type SpanReceivedResult,
} from '@resumewatch/semconv';
import { Counter, Gauge, Histogram, Registry, type OpenMetricsContentType, type RegistryContentType } from 'prom-client';
import type { DetectorEvents, DetectorStats, Finding } from './core/types.js';

const OTHER_SERVICE = 'other';
type Metric = Counter<string> | Gauge<string> | Histogram<string>;
type Labels = Record<string, string>;

/**
 * The contract's metrics, in a Prometheus-format registry and an OpenMetrics one (prom-client fixes the
 * format per registry, and only OpenMetrics carries exemplars). Per-span counts are plain numbers kept
 * here and copied into both registries at scrape time, so the hot path does not touch prom-client.
 */
export class DetectorMetrics implements DetectorEvents {
  readonly prometheus = new Registry();
  readonly openMetrics = new Registry<OpenMetricsContentType>();
  private readonly sets: Record<string, Metric>[] = [];
  private readonly services = new Map<string, string>();
  private readonly counts = new Map<string, Map<string, { labels: Labels; value: number }>>();
  private stats: DetectorStats | undefined;

  constructor(
    private readonly maxServices = 100,
    private readonly statsSource?: () => DetectorStats,
  ) {
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

  /** The `service` label value: the service itself while fewer than maxServices are known, else `other`. */
  service(name: string): string {
    const known = this.services.get(name);
    if (known !== undefined) return known;
    if (this.services.size >= this.maxServices) return OTHER_SERVICE;
    this.services.set(name, name);
    return name;
  }

  span(result: SpanReceivedResult): void {
    this.add(METRIC_SPANS_RECEIVED_TOTAL, result, { [LABEL_RESULT]: result });
  }

  spans(result: SpanReceivedResult, n: number): void {
    this.add(METRIC_SPANS_RECEIVED_TOTAL, result, { [LABEL_RESULT]: result }, n);
  }

  terminal(service: string, duplicate: boolean): void {
    const s = this.service(service);
    this.add(METRIC_TERMINAL_EVENTS_TOTAL, s + '|' + duplicate, { [LABEL_SERVICE]: s, [LABEL_DUPLICATE]: String(duplicate) });
  }

  resume(service: string, outcome: ResumeOutcome): void {
    const s = this.service(service);
    this.add(METRIC_RESUME_ATTEMPTS_TOTAL, s + '|' + outcome, { [LABEL_SERVICE]: s, [LABEL_OUTCOME]: outcome });
  }

  reattach(service: string, accepted: boolean): void {
    const s = this.service(service);
    this.add(METRIC_SESSION_REATTACH_TOTAL, s + '|' + accepted, { [LABEL_SERVICE]: s, [LABEL_ACCEPTED]: String(accepted) });
  }

  stormStarted(service: string): void {
    const s = this.service(service);
    this.add(METRIC_RECONNECT_STORMS_ACTIVE, s, { [LABEL_SERVICE]: s }, 1);
  }

  stormEnded(service: string): void {
    const s = this.service(service);
    this.add(METRIC_RECONNECT_STORMS_ACTIVE, s, { [LABEL_SERVICE]: s }, -1);
  }

  stormFinalized(service: string, attempts: number): void {
    const labels = { [LABEL_SERVICE]: this.service(service) };
    for (const set of this.sets) (set[METRIC_RECONNECT_STORM_ATTEMPTS] as Histogram<string>).observe(labels, attempts);
  }

  /** Counts a finding, with its trace id as exemplar, and the detection lag when a span completed it. */
  finding(f: Finding, lagSeconds?: number): void {
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

  private add(metric: string, key: string, labels: Labels, n = 1): void {
    let byKey = this.counts.get(metric);
    if (byKey === undefined) this.counts.set(metric, (byKey = new Map()));
    const entry = byKey.get(key);
    if (entry !== undefined) entry.value += n;
    else byKey.set(key, { labels, value: n });
  }

  private sync(): void {
    this.stats = this.statsSource?.();
    for (const set of this.sets) {
      for (const [name, byKey] of this.counts) {
        const m = set[name]!;
        m.reset();
        for (const { labels, value } of byKey.values()) {
          if (m instanceof Gauge) m.set(labels, value);
          else (m as Counter<string>).inc(labels, value);
        }
      }
      if (this.stats) {
        (set[METRIC_TRACKED_REQUESTS] as Gauge<string>).set(this.stats.tracked);
        const ev = set[METRIC_STATE_EVICTIONS_TOTAL] as Counter<string>;
        ev.reset();
        ev.inc(this.stats.evictions);
      }
    }
  }
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
