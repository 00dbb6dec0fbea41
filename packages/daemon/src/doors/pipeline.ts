import { SpanReceivedResult } from '@resumewatch/semconv';
import type { ResumewatchConfig } from '../config.js';
import {
  Detector,
  type Finding,
  type SpanRecord,
  type DecodeResult,
  IdBounder,
  boundSpanStrings,
  decodeJsonRequest,
  decodeProtobufRequest,
} from '@resumewatch/detector';
import { DetectorMetrics } from '../metrics.js';
import { Evidence, drawable } from '../page/evidence.js';
import { SpanRate } from '../page/span-rate.js';
import { FindingLog } from './finding-log.js';

type JsonDecodeOptions = Parameters<typeof decodeJsonRequest>[2];
type ProtobufDecodeOptions = Parameters<typeof decodeProtobufRequest>[2];

export interface PipelineInit {
  config: ResumewatchConfig;
  /** Unix ms; drives storm windows and retention. Defaults to Date.now. */
  clock?: () => number;
  /** Every finding with its JSON text (one line, written once). */
  onFinding?: (f: Finding, json: string) => void;
}

/** What the serve door's receivers share: the detector, its metrics and the recent findings. */
export class Pipeline {
  readonly detector: Detector;
  readonly metrics: DetectorMetrics;
  readonly recent: FindingLog;
  readonly ids: IdBounder;
  /** The spans of reported requests, for the page's timelines (bounded by --evidence-bytes). */
  readonly evidence: Evidence;
  /** Spans per second, sampled at each tick. */
  readonly rate = new SpanRate();
  private current: SpanRecord | undefined;
  /** Unix ms; drives storm windows and retention (and how long the page's render is reused). */
  readonly clock: () => number;
  /** The decoders' sink (SpanSink): the span id's words, when a decoder gives them, spare the core its hex parse. */
  private readonly sink = (s: SpanRecord, spanIdWords?: Uint32Array): void => {
    boundSpanStrings(s, this.ids);
    this.current = s;
    // After the detector: a span that completes a finding joins its request's evidence (reported() moved
    // the request's earlier spans there first), and a redelivered span is not drawn twice.
    if (drawable(this.detector.ingest(s, spanIdWords))) this.evidence.observe(s, spanIdWords);
    this.current = undefined;
  };

  constructor(init: PipelineInit) {
    const { config } = init;
    this.clock = init.clock ?? Date.now;
    this.ids = new IdBounder(config.maxIdBytes);
    this.recent = new FindingLog(config.findingsBuffer, config.findingsMaxBytes);
    this.evidence = new Evidence(config);
    // The metrics read the detector's state at scrape time; the detector reports its events to them.
    this.metrics = new DetectorMetrics(
      config.maxServices,
      {
        stats: () => this.detector.stats(),
        activeStormsByService: () => this.detector.activeStormsByService(),
        liveTasksByService: () => this.detector.liveTasksByService(),
        evidence: () => this.evidence.stats(),
      },
      config.maxTools,
    );
    this.detector = new Detector({
      ...config,
      clock: this.clock,
      events: this.metrics,
      onFinding: (f) => {
        const lag = this.current ? (this.clock() - this.current.endTimeUnixMs) / 1000 : undefined;
        this.metrics.finding(f, lag);
        this.evidence.reported(f);
        const json = JSON.stringify(f);
        this.recent.push(f, json);
        init.onFinding?.(f, json);
      },
    });
  }

  /**
   * For the decoders' onSkipped: a valid span that cannot matter to the detector or the evidence, skipped
   * without making its record, counts as the detector would have counted it (IGNORED).
   */
  readonly skipped = (): void => this.detector.ignored();

  /** Runs a decoder over one request body, feeding every span to the detector. */
  ingest(decode: (sink: (s: SpanRecord) => void) => DecodeResult): DecodeResult {
    return this.counted(decode(this.sink));
  }

  /** An OTLP/JSON body's spans fed to the detector (as `ingest`, without a function made per body). */
  ingestJson(body: Uint8Array, options: JsonDecodeOptions): DecodeResult {
    return this.counted(decodeJsonRequest(body, this.sink, options));
  }

  /** An OTLP/protobuf body's spans fed to the detector (as `ingest`, without a function made per body). */
  ingestProtobuf(body: Uint8Array, options: ProtobufDecodeOptions): DecodeResult {
    return this.counted(decodeProtobufRequest(body, this.sink, options));
  }

  private counted(result: DecodeResult): DecodeResult {
    if (result.invalid > 0) this.metrics.spans(SpanReceivedResult.INVALID, result.invalid);
    return result;
  }

  tick(): void {
    this.detector.tick();
    this.rate.sample(this.clock(), this.spansReceived());
  }

  /** Spans received so far, whatever became of them. */
  spansReceived(): number {
    return Object.values(this.detector.stats().spans).reduce((a, b) => a + b, 0);
  }
}
