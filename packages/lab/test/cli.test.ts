import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SCENARIO_NAMES, refusedPort } from '../src/index.js';
import type { ScenarioSummary } from '../src/index.js';
import { labServerPerFile } from './helpers/lab-per-file.js';

const run = promisify(execFile);
const cli = join(import.meta.dirname, '../dist/cli.js');
// The spawned CLI runs the built dist/ in a plain Node process, without vitest's resolve conditions.
const env = { ...process.env, NODE_OPTIONS: '' };

async function lab(args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [cli, ...args], { env, timeout: 60_000 });
  return stdout;
}

/** A run that is expected to fail: its exit code and stderr. */
async function labFails(args: string[]): Promise<{ code: number; stderr: string; stdout: string }> {
  try {
    await run(process.execPath, [cli, ...args], { env, timeout: 60_000 });
  } catch (error) {
    return error as { code: number; stderr: string; stdout: string };
  }
  throw new Error(`resumewatch-lab ${args.join(' ')} succeeded`);
}

/** One line, no stack frame. */
function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
  return lines[0]!;
}

const labServer = labServerPerFile();

describe('resumewatch-lab CLI', () => {
  it('run seed-loop --json prints one summary object', async () => {
    const stdout = await lab(['run', 'seed-loop', '--server', labServer.server.url, '--json']);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0]!) as ScenarioSummary;
    expect(summary.scenario).toBe('seed-loop');
    expect(summary.distinctTerminalStreams).toBeGreaterThanOrEqual(2);
    expect(summary.resumeStatuses.at(-1)).toBe(404);
    expect(summary).toHaveProperty('terminalDeliveries');
    expect(summary).toHaveProperty('reconnects');
    // The server the CLI talked to saw the loop.
    const resumes = labServer.server.requestLog(summary.sessionId).filter((entry) => entry.lastEventId !== undefined);
    expect(resumes).toHaveLength(summary.reconnects);
  });

  it('run without --server starts its own server; without --json prints a readable summary', async () => {
    const stdout = await lab(['run', 'cursor-evicted']);
    expect(stdout).toContain('scenario               cursor-evicted');
    expect(stdout).toContain('resume statuses        404');
  });

  it('run healthy --json without --server starts its own server, prints one summary and exits on its own', async () => {
    const lines = (await lab(['run', 'healthy', '--json'])).trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      scenario: 'healthy',
      terminalDeliveries: 1,
      reconnects: 0,
      sideEffectCount: 1,
    });
  });

  it('run --clients --duration generates load and reports totals', async () => {
    const stdout = await lab([
      'run',
      'healthy',
      '--server',
      labServer.server.url,
      '--clients',
      '2',
      '--duration',
      '1',
      '--json',
    ]);
    const report = JSON.parse(stdout) as {
      runs: number;
      failures: number;
      clients: number;
      terminalDeliveries: number;
    };
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

  it('run --help and server --help list every option with its default; run lists the registry scenarios', async () => {
    const runHelp = await lab(['run', '--help']);
    expect(runHelp).toMatch(/^usage: resumewatch-lab run <scenario> \[options\]/);
    for (const flag of [
      'server URL',
      'control URL',
      'json',
      'max-reconnects N',
      'clients N',
      'duration S',
      'progress S',
    ]) {
      expect(runHelp).toMatch(new RegExp(`^ {2}--${flag} .*\\(default: [^)]+\\)+$`, 'm'));
    }
    expect(runHelp).toMatch(/--max-reconnects N .*\(default: 20\)$/m);
    expect(runHelp).toContain(`scenarios: ${SCENARIO_NAMES.join(', ')}`);
    const serverHelp = await lab(['server', '--help']);
    expect(serverHelp).toMatch(/^usage: resumewatch-lab server \[options\]/);
    for (const [flag, value] of [
      ['port P', '0 (a free port)'],
      ['host H', '127.0.0.1'],
      ['capacity N', '1000'],
      ['ttl-ms MS', '300000'],
      ['replay-limit K', '3'],
      ['retry-ms MS', '100'],
    ]) {
      expect(serverHelp).toMatch(
        new RegExp(`^ {2}--${flag} .*\\(default: ${value!.replace(/[()]/g, '\\$&')}\\)$`, 'm'),
      );
    }
    expect(await lab(['scenarios'])).toBe(`${SCENARIO_NAMES.join('\n')}\n`);
  });

  it('usage and input errors: exit 2, one line naming the flag, URL or port', async () => {
    const port = await refusedPort();
    const cases: Array<[string[], string]> = [
      [['run', 'seed-loop', '--nope'], 'resumewatch-lab: run: unknown flag --nope'],
      [['server', '--port'], 'resumewatch-lab: server: --port needs a value'],
      [['server', '--port', '70000'], 'resumewatch-lab: --port must be a port number 0-65535, got "70000"'],
      [['server', '--port', 'abc'], 'resumewatch-lab: --port must be an integer of at least 0, got "abc"'],
      [
        ['run', 'seed-loop', '--server', 'not a url'],
        'resumewatch-lab: --server is not a URL: "not a url" (e.g. http://127.0.0.1:8080/mcp)',
      ],
      [['run', 'seed-loop', '--clients', '0'], 'resumewatch-lab: --clients must be an integer of at least 1, got "0"'],
      [['run'], `resumewatch-lab: run: which scenario? one of ${SCENARIO_NAMES.join(', ')}`],
      [['frobnicate'], 'resumewatch-lab: unknown command "frobnicate"; one of server, run, demo, scenarios'],
      [
        ['run', 'seed-loop', '--server', `http://127.0.0.1:${port}/mcp`],
        `resumewatch-lab: run: cannot reach the lab server at http://127.0.0.1:${port}/mcp (ECONNREFUSED); is \`resumewatch-lab server\` running there? (--server, --control)`,
      ],
    ];
    for (const [args, line] of cases) {
      const failure = await labFails(args);
      expect(failure.code, args.join(' ')).toBe(2);
      expect(oneLine(failure.stderr)).toBe(line);
    }
  });

  it('a control endpoint that cannot be reached, a URL that is not MCP: exit 2, one line naming the URL', async () => {
    const control = `http://127.0.0.1:${await refusedPort()}/control`;
    // server-restart calls the control endpoint from inside its stream; cursor-evicted after a drop.
    for (const scenario of ['server-restart', 'cursor-evicted']) {
      const failure = await labFails(['run', scenario, '--server', labServer.server.url, '--control', control]);
      expect(failure.code, scenario).toBe(2);
      expect(oneLine(failure.stderr)).toBe(
        `resumewatch-lab: run: cannot reach the lab's control endpoint at ${control} (ECONNREFUSED); it answers loopback clients only (--control)`,
      );
    }
    const wrong = labServer.server.url.replace(/\/mcp$/, '/nope');
    const failure = await labFails(['run', 'seed-loop', '--server', wrong]);
    expect(failure.code).toBe(2);
    expect(oneLine(failure.stderr)).toMatch(
      new RegExp(
        `^resumewatch-lab: run: ${wrong.replace(/[.]/g, '\\.')} is not a lab MCP endpoint: initialize answered 404 .* \\(--server\\)$`,
      ),
    );
  });

  it('server on a port in use: exit 2, one line naming the port', async () => {
    const failure = await labFails(['server', '--port', String(labServer.server.port)]);
    expect(failure.code).toBe(2);
    expect(oneLine(failure.stderr)).toBe(
      `resumewatch-lab: server: port ${labServer.server.port} on 127.0.0.1 is in use (--port)`,
    );
  });

  it('run prints the timeline of the request that went wrong, and none for a healthy run', async () => {
    const stdout = await lab(['run', 'seed-loop', '--server', labServer.server.url]);
    expect(stdout).toMatch(/^timeline of request 1 \(tools\/call stream_progress\) in session \S+$/m);
    expect(stdout).toMatch(/^ +\d+ ms {4}terminal: the result \(event \S+\)$/m);
    expect(stdout.match(/^ +\d+ ms {2}reconnect \d with Last-Event-ID (\S+) \(after the terminal\)/gm)).toHaveLength(4);
    expect(stdout.match(/^ +\d+ ms {4}replay: the result again/gm)).toHaveLength(3);
    expect(stdout).toContain(
      '  end: the terminal response arrived 4 time(s) on 4 HTTP response(s) (3 duplicate(s)); 4 resume attempt(s) after it; the last resume was answered 404.',
    );
    expect(await lab(['run', 'healthy', '--server', labServer.server.url])).not.toContain('timeline');
  });

  it('a load run prints progress lines on stderr while it runs', async () => {
    const { stdout, stderr } = await run(
      process.execPath,
      [
        cli,
        'run',
        'healthy',
        '--server',
        labServer.server.url,
        '--clients',
        '1',
        '--duration',
        '3',
        '--progress',
        '1',
        '--json',
      ],
      {
        env,
        timeout: 60_000,
      },
    );
    expect(JSON.parse(stdout)).toMatchObject({ scenario: 'healthy', clients: 1, failures: 0 });
    const lines = stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(`resumewatch-lab: healthy with 1 client(s) for 3 s against ${labServer.server.url}`);
    const progress = lines.slice(1);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (const line of progress)
      expect(line).toMatch(
        /^resumewatch-lab: [0-3]\/3 s {2}\d+ run\(s\), 0 failure\(s\), \d+ terminal deliveries, 0 reconnect\(s\)$/,
      );
  });
});
