import { createServer } from 'node:http';
import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ResumewatchConfig } from '../config.js';
import { type Detector, type Finding, type SpanRecord, type DecodeResult, toSpanRecord } from '@resumewatch/detector';
import type { DetectorMetrics } from '../metrics.js';
import { closeHttp, limits, listen, serverTimeouts } from './listeners.js';
import { metricsHandler } from './metrics-server.js';
import type { Pipeline } from './pipeline.js';
import { openStateFile, type Restored, type StatePart } from './state-file.js';
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
  /** One-line notices (state file restored or set aside, snapshot failures). Defaults to stderr. */
  log?: (line: string) => void;
}

/** The detector of `serve`, fed in-process by a SpanProcessor, with /metrics, /findings and /healthz. */
export interface EmbeddedDetector {
  /** Add it to the tracer provider whose spans the detector reads. */
  readonly processor: SpanProcessor;
  /**
   * The record feed beneath `processor`: a span's record (as `toSpanRecord` makes it) into the pipeline,
   * for a tracer that makes the records itself (the gateway's detector-only tracer): no span object read.
   */
  readonly ingest: (record: SpanRecord) => void;
  readonly host: string;
  readonly metricsPort: number;
  readonly config: ResumewatchConfig;
  readonly detector: Detector;
  readonly metrics: DetectorMetrics;
  /** What was read back from `config.stateFile` on start: the number of tracked requests restored, or why not. */
  readonly restored: Restored;
  /** Recent findings, oldest first (the same as GET /findings, without its byte bound). */
  findings(): Finding[];
  /** Writes the detector state to `config.stateFile` now (also done every `config.snapshotIntervalMs` and on close). */
  snapshot(): Promise<void>;
  /**
   * Keeps another part's state (the gateway's wire observer) in `config.stateFile` under `name`, beside
   * the detector's: read back now (one line logged), written with every snapshot. Nothing without a file.
   */
  keepSection(name: string, part: StatePart): void;
  /**
   * Stops the listener. With a state file, writes the state: storms still open stay open for the next
   * process, as serve's do. Without one, ends them now (nothing after this will end them).
   */
  close(): Promise<void>;
}

const ONE_SPAN: DecodeResult = { spans: 1, invalid: 0 };

/** Hands one span's record to the pipeline: the same path as a span decoded from OTLP, without the network. */
function recordFeed(pipeline: Pipeline): (record: SpanRecord) => void {
  return (record) =>
    pipeline.ingest((sink) => {
      sink(record);
      return ONE_SPAN;
    });
}

/** Hands each ended span's record to the pipeline (recordFeed). */
class PipelineSpanProcessor implements SpanProcessor {
  constructor(private readonly ingest: (record: SpanRecord) => void) {}
  onStart(_span: Span, _parentContext: Context): void {}
  onEnd(span: ReadableSpan): void {
    this.ingest(toSpanRecord(span));
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
  const log = options.log ?? ((line: string) => void process.stderr.write(`resumewatch: ${line}\n`));
  // Read back before any span comes: importState needs a detector that has seen none.
  const state = await openStateFile(config, pipeline.detector, log);
  const server = limits(createServer({ ...serverTimeouts(config) }, metricsHandler(pipeline, config)), config);
  const metricsPort = await listen(server, config.host, config.metricsPort);
  const timer = setInterval(() => pipeline.tick(), options.tickMs ?? 1000);
  timer.unref();
  state.startSnapshots();
  let closing: Promise<void> | undefined;
  const ingest = recordFeed(pipeline);
  return {
    processor: new PipelineSpanProcessor(ingest),
    ingest,
    host: config.host,
    metricsPort,
    config,
    detector: pipeline.detector,
    metrics: pipeline.metrics,
    restored: state.restored,
    findings: () => pipeline.recent.findings(),
    snapshot: state.snapshot,
    keepSection: (name, part) => state.keepSection(name, part),
    close: () =>
      (closing ??= (async () => {
        clearInterval(timer);
        state.stopSnapshots();
        if (config.stateFile) await state.snapshot();
        else pipeline.detector.flush();
        await closeHttp(server);
      })()),
  };
}
