import { CappedLabels } from '@resumewatch/bounded';
import { OTHER_SERVICE, type Operation } from '@resumewatch/detector';
import {
  EXEMPLAR_TRACE_ID,
  LABEL_ERROR_TYPE,
  LABEL_GEN_AI_TOOL_NAME,
  LABEL_MCP_METHOD_NAME,
  LABEL_MCP_PROTOCOL_VERSION,
  LABEL_RPC_RESPONSE_STATUS_CODE,
  LABEL_SERVICE,
  type MetricDescriptor,
} from '@resumewatch/semconv';
import { Histogram, type Registry, type RegistryContentType } from 'prom-client';

/** Default of `--max-tools`: `gen_ai_tool_name` label values before `other` (tool names are the client's to choose). */
export const DEFAULT_MAX_TOOLS = 100;
/** Values of each other label (method, error type, protocol version, status code) before `other`. */
const MAX_LABEL_VALUES = 32;
/**
 * Label sets (series) of the histogram. Past it, an observation of a new label set counts in the
 * overflow series of its service: every label it has is `other`, so its rate and its errors still count.
 */
const MAX_SERIES = 1000;
/** Characters of a label value; a longer one is `other`. MCP tool names are 1 to 128 characters. */
const MAX_LABEL_VALUE_LENGTH = 128;
/** A label of a series that its span did not carry (the series has no such label). */
const ABSENT = 0;
/** The one value every capped label of this histogram takes past its cap, as `service` does. */
const OTHER = OTHER_SERVICE;

/** One label set: its observations per bucket and the latest traced one of each bucket (exemplars). */
class OperationSeries {
  /** Observations per bucket, not cumulative; the last is the one above every boundary. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  /** Per bucket, the latest observation with a trace: its trace id, seconds and end (Unix seconds). */
  readonly traces: (string | undefined)[];
  readonly seconds: Float64Array;
  readonly times: Float64Array;
  /** The `le` line labels of each bucket, made at the first scrape and reused. */
  bucketLabels: Record<string, string | number>[] | undefined;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    buckets: number,
  ) {
    this.counts = new Float64Array(buckets + 1);
    this.traces = new Array<string | undefined>(buckets + 1);
    this.seconds = new Float64Array(buckets + 1);
    this.times = new Float64Array(buckets + 1);
  }
}

/** A line of the exposition, as prom-client's registry renders it. */
interface ExposedValue {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
  exemplar?: { labelSet: Record<string, string>; value: number; timestamp: number };
}

/**
 * mcp.server.operation.duration of the OpenTelemetry MCP conventions, as a Prometheus histogram: one
 * observation per request span, at its end (nothing per SSE event), labelled with the span's
 * conventions' attributes, each capped in number of values and the label sets capped too. The hot path
 * touches plain arrays only: prom-client's own observe() would hash six labels per request (twice, one
 * registry per format); the histogram objects it renders read these series at scrape time.
 */
export class OperationHistogram {
  private readonly boundaries: readonly number[];
  private readonly methods = new CappedLabels<string>(MAX_LABEL_VALUES, OTHER);
  private readonly tools: CappedLabels<string>;
  private readonly errors = new CappedLabels<string>(MAX_LABEL_VALUES, OTHER);
  private readonly versions = new CappedLabels<string>(MAX_LABEL_VALUES, OTHER);
  private readonly codes = new CappedLabels<string>(MAX_LABEL_VALUES, OTHER);
  /** By (service, method, tool), then by (error type, version, status code): numbers, never a string key. */
  private readonly series = new Map<number, Map<number, OperationSeries>>();
  private seriesCount = 0;
  /** Observations of a new label set past MAX_SERIES, counted in their service's overflow series. */
  overflowed = 0;

  constructor(
    private readonly descriptor: MetricDescriptor,
    maxTools = DEFAULT_MAX_TOOLS,
  ) {
    this.boundaries = descriptor.buckets ?? [];
    this.tools = new CappedLabels<string>(maxTools, OTHER);
  }

  /** Registers the histogram in a registry; exemplars only where the format carries them (OpenMetrics). */
  register(registry: Registry<RegistryContentType>, exemplars: boolean): void {
    new SeriesHistogram(this.descriptor, registry, () => this.exposed(exemplars));
  }

  /**
   * One operation timed by a request span: its duration, in the bucket of its labels. `serviceId` and
   * `service` are its service as the other metrics label it (its number and its label).
   */
  observe(serviceId: number, service: string, op: Operation): void {
    const seconds = op.seconds;
    const series = this.seriesOf(
      serviceId,
      service,
      idOf(this.methods, op.method),
      idOf(this.tools, op.tool),
      idOf(this.errors, op.errorType),
      idOf(this.versions, op.protocolVersion),
      idOf(this.codes, op.statusCode),
    );
    const counts = series.counts;
    const bounds = this.boundaries;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    counts[i] = counts[i]! + 1;
    series.sum += seconds;
    series.count++;
    if (op.traceId.length === 32) {
      series.traces[i] = op.traceId;
      series.seconds[i] = seconds;
      series.times[i] = op.endTimeUnixMs / 1000;
    }
  }

