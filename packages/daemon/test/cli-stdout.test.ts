import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { METRIC_FINDINGS_DROPPED_TOTAL, METRIC_FINDINGS_TOTAL } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { seedScenario } from '../../detector/test/helpers/spans.js';
import { waitFor } from '../../detector/test/helpers/wait.js';

const CLI = join(import.meta.dirname, '../dist/cli.js');

describe('resumewatch serve with a stdout nobody reads (built CLI)', () => {
  it(
    '6. drops and counts findings past --stdout-buffer, keeps answering, and writes its state on SIGTERM',
    { timeout: 30_000 },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'resumewatch-stdout-'));
      const stateFile = join(dir, 'state');
      // stdout is a pipe this test never reads: 64 KiB fill it, then 256 KiB may wait in the process.
      const child = spawn(
        process.execPath,
        [
          CLI,
          'serve',
          '--port',
          '0',
          '--grpc-port',
          'off',
          '--metrics-port',
          '0',
          '--stdout-buffer',
          '262144',
          '--grace',
          '1s',
          '--state-file',
          stateFile,
        ],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      await waitFor(() => /metrics on/.test(stderr), 'the CLI to listen', 10_000);
      const httpPort = Number(/127\.0\.0\.1:(\d+)\/v1\/traces/.exec(stderr)![1]);
      const metricsPort = Number(/127\.0\.0\.1:(\d+)\/metrics/.exec(stderr)![1]);
      const spans = Array.from({ length: 500 }, (_, i) =>
        seedScenario({ session: `stdout-${i}`, request: i }, 3, Date.now()),
      ).flat();
      const res = await fetch(`http://127.0.0.1:${httpPort}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(otlpJson(spans)),
      });
      expect(res.status).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const total = [...metrics.matchAll(new RegExp(`^${METRIC_FINDINGS_TOTAL}\\{[^}]*\\} (\\d+)$`, 'gm'))].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
      const dropped = Number(new RegExp(`^${METRIC_FINDINGS_DROPPED_TOTAL} (\\d+)$`, 'm').exec(metrics)![1]);
      expect(total).toBe(2000);
      // About 300 KiB of the ~1 MB of findings fit in the pipe and the buffer; the rest are dropped.
      expect(dropped).toBeGreaterThan(1000);
      expect(dropped).toBeLessThan(2000);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status).toBe(200);
      child.kill('SIGTERM');
      // The state is on disk within the grace period and the process exits by itself, though its stdout
      // reader never read again (a write a stalled pipe never takes would keep Node alive).
      const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 10_000))]);
      expect(code).toBe(0);
      expect(
        await stat(stateFile).then(
          () => true,
          () => false,
        ),
      ).toBe(true);
      await rm(dir, { recursive: true, force: true });
    },
  );
});
