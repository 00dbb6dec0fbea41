import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingKind, FindingRecord } from '@resumewatch/semconv';
import { beforeAll, describe, expect, it } from 'vitest';
import { analyzeFiles } from '../src/index.js';
import { type Finding } from '@resumewatch/detector';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { resume, seedScenario, terminal } from '../../detector/test/helpers/spans.js';

const CLI = join(import.meta.dirname, '../dist/cli.js');
const dir = mkdtempSync(join(tmpdir(), 'resumewatch-analyze-'));
const SEED_KINDS = [
  FindingKind.DUPLICATE_TERMINAL,
  FindingKind.RECONNECT_STORM,
  FindingKind.RESUME_AFTER_TERMINAL,
  FindingKind.SIGNATURE,
].sort();
const files = {
  seed: join(dir, 'seed.jsonl'),
  pretty: join(dir, 'pretty.json'),
  clean: join(dir, 'clean.jsonl'),
  broken: join(dir, 'broken.jsonl'),
};

function cli(args: string[], input?: string) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', input });
}

beforeAll(() => {
  const seed = seedScenario({ session: 'file-1', request: 3 }, 3);
  // Two export requests, split mid-scenario, as a file exporter writes them.
  writeFileSync(
    files.seed,
    [otlpJson(seed.slice(0, 5)), otlpJson(seed.slice(5))].map((d) => JSON.stringify(d)).join('\n') + '\n',
  );
  writeFileSync(files.pretty, JSON.stringify(otlpJson(seed), null, 2));
  const r = { session: 'ok', request: 1 };
  writeFileSync(
    files.clean,
    JSON.stringify(otlpJson([resume(r, 1000, 'B', 'A', { observed: false, replayed: 2 }), terminal(r, 1100, 'B')])) +
      '\n',
  );
  writeFileSync(files.broken, JSON.stringify(otlpJson([terminal(r, 1000, 'A')])) + '\n{"resourceSpans": [\n');
});

