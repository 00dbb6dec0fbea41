import { spawn, spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingKind, SPAN_REQUEST_TERMINAL } from '@resumewatch/semconv';
import { beforeAll, describe, expect, it } from 'vitest';
import { OPTION_SPECS } from '../src/index.js';
import { type Finding } from '@resumewatch/detector';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { seedScenario } from '../../detector/test/helpers/spans.js';

// The built CLI, as a user runs it: exit codes and one-line errors on stderr (issue 11, problems 4 and 5).
const CLI = join(import.meta.dirname, '../dist/cli.js');
const dir = mkdtempSync(join(tmpdir(), 'resumewatch-cli-input-'));
const SEED_KINDS = [
  FindingKind.DUPLICATE_TERMINAL,
  FindingKind.RECONNECT_STORM,
  FindingKind.RESUME_AFTER_TERMINAL,
  FindingKind.SIGNATURE,
].sort();
const files = {
  foo: join(dir, 'foo.json'),
  snake: join(dir, 'snake.jsonl'),
  camel: join(dir, 'camel.jsonl'),
  metricsOnly: join(dir, 'metrics.jsonl'),
  mixed: join(dir, 'mixed.jsonl'),
};

function cli(args: string[], input?: string) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', input, timeout: 20_000 });
}

/** One line on stderr, nothing that looks like a stack frame. */
function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
  return lines[0]!;
}

/** The proto field names: what the protobuf JSON mapping also allows. */
function snakeCase(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeCase);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snakeCase(v)]),
  );
}

beforeAll(() => {
  const seed = seedScenario({ session: 'snake-1', request: 7 }, 3);
  writeFileSync(files.foo, '{"foo":1}\n');
  writeFileSync(files.snake, JSON.stringify(snakeCase(otlpJson(seed))) + '\n');
  writeFileSync(files.camel, JSON.stringify(otlpJson(seed)) + '\n');
  writeFileSync(files.metricsOnly, JSON.stringify({ resourceMetrics: [{ scopeMetrics: [] }] }) + '\n');
  // A redelivered export (the same request twice), a span that is not MCP's, a contract span without a
  // session, a malformed span, a metrics line.
  const other = { ...seed[0]!, spanId: 'ffffffffffffff01', name: 'GET /health', attributes: {} };
  const sessionless = { ...seed[0]!, spanId: 'ffffffffffffff02', name: SPAN_REQUEST_TERMINAL, attributes: {} };
  const malformed = { ...seed[0]!, traceId: 'not-hex', spanId: 'ffffffffffffff03' };
  writeFileSync(
    files.mixed,
    [otlpJson(seed), otlpJson(seed), otlpJson([other, sessionless, malformed]), { resourceMetrics: [] }]
      .map((d) => JSON.stringify(d))
      .join('\n') + '\n',
  );
});

describe('resumewatch analyze: wrong input is not an all-clear', () => {
  it('{"foo":1} exits 2 with one line naming the file', () => {
    const out = cli(['analyze', files.foo]);
    expect(out.status).toBe(2);
    expect(out.stdout).toBe('');
    expect(oneLine(out.stderr)).toBe(
      `resumewatch: ${files.foo}: no OTLP resource spans (expected OTLP/JSON export requests: {"resourceSpans": [...]}, one a line or one document)`,
    );
  });

  it('a file of metrics only exits 2; a JSON array or number is not an export request', () => {
    expect(cli(['analyze', files.metricsOnly]).status).toBe(2);
    const array = cli(['analyze', '-'], '[1,2]');
    expect(array.status).toBe(2);
    expect(oneLine(array.stderr)).toBe(
      'resumewatch: <stdin>:1: not an OTLP/JSON export request (expected a JSON object with resourceSpans)',
    );
  });

  it('snake_case field names (the proto names) give the same findings as lowerCamelCase', () => {
    const snake = cli(['analyze', '--json', files.snake]);
    const camel = cli(['analyze', '--json', files.camel]);
    expect(snake.status).toBe(1);
    expect(camel.status).toBe(1);
    const kinds = (text: string) =>
      text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Finding)
        .filter((f) => f.record === undefined)
        .map((f) => f.kind)
        .sort();
    expect(kinds(snake.stdout)).toEqual(SEED_KINDS);
    expect(snake.stdout).toBe(camel.stdout);
    expect(cli(['analyze', files.snake]).stdout).toContain('12 span(s) read: 12 used, 0 duplicate(s)');
  });

  it('says how many spans were read, redelivered and ignored, and why', () => {
    const out = cli(['analyze', files.mixed]);
    expect(out.status).toBe(1);
    expect(out.stdout).toContain(
      '27 span(s) read: 12 used, 12 duplicate(s) (redelivered span ids, counted once), 2 ignored (1 not an MCP span, 1 no mcp.session.id), 1 malformed.',
    );
    expect(out.stdout).toContain('1 document(s) without resource spans skipped.');
    // Redelivery changes no count: the request still has 3 duplicate terminal deliveries.
    expect(out.stdout).toMatch(
      /request=7 trace=[0-9a-f]{32}: 3 duplicate terminal deliveries, 4 resume\/reattach attempts$/m,
    );
  });
});