  private seriesOf(s: number, service: string, m: number, t: number, e: number, v: number, c: number): OperationSeries {
    const outer = (s * (MAX_LABEL_VALUES + 2) + m) * (this.tools.cap + 2) + t;
    const inner = (e * (MAX_LABEL_VALUES + 2) + v) * (MAX_LABEL_VALUES + 2) + c;
    let byOuter = this.series.get(outer);
    const known = byOuter?.get(inner);
    if (known) return known;
    if (this.seriesCount >= MAX_SERIES && !this.isOverflow(m, t, e, v, c)) {
      this.overflowed++;
      const other = (labels: CappedLabels<string>, id: number) => (id === ABSENT ? ABSENT : otherId(labels));
      return this.seriesOf(
        s,
        service,
        otherId(this.methods),
        other(this.tools, t),
        other(this.errors, e),
        other(this.versions, v),
        other(this.codes, c),
      );
    }
    if (!byOuter) this.series.set(outer, (byOuter = new Map()));
    const labels: Record<string, string> = { [LABEL_SERVICE]: service };
    const put = (name: string, values: CappedLabels<string>, id: number) => {
      if (id !== ABSENT) labels[name] = values.keyOf(id - 1)!;
    };
    put(LABEL_MCP_METHOD_NAME, this.methods, m);
    put(LABEL_GEN_AI_TOOL_NAME, this.tools, t);
    put(LABEL_ERROR_TYPE, this.errors, e);
    put(LABEL_MCP_PROTOCOL_VERSION, this.versions, v);
    put(LABEL_RPC_RESPONSE_STATUS_CODE, this.codes, c);
    const series = new OperationSeries(labels, this.boundaries.length);
    byOuter.set(inner, series);
    this.seriesCount++;
    return series;
  }

  /** A label set of an overflow series: every label it has is `other`. */
  private isOverflow(m: number, t: number, e: number, v: number, c: number): boolean {
    const isOther = (labels: CappedLabels<string>, id: number) => id === ABSENT || id === otherId(labels);
    return (
      m === otherId(this.methods) &&
      isOther(this.tools, t) &&
      isOther(this.errors, e) &&
      isOther(this.versions, v) &&
      isOther(this.codes, c)
    );
  }

  /** The histogram's lines now: per series, its cumulative buckets (+Inf last), _sum and _count. */
  private exposed(exemplars: boolean): ExposedValue[] {
    const name = this.descriptor.name;
    const bucketName = `${name}_bucket`;
    const out: ExposedValue[] = [];
    for (const byInner of this.series.values()) {
      for (const series of byInner.values()) {
        const labels = (series.bucketLabels ??= [...this.boundaries, '+Inf'].map((le) => ({ ...series.labels, le })));
        let cumulative = 0;
        for (let i = 0; i < labels.length; i++) {
          cumulative += series.counts[i]!;
          const line: ExposedValue = { metricName: bucketName, labels: labels[i]!, value: cumulative };
          const trace = series.traces[i];
          if (exemplars && trace !== undefined)
            line.exemplar = {
              labelSet: { [EXEMPLAR_TRACE_ID]: trace },
              value: series.seconds[i]!,
              timestamp: series.times[i]!,
            };
          out.push(line);
        }
        out.push({ metricName: `${name}_sum`, labels: series.labels, value: series.sum });
        out.push({ metricName: `${name}_count`, labels: series.labels, value: series.count });
      }
    }
    return out;
  }
}

/** A label's number in a series key: ABSENT without a value, else 1 + its capped value's number. */
function idOf(labels: CappedLabels<string>, value: string | undefined): number {
  if (value === undefined || value === '') return ABSENT;
  return 1 + labels.idOf(value.length > MAX_LABEL_VALUE_LENGTH ? labels.overflow : value);
}

function otherId(labels: CappedLabels<string>): number {
  return 1 + labels.idOf(labels.overflow);
}

/**
 * prom-client's Histogram, its lines read from the operation series at each scrape: its observe() is
 * never called. The registry renders what getForPromString() returns (get() for the JSON form).
 */
class SeriesHistogram extends Histogram<string> {
  constructor(
    private readonly d: MetricDescriptor,
    registry: Registry<RegistryContentType>,
    private readonly read: () => ExposedValue[],
  ) {
    super({
      name: d.name,
      help: d.help,
      labelNames: [...d.labelNames],
      buckets: [...(d.buckets ?? [])],
      registers: [registry],
    });
  }

  getForPromString(): Promise<{ name: string; help: string; type: 'histogram'; values: ExposedValue[] }> {
    return Promise.resolve({ name: this.d.name, help: this.d.help, type: 'histogram', values: this.read() });
  }

  override get(): ReturnType<Histogram<string>['get']> {
    return this.getForPromString() as unknown as ReturnType<Histogram<string>['get']>;
  }
}