describe('analyze', () => {
  it('finds the seed pattern in JSON lines and in one pretty-printed document', async () => {
    for (const file of [files.seed, files.pretty]) {
      const result = await analyzeFiles([file]);
      expect(
        result.findings
          .filter((f) => f.record === undefined)
          .map((f) => f.kind)
          .sort(),
      ).toEqual(SEED_KINDS);
    }
  });

  it('CLI: exit 1 and a readable summary when there are findings', () => {
    const out = cli(['analyze', files.seed]);
    expect(out.status).toBe(1);
    // Grouped by request; the request's counts stated once (signature's whole-storm figures), not per finding.
    expect(out.stdout).toMatch(
      /^service=client session=file-1 request=3 trace=[0-9a-f]{32}: 3 duplicate terminal deliveries, 4 resume\/reattach attempts$/m,
    );
    expect(out.stdout).toMatch(/^ {2}signature +\S+$/m);
    expect(out.stdout).toMatch(/^ {2}reconnect_storm:storm_ended +\S+ .*ended_by=evicted/m);
    expect(out.stdout).toMatch(/Records about them: reconnect_storm:storm_ended 1\./);
    expect(out.stdout).toMatch(/^ {2}duplicate_terminal +\S+$/m);
    expect(out.stdout).not.toMatch(/duplicates=/);
    expect(out.stdout).toContain(
      '12 span(s) read: 12 used, 0 duplicate(s) (redelivered span ids, counted once), 0 ignored, 0 malformed.',
    );
    expect(out.stdout).toMatch(/4 finding\(s\) on 1 request\(s\): /);
  });

  it('CLI: --json writes one finding a line; - reads stdin', () => {
    const out = cli(
      ['analyze', '--json', '-'],
      JSON.stringify(otlpJson(seedScenario({ session: 'stdin-1', request: 1 }, 3))),
    );
    expect(out.status).toBe(1);
    const findings = out.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Finding);
    expect(
      findings
        .filter((f) => f.record === undefined)
        .map((f) => f.kind)
        .sort(),
    ).toEqual(SEED_KINDS);
    expect(findings.filter((f) => f.record !== undefined).map((f) => [f.kind, f.record])).toEqual([
      [FindingKind.RECONNECT_STORM, FindingRecord.STORM_ENDED],
    ]);
    expect(findings.every((f) => f.session_id === 'stdin-1')).toBe(true);
  });

  it('CLI: exit 0 without findings', () => {
    const out = cli(['analyze', files.clean]);
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(/No finding\./);
    expect(cli(['analyze', '--json', files.clean]).stdout).toBe('');
  });

  it('CLI: exit 2 on bad input, naming file and line, and on bad usage', () => {
    const broken = cli(['analyze', files.broken]);
    expect(broken.status).toBe(2);
    expect(broken.stderr).toContain(`${files.broken}:2: malformed JSON`);
    const missing = cli(['analyze', join(dir, 'nope.jsonl')]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/nope\.jsonl: cannot read/);
    expect(cli(['analyze']).status).toBe(2);
    expect(cli(['frobnicate']).status).toBe(2);
    expect(cli(['analyze', '--storm-window', 'soon', files.clean]).stderr).toMatch(/--storm-window: not a duration/);
    const help = cli(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/resumewatch serve/);
    expect(help.stdout).toMatch(/RESUMEWATCH_TOKEN/);
  });

  it('CLI: shares the configuration, e.g. the storm threshold', () => {
    const out = cli(['analyze', '--json', '--storm-threshold', '10', files.seed]);
    const kinds = out.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as Finding).kind)
      .sort();
    expect(kinds).toEqual([FindingKind.DUPLICATE_TERMINAL, FindingKind.RESUME_AFTER_TERMINAL].sort());
  });

  it('CLI: --html takes the evidence caps; serve-only options are still refused', () => {
    /** The data of the report `analyze --html` wrote with `caps`: its limits and the timelines it holds. */
    const report = (caps: string[]) => {
      const out = join(dir, `report-${caps.join('-') || 'default'}.html`);
      const r = cli(['analyze', '--json', '--html', out, ...caps, files.seed]);
      expect(r.status, r.stderr).toBe(1);
      const json = /<script type="application\/json" id="page-data">(.*?)<\/script>/s.exec(
        readFileSync(out, 'utf8'),
      )![1]!;
      const data = JSON.parse(json) as {
        header: { limits: Record<string, number> };
        timelines: Record<string, { events: unknown[] }>;
      };
      const timelines = Object.values(data.timelines);
      expect(timelines).toHaveLength(1);
      return { limits: data.header.limits, events: timelines[0]!.events.length };
    };
    const full = report([]);
    // A cap of a few bytes keeps at most the newest event: the caps reached the report.
    const tiny = report(['--evidence-bytes', '1', '--evidence-window-bytes', '2']);
    expect(tiny.limits).toMatchObject({ evidenceBytes: 1, evidenceWindowBytes: 2 });
    expect(full.events).toBeGreaterThan(1);
    expect(tiny.events).toBeLessThanOrEqual(1);
    expect(cli(['analyze', '--help']).stdout).toMatch(/--evidence-bytes[\s\S]*--evidence-window-bytes/);
    const serveOnly = cli(['analyze', '--metrics-port', '1', files.seed]);
    expect(serveOnly.status).toBe(2);
    expect(serveOnly.stderr).toMatch(/--metrics-port is a serve option; analyze takes .*--evidence-bytes/);
  });

  it("CLI: the --html report's policy is a meta tag (a file has no headers): its script and style by hash", () => {
    const out = join(dir, 'report-policy.html');
    expect(cli(['analyze', '--html', out, files.seed]).status).toBe(1);
    const html = readFileSync(out, 'utf8');
    const hash = (text: string | undefined) =>
      `'sha256-${createHash('sha256').update(text!, 'utf8').digest('base64')}'`;
    const policy = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(html)![1]!;
    expect(policy.split('; ').sort()).toEqual(
      [
        "default-src 'none'",
        `script-src ${hash(/<script>([\s\S]*?)<\/script>/.exec(html)?.[1])}`,
        `style-src ${hash(/<style>([\s\S]*?)<\/style>/.exec(html)?.[1])}`,
        "base-uri 'none'",
        "form-action 'none'",
      ].sort(),
    );
  });
});
