import { createServer } from 'node:http';
import { METRIC_REQUESTS_SHED_TOTAL } from '@resumewatch/semconv';
import type { ResumewatchConfig } from '../config.js';
import type { Detector, Finding } from '@resumewatch/detector';
import type { DetectorMetrics } from '../metrics.js';
import { doorCounter } from './door-counters.js';
import { InflightRequests } from './drain.js';
import { startGrpcReceiver, type GrpcReceiver } from './grpc-receiver.js';
import { otlpHttpHandler } from './http-receiver.js';
import { InflightBudget } from './inflight.js';
import { metricsHandler } from './metrics-server.js';
import { closeHttp, limits, listen, serverTimeouts } from './listeners.js';
import { openStateFile, type Restored } from './state-file.js';
import { configWith, writingPipeline } from './writing-pipeline.js';

export interface ServeOptions extends Partial<ResumewatchConfig> {
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

export interface RunningServer {
  readonly host: string;
  readonly httpPort: number;
  /** undefined when the gRPC receiver is off. */
  readonly grpcPort: number | undefined;
  readonly metricsPort: number;
  readonly config: ResumewatchConfig;
  readonly detector: Detector;
  readonly metrics: DetectorMetrics;
  /** Bytes of request bodies held now (and at most so far), across HTTP and gRPC. */
  readonly inflight: InflightBudget;
  /** What was read back from --state-file on start: the number of tracked requests restored, or why not. */
  readonly restored: Restored;
  /** Recent findings, oldest first (the same as GET /findings, without its byte bound). */
  findings(): Finding[];
  /** Writes the detector state to --state-file now (also done periodically and on close). */
  snapshot(): Promise<void>;
  /**
   * Graceful stop: stops accepting, gives requests in flight --grace to be answered, then closes
   * every connection and writes the state to --state-file.
   */
  close(): Promise<void>;
}

/** Starts the OTLP receivers and the metrics endpoint; ports may be 0 to pick free ones. */
export async function startServer(options: ServeOptions = {}): Promise<RunningServer> {
  const config = configWith(options);
  const { pipeline, output } = writingPipeline(config, options);
  const log = options.log ?? ((line: string) => void process.stderr.write(`resumewatch: ${line}\n`));
  const state = await openStateFile(config, pipeline.detector, log);
  const { restored, snapshot } = state;
  const budget = new InflightBudget(config.maxInflightBytes);
  const inflight = new InflightRequests();
  const shed = doorCounter(pipeline.metrics, METRIC_REQUESTS_SHED_TOTAL);
  const http = limits(
    createServer({ ...serverTimeouts(config) }, otlpHttpHandler({ pipeline, config, budget, inflight, shed })),
    config,
  );
  const metrics = limits(createServer({ ...serverTimeouts(config) }, metricsHandler(pipeline, config)), config);
  let grpc: GrpcReceiver | undefined;
  try {
    const httpPort = await listen(http, config.host, config.port);
    const metricsPort = await listen(metrics, config.host, config.metricsPort);
    let grpcPort: number | undefined;
    if (config.grpcPort !== false) {
      grpc = await startGrpcReceiver({ pipeline, config, budget, inflight, shed }, config.grpcPort);
      grpcPort = grpc.port;
    }
    const timer = setInterval(() => pipeline.tick(), options.tickMs ?? 1000);
    timer.unref();
    state.startSnapshots();
    let closing: Promise<void> | undefined;
    return {
      host: config.host,
      httpPort,
      grpcPort,
      metricsPort,
      config,
      detector: pipeline.detector,
      metrics: pipeline.metrics,
      inflight: budget,
      restored,
      findings: () => pipeline.recent.findings(),
      snapshot,
      close: () =>
        (closing ??= (async () => {
          clearInterval(timer);
          state.stopSnapshots();
          // Stop accepting; requests in flight (bodies still arriving included) get --grace to be answered.
          http.close();
          http.closeIdleConnections();
          const closingGrpc = grpc?.close(config.graceMs);
          await inflight.idle(config.graceMs);
          await Promise.all([closeHttp(http), closeHttp(metrics), closingGrpc]);
          await snapshot();
          await drainOutput(output);
        })()),
    };
  } catch (e) {
    await Promise.allSettled([closeHttp(http), closeHttp(metrics), grpc?.close(0)]);
    throw e;
  }
}

/**
 * Findings still waiting for stdout get a second to drain before close() resolves. A write that a
 * stalled reader never takes keeps the event loop alive (Node cannot cancel it, nor destroy stdout):
 * the state file is written before this, and the CLI must exit explicitly after close().
 */
async function drainOutput(output: NodeJS.WritableStream | null): Promise<void> {
  const out = output as (NodeJS.WritableStream & { writableLength?: number }) | null;
  if (!out || !(out.writableLength! > 0)) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 1000);
    timer.unref();
    out.once('drain', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
