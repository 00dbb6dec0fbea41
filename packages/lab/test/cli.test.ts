import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLabServer } from '../src/index.js';
import type { LabServer, ScenarioSummary } from '../src/index.js';

const run = promisify(execFile);
const cli = join(import.meta.dirname, '../dist/cli.js');
// The spawned CLI runs the built dist/ in a plain Node process, without vitest's resolve conditions.
const env = { ...process.env, NODE_OPTIONS: '' };

async function lab(args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [cli, ...args], { env, timeout: 60_000 });
  return stdout;
}

let server: LabServer;

beforeAll(async () => {
  server = await startLabServer();
});

afterAll(async () => {
  await server.close();
});

describe('resumewatch-lab CLI', () => {
  it('run seed-loop --json prints one summary object', async () => {
    const stdout = await lab(['run', 'seed-loop', '--server', server.url, '--json']);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0]!) as ScenarioSummary;
    expect(summary.scenario).toBe('seed-loop');
    expect(summary.distinctTerminalStreams).toBeGreaterThanOrEqual(2);
    expect(summary.resumeStatuses.at(-1)).toBe(404);
    expect(summary).toHaveProperty('terminalDeliveries');
    expect(summary).toHaveProperty('reconnects');
    // The server the CLI talked to saw the loop.
    expect(server.requestLog(summary.sessionId).filter((entry) => entry.lastEventId !== undefined)).toHaveLength(summary.reconnects);
  });

  it('run without --server starts its own server; without --json prints a readable summary', async () => {
    const stdout = await lab(['run', 'cursor-evicted']);
    expect(stdout).toContain('scenario               cursor-evicted');
    expect(stdout).toContain('resume statuses        404');
  });

  it('run healthy --json without --server starts its own server, prints one summary and exits on its own', async () => {
    const lines = (await lab(['run', 'healthy', '--json'])).trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ scenario: 'healthy', terminalDeliveries: 1, reconnects: 0, sideEffectCount: 1 });
  });

  it('run --clients --duration generates load and reports totals', async () => {
    const stdout = await lab(['run', 'healthy', '--server', server.url, '--clients', '2', '--duration', '1', '--json']);
    const report = JSON.parse(stdout) as { runs: number; failures: number; clients: number; terminalDeliveries: number };
    expect(report.clients).toBe(2);
    expect(report.runs).toBeGreaterThanOrEqual(2);
    expect(report.failures).toBe(0);
    expect(report.terminalDeliveries).toBe(report.runs);
  });

  it('demo runs seed-loop against its own server and exits 0', async () => {
    const stdout = await lab(['demo']);
    expect(stdout).toContain('scenario               seed-loop');
    expect(stdout).toMatch(/terminal deliveries {4}\d+ on \d+ distinct stream/);
  });

  it('rejects an unknown scenario with exit code 2', async () => {
    await expect(lab(['run', 'no-such-scenario'])).rejects.toMatchObject({ code: 2 });
  });
});
