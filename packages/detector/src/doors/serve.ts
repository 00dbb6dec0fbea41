import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server as GrpcServer } from '@grpc/grpc-js';
import { DEFAULT_CONFIG, type ResumewatchConfig } from '../config.js';
import type { Detector } from '../core/detector.js';
import type { Finding } from '../core/types.js';
import type { DetectorMetrics } from '../metrics.js';
import { startGrpcReceiver } from './grpc-receiver.js';
import { otlpHttpHandler } from './http-receiver.js';
import { metricsHandler } from './metrics-server.js';
import { Pipeline } from './pipeline.js';

export interface ServeOptions extends Partial<ResumewatchConfig> {
  /** Called for every finding, after it is counted and kept for /findings. */
  onFinding?: (f: Finding) => void;
  /** Where findings are written as JSON lines; null for nowhere. Defaults to process.stdout. */
  output?: NodeJS.WritableStream | null;
  /** Unix ms; drives storm windows and retention. Defaults to Date.now. */
  clock?: () => number;
  /** How often the clock is applied to the detector. Default 1000 ms. */
  tickMs?: number;
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
  /** Recent findings, oldest first (the same as GET /findings). */
  findings(): Finding[];
  close(): Promise<void>;
}

/** Starts the OTLP receivers and the metrics endpoint; ports may be 0 to pick free ones. */
export async function startServer(options: ServeOptions = {}): Promise<RunningServer> {
  const config: ResumewatchConfig = { ...DEFAULT_CONFIG };
  for (const key of Object.keys(DEFAULT_CONFIG) as (keyof ResumewatchConfig)[]) {
    if (options[key] !== undefined) (config as unknown as Record<string, unknown>)[key] = options[key];
  }
  const output = options.output === undefined ? process.stdout : options.output;
  // Findings of one request body are written together, in one write, once its ingest has returned.
  let pending = '';
  const flush = (): void => {
    const text = pending;
    pending = '';
    output?.write(text);
  };
  const pipeline = new Pipeline({
    config,
    ...(options.clock ? { clock: options.clock } : {}),
    onFinding: (f) => {
      if (output) {
        if (pending === '') queueMicrotask(flush);
        pending += JSON.stringify(f) + '\n';
      }
      options.onFinding?.(f);
    },
  });
  const http = createServer(otlpHttpHandler(pipeline, config));
  const metrics = createServer(metricsHandler(pipeline, config));
  let grpc: GrpcServer | undefined;
  try {
    const httpPort = await listen(http, config.host, config.port);
    const metricsPort = await listen(metrics, config.host, config.metricsPort);
    let grpcPort: number | undefined;
    if (config.grpcPort !== false) {
      const g = await startGrpcReceiver(pipeline, config, config.grpcPort);
      grpc = g.server;
      grpcPort = g.port;
    }
    const timer = setInterval(() => pipeline.tick(), options.tickMs ?? 1000);
    timer.unref();
    let closing: Promise<void> | undefined;
    return {
      host: config.host,
      httpPort,
      grpcPort,
      metricsPort,
      config,
      detector: pipeline.detector,
      metrics: pipeline.metrics,
      findings: () => pipeline.recent.toArray(),
      close: () =>
        (closing ??= (async () => {
          clearInterval(timer);
          await Promise.all([closeHttp(http), closeHttp(metrics), grpc ? closeGrpc(grpc) : undefined]);
        })()),
    };
  } catch (e) {
    await Promise.allSettled([closeHttp(http), closeHttp(metrics), grpc ? closeGrpc(grpc) : undefined]);
    throw e;
  }
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeHttp(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 2000).unref();
  });
}

function closeGrpc(server: GrpcServer): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, 2000);
    force.unref();
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}