describe('resumewatch: help and usage errors', () => {
  it('serve --help and analyze --help list their options with defaults, from the option table', () => {
    const serve = cli(['serve', '--help']);
    expect(serve.status).toBe(0);
    expect(serve.stdout).toMatch(/^Usage: resumewatch serve/);
    for (const spec of OPTION_SPECS)
      expect(serve.stdout).toMatch(new RegExp(`--${spec.flag} +${spec.env} .*\\(default: [^)]+\\)$`, 'm'));
    expect(serve.stdout).toMatch(/--port +RESUMEWATCH_PORT .*\(default: 4318\)$/m);
    expect(serve.stdout).toMatch(/--storm-window +RESUMEWATCH_STORM_WINDOW .*\(default: 1m\)$/m);
    expect(serve.stdout).toMatch(/--token +RESUMEWATCH_TOKEN .*\(default: none\)$/m);
    const analyze = cli(['analyze', '--help']);
    expect(analyze.status).toBe(0);
    expect(analyze.stdout).toMatch(/^Usage: resumewatch analyze/);
    expect(analyze.stdout).toMatch(/--storm-threshold +RESUMEWATCH_STORM_THRESHOLD .*\(default: 3\)$/m);
    expect(analyze.stdout).toContain('--json');
    expect(analyze.stdout).not.toContain('--metrics-port');
  });

  it('analyze without a file, a bad flag, an unknown command: exit 2, one line each', () => {
    const cases: Array<[string[], string]> = [
      [['analyze'], 'resumewatch: analyze needs a FILE (an OTLP/JSON export, or - for stdin)'],
      [['analyze', '--nope', files.camel], 'resumewatch: unknown flag --nope (resumewatch --help lists the options)'],
      [['serve', '--port'], 'resumewatch: --port needs a value (resumewatch --help lists the options)'],
      [['serve', '--port', '70000'], 'resumewatch: --port: not a port: "70000"'],
      [['frobnicate'], 'resumewatch: unknown command "frobnicate"; one of serve, analyze'],
      [
        ['analyze', join(dir, 'nope.jsonl')],
        `resumewatch: ${join(dir, 'nope.jsonl')}: cannot read: ENOENT: no such file or directory, open '${join(dir, 'nope.jsonl')}'`,
      ],
    ];
    for (const [args, line] of cases) {
      const out = cli(args);
      expect(out.status, args.join(' ')).toBe(2);
      expect(oneLine(out.stderr)).toBe(line);
    }
  });
});

/** The CLI spawned without blocking the test's event loop, so that a listener of the test can hold a port. */
function cliAsync(args: string[]): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args]);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('exit', (status) => {
      clearTimeout(timer);
      resolve({ status, stderr });
    });
  });
}

describe('resumewatch serve: ports', () => {
  it('--port equal to --grpc-port: exit 2, one line naming both flags', () => {
    const out = cli(['serve', '--port', '45123', '--grpc-port', '45123', '--metrics-port', '0']);
    expect(out.status).toBe(2);
    expect(oneLine(out.stderr)).toBe(
      'resumewatch: --port and --grpc-port are both 45123; each listener needs its own port',
    );
  });

  it('a port in use: exit 2, one line naming the port and its flag, for each listener', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const flags = ['--port', '--grpc-port', '--metrics-port'];
      for (const flag of flags) {
        const args = ['serve', ...flags.flatMap((f) => [f, f === flag ? String(port) : '0'])];
        const out = await cliAsync(args);
        expect(out.status, flag).toBe(2);
        expect(oneLine(out.stderr)).toBe(
          `resumewatch: port ${port} on 127.0.0.1 is in use (${flag}); stop what listens there or choose another port`,
        );
      }
    } finally {
      holder.close();
    }
  });
});
