import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { FindingKind } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import type { Finding } from '@resumewatch/detector';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { seedScenario } from '../../detector/test/helpers/spans.js';
import { waitFor } from '../../detector/test/helpers/wait.js';

const CLI = join(import.meta.dirname, '../dist/cli.js');

describe('resumewatch serve (built CLI)', () => {
  it('receives spans, prints findings as JSON lines and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--grpc-port', '0', '--metrics-port', '0'], {
      env: { ...process.env, RESUMEWATCH_TOKEN: 'tok' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await waitFor(() => /metrics on/.test(stderr), 'the CLI to listen', 10_000);
    const httpPort = Number(/127\.0\.0\.1:(\d+)\/v1\/traces/.exec(stderr)![1]);
    const metricsPort = Number(/127\.0\.0\.1:(\d+)\/metrics/.exec(stderr)![1]);
    const body = JSON.stringify(otlpJson(seedScenario({ session: 'cli-1', request: 1 }, 3), 'svc-cli'));
    const denied = await fetch(`http://127.0.0.1:${httpPort}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(denied.status).toBe(401);
    const res = await fetch(`http://127.0.0.1:${httpPort}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer tok' },
      body,
    });
    expect(res.status).toBe(200);
    await waitFor(() => stdout.trim().split('\n').length >= 5, 'five findings lines', 10_000);
    const findings = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Finding);
    expect(
      findings
        .filter((f) => f.record === undefined)
        .map((f) => f.kind)
        .sort(),
    ).toEqual(
      [
        FindingKind.DUPLICATE_TERMINAL,
        FindingKind.RECONNECT_STORM,
        FindingKind.RESUME_AFTER_TERMINAL,
        FindingKind.SIGNATURE,
      ].sort(),
    );
    const metrics = await (
      await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { headers: { authorization: 'Bearer tok' } })
    ).text();
    expect(metrics).toMatch(/resumewatch_findings_total\{kind="signature",service="svc-cli"\} 1/);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/shutting down/);
  });
});
