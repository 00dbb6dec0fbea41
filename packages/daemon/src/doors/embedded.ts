import { createServer } from 'node:http';
import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ResumewatchConfig } from '../config.js';
import { type Detector, type Finding, type SpanRecord, type DecodeResult, toSpanRecord } from '@resumewatch/detector';
import type { DetectorMetrics } from '../metrics.js';
import { closeHttp, limits, listen, serverTimeouts } from './listeners.js';
import { metricsHandler } from './metrics-server.js';
import type { Pipeline } from './pipeline.js';
import { configWith, writingPipeline } from './writing-pipeline.js';

export interface EmbeddedDetectorOptions {
  /** The detector's options and the metrics listener's (`host`, `metricsPort`, `token`, limits); the OTLP ones are unused. */
  config?: Partial<ResumewatchConfig>;
  /** Called for every finding, after it is counted and kept for /findings. */
  onFinding?: (f: Finding) => void;
  /** Where findings are written as JSON lines; null for nowhere. Defaults to process.stdout. */
  output?: NodeJS.WritableStream | null;
  /** Unix ms; drives storm windows and retention. Defaults to Date.now. */
  clock?: () => number;
  /** How often the clock is applied to the detector. Default 1000 ms. */
  tickMs?: number;
}

/** The detector of `serve`, fed in-process by a SpanProcessor, with /metrics, /findings and /healthz. */
export interface EmbeddedDetector {
  /** Add it to the tracer provider whose spans the detector reads. */
  readonly processor: SpanProcessor;
  readonly host: string;
  readonly metricsPort: number;
  readonly config: ResumewatchConfig;
  readonly detector: Detector;
  readonly metrics: DetectorMetrics;
  /** Recent findings, oldest first (the same as GET /findings, without its byte bound). */
  findings(): Finding[];
  close(): Promise<void>;
}

const ONE_SPAN: DecodeResult = { spans: 1, invalid: 0 };

/** Hands each ended span to the pipeline: the same path as a span decoded from OTLP, without the network. */
class PipelineSpanProcessor implements SpanProcessor {
  constructor(private readonly pipeline: Pipeline) {}
  onStart(_span: Span, _parentContext: Context): void {}
  onEnd(span: ReadableSpan): void {
    const record: SpanRecord = toSpanRecord(span);
    this.pipeline.ingest((sink) => {
      sink(record);
      return ONE_SPAN;
    });
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Runs the detector of `serve` inside another door's process (the gateway): the same pipeline, metrics
 * and findings, the metrics listener on `config.metricsPort` (0 picks a free one), no OTLP receiver.
 */
export async function startEmbeddedDetector(options: EmbeddedDetectorOptions = {}): Promise<EmbeddedDetector> {
  const config = configWith(options.config);
  const { pipeline } = writingPipeline(config, options);
  const server = limits(createServer({ ...serverTimeouts(config) }, metricsHandler(pipeline, config)), config);
  const metricsPort = await listen(server, config.host, config.metricsPort);
  const timer = setInterval(() => pipeline.tick(), options.tickMs ?? 1000);
  timer.unref();
  let closing: Promise<void> | undefined;
  return {
    processor: new PipelineSpanProcessor(pipeline),
    host: config.host,
    metricsPort,
    config,
    detector: pipeline.detector,
    metrics: pipeline.metrics,
    findings: () => pipeline.recent.findings(),
    close: () =>
      (closing ??= (async () => {
        clearInterval(timer);
        pipeline.detector.flush();
        await closeHttp(server);
      })()),
  };
}
