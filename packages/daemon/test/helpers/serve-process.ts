import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Finding } from '@resumewatch/detector';
import { OPTION_SPECS, type ResumewatchConfig } from '../../src/index.js';
import type { OtlpBatch } from './otlp-recording.js';
import { waitFor } from '../../../detector/test/helpers/wait.js';

/** The built `resumewatch` command whose `serve` the tests spawn: the one place that knows where it lives. */
function serveCli(): string {
  return join(import.meta.dirname, '../../dist/cli.js');
}

/** The command-line flags that set `options`, spelled by the option table (durations in ms). */
export function serveFlags(options: Partial<ResumewatchConfig>): string[] {
  return Object.entries(options).flatMap(([key, value]) => {
    const spec = OPTION_SPECS.find((s) => s.key === key);
    if (!spec) throw new Error(`${key} is not a serve option`);
    return [`--${spec.flag}`, spec.kind === 'duration' ? `${String(value)}ms` : String(value)];
  });
}

/** One `resumewatch serve` process on free ports (OTLP/HTTP and metrics, no gRPC), no token. */
export interface ServeProcess {
  readonly pid: number;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** Posts one OTLP export request as it was recorded; throws unless it is acknowledged (200). */
  post(batch: OtlpBatch): Promise<void>;
  /** GET /findings: the findings and records so far, oldest first. */
  findings(): Promise<Finding[]>;
  /** Sends `signal` and resolves when the process is gone: its exit code, or the signal that ended it. */
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<number | NodeJS.Signals>;
}

/** Posts one OTLP export request as it was recorded to serve's OTLP/HTTP port; throws unless it is acknowledged. */
export async function postBatch(httpPort: number, batch: OtlpBatch): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${httpPort}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': batch.contentType },
    body: batch.body,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`serve answered ${res.status}: ${text}`);
}

/** Serve processes still running: killed if the test process exits first (a timeout, a crash). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function startServe(flags: string[]): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    [serveCli(), 'serve', '--port', '0', '--grpc-port', 'off', '--metrics-port', '0', ...flags],
    // Findings are read from /findings; stdout is not needed.
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let gone: number | NodeJS.Signals | undefined;
  running.add(child);
  const exited = new Promise<number | NodeJS.Signals>((resolve) =>
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve((gone = code ?? signal ?? -1));
    }),
  );
  try {
    await waitFor(() => gone !== undefined || /metrics on/.test(stderr), 'serve to listen', 15_000);
    if (gone !== undefined) throw new Error(`serve exited (${gone}) before listening: ${stderr}`);
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  const httpPort = Number(/127\.0\.0\.1:(\d+)\/v1\/traces/.exec(stderr)![1]);
  const metricsPort = Number(/127\.0\.0\.1:(\d+)\/metrics/.exec(stderr)![1]);
  return {
    pid: child.pid!,
    stderr: () => stderr,
    post: (batch) => postBatch(httpPort, batch),
    async findings() {
      const res = await fetch(`http://127.0.0.1:${metricsPort}/findings`);
      if (res.status !== 200) throw new Error(`GET /findings answered ${res.status}`);
      return (await res.json()) as Finding[];
    },
    stop(signal) {
      if (gone === undefined) child.kill(signal);
      return exited;
    },
  };
}
