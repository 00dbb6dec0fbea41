// The command as users run it: the built `resumewatch` CLI (`resumewatch gateway …`), in front of the
// real lab MCP server over loopback, with the seed loop's client knowing only the gateway's address.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { runScenario, startLabServer } from '@resumewatch/lab';
import {
  FindingKind,
  GuardAction,
  GuardProof,
  METRIC_FINDINGS_TOTAL,
  METRIC_GATEWAY_GUARD_ACTIONS_TOTAL,
} from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';

const CLI = join(import.meta.dirname, '../../daemon/dist/cli.js');
/**
 * Limits, not expectations: a CLI process starts in about 0.3 s on a quiet machine, and 5 to 6 s was seen
 * with two busy processes beside the test on 2 cores. A process or a test that ends later fails.
 */
const CHILD_LIMIT_MS = 90_000;
const SPAWNING_TEST_MS = 180_000;

function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: CHILD_LIMIT_MS,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `run`, without blocking: the usage errors' processes start side by side. */
function runAsync(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ReturnType<typeof run>> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, ...env }, encoding: 'utf8', timeout: CHILD_LIMIT_MS },
      (error, stdout, stderr) =>
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

/** A one-line error: exit 2, one line on stderr, nothing on stdout. */
function expectOneLine(r: ReturnType<typeof run>, pattern: RegExp): void {
  expect(r.status).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(pattern);
}

describe('resumewatch gateway (built CLI)', () => {
  it('--help lists every flag with its environment variable and default', { timeout: SPAWNING_TEST_MS }, () => {
    const r = run(['gateway', '--help']);
    expect(r.status).toBe(0);
    for (const flag of [
      '--upstream',
      '--host',
      '--port',
      '--metrics-port',
      '--enforce',
      '--trust-connection-reuse',
      '--max-body',
      '--max-streams',
      '--max-connections',
      '--header-timeout',
      '--body-timeout',
      '--stream-idle-timeout',
      '--upstream-timeout',
      '--upstream-ca',
      '--id-policy',
      '--state-file',
      '--snapshot-interval',
    ])
      expect(r.stdout).toContain(flag);
    expect(r.stdout).toMatch(/RESUMEWATCH_UPSTREAM/);
    expect(r.stdout).toMatch(/--sse-heartbeat V +RESUMEWATCH_GATEWAY_SSE_HEARTBEAT .*\(default: off\)/);
    expect(run(['help', 'gateway']).stdout).toBe(r.stdout);
    expect(run(['--help']).stdout).toMatch(/resumewatch gateway --upstream URL/);
  });

  it('bad input: exit 2 with one line saying what to fix', { timeout: SPAWNING_TEST_MS }, async () => {
    const upstream = ['gateway', '--upstream', 'http://127.0.0.1:1/mcp'];
    const cases: [string[], RegExp, NodeJS.ProcessEnv?][] = [
      [['gateway'], /--upstream is required/],
      [['gateway', '--upstream', 'not a url'], /--upstream: not a URL/],
      [['gateway', '--upstream', 'ftp://x/'], /http:\/\/ or https:\/\//],
      [[...upstream, '--port', 'x'], /--port: not a port/],
      [[...upstream, '--bogus'], /Unknown option '--bogus'.*--help/],
      [[...upstream, '--port', '9999', '--metrics-port', '9999'], /--port and --metrics-port are both 9999/],
      [[...upstream, '--id-policy', 'secret'], /--id-policy: one of raw, hmac, omit/],
      [
        [...upstream, '--trust-connection-reuse', '--cursor-proof-only'],
        /--trust-connection-reuse and --cursor-proof-only/,
      ],
      [[...upstream, '--upstream-ca', '/nonexistent.pem'], /--upstream-ca: cannot read \/nonexistent.pem: ENOENT/],
      [
        ['gateway'],
        /RESUMEWATCH_STREAM_IDLE_TIMEOUT: not a duration/,
        { RESUMEWATCH_UPSTREAM: 'http://127.0.0.1:1/mcp', RESUMEWATCH_STREAM_IDLE_TIMEOUT: 'soon' },
      ],
    ];
    const results = await Promise.all(cases.map(([args, , env]) => runAsync(args, env)));
    results.forEach((r, i) => expectOneLine(r, cases[i]![1]));
  });

  it('a port in use: exit 2, one line naming the port and its flag', { timeout: SPAWNING_TEST_MS }, async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    try {
      expectOneLine(
        run(['gateway', '--upstream', 'http://127.0.0.1:1/mcp', '--port', String(port), '--metrics-port', '0']),
        new RegExp(`port ${port} on 127.0.0.1 is in use \\(--port\\)`),
      );
      expectOneLine(
        run(['gateway', '--upstream', 'http://127.0.0.1:1/mcp', '--port', '0', '--metrics-port', String(port)]),
        new RegExp(`port ${port} on 127.0.0.1 is in use \\(--metrics-port\\)`),
      );
    } finally {
      busy.close();
    }
  });

  it(
    'in front of the lab server: the seed loop seen and stopped for an unmodified client; findings on stdout and /metrics; SIGTERM stops it',
    { timeout: SPAWNING_TEST_MS },
    async () => {
      const lab = await startLabServer({ retryIntervalMs: 50 });
      const child = spawn(process.execPath, [
        CLI,
        'gateway',
        '--upstream',
        lab.url,
        '--port',
        '0',
        '--metrics-port',
        '0',
        '--enforce',
        // The seed client connects directly: its next request on a connection proves receipt.
        '--trust-connection-reuse',
        '--storm-window',
        '2s',
      ]);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      // 'close', not 'exit': 'exit' may come before the last of the child's stderr has been read here, and
      // the shutdown line is checked once it exited.
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      try {
        // The whole line (a pipe may hand it over in pieces): the ports are read from it.
        await vi.waitFor(() => expect(stderr).toMatch(/metrics on \S+\/metrics\n/), {
          timeout: CHILD_LIMIT_MS,
          interval: 20,
        });
        const url = /gateway on (\S+)/.exec(stderr)![1]!;
        expect(stderr).toMatch(/\(enforcing\)/);
        const metricsPort = Number(/127\.0\.0\.1:(\d+)\/metrics/.exec(stderr)![1]);
        const summary = await runScenario('seed-loop', {
          serverUrl: url,
          controlUrl: lab.controlUrl,
          fetch: globalThis.fetch,
          maxReconnects: 10,
        });
        // The stale resume answered 405 by the gateway once the client proved it holds the result (its
        // next request on the connection that carried it; at most one unproven resume passes before): it stops.
        expect(summary.resumeStatuses.at(-1)).toBe(405);
        expect(summary.resumeStatuses.length).toBeLessThanOrEqual(2);
        expect(summary.terminalDeliveries).toBe(summary.resumeStatuses.length);
        const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        await vi.waitFor(
          async () =>
            expect(await metrics()).toMatch(
              new RegExp(
                `${METRIC_GATEWAY_GUARD_ACTIONS_TOTAL}\\{action="${GuardAction.RESUME_REFUSED}",proof="${GuardProof.NEXT_REQUEST}"\\} 1`,
              ),
            ),
          { timeout: CHILD_LIMIT_MS, interval: 100 },
        );
        expect(await metrics()).not.toMatch(
          new RegExp(`${METRIC_FINDINGS_TOTAL}\\{kind="${FindingKind.RECONNECT_STORM}"`),
        );
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
        expect(stderr).toMatch(/shutting down/);
      } finally {
        child.kill('SIGKILL');
        await lab.close();
      }
    },
  );
});
