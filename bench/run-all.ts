/**
 * `pnpm bench`: runs every benchmark one after the other (never two at once: they would measure each
 * other) and writes docs/benchmarks.md with each figure, its reference measured in the same run, the
 * machine, and how to rerun one. `pnpm bench guard detector-core` runs a subset and only prints: the
 * file holds the figures of one whole run, never a mix of runs.
 *
 * Only figures printed by this run reach the file: a benchmark that fails shows as failed, with its
 * last output lines, not with older numbers.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { BENCHES, NODE_FLAGS, ROOT, rerunCommand, type Bench } from './benches.js';
import { parseFigures, type Figure } from './figure.js';

interface Result {
  bench: Bench;
  code: number | null;
  output: string;
  figures: Figure[];
  seconds: number;
  loadBefore: number[];
}

function run(b: Bench): Promise<Result> {
  const loadBefore = loadavg();
  const start = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...NODE_FLAGS, b.script, ...b.args], {
      cwd: join(ROOT, b.dir),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const take = (d: Buffer) => {
      output += d.toString();
      process.stdout.write(d);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) =>
      resolve({
        bench: b,
        code,
        output,
        figures: parseFigures(output),
        seconds: (Date.now() - start) / 1000,
        loadBefore,
      }),
    );
  });
}

const fmt = (n: number): string => {
  const a = Math.abs(n);
  if (a >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  if (a >= 1e4) return `${(n / 1e3).toFixed(0)} k`;
  if (a >= 100) return n.toFixed(0);
  if (a >= 10) return n.toFixed(1);
  return n.toFixed(3);
};
const withRange = (v: number, unit: string, r?: [number, number]) =>
  `${fmt(v)} ${unit}${r ? ` (${fmt(r[0])}–${fmt(r[1])})` : ''}`;

/** `rerun`: with it, each row says the command that reruns its figure (the table that gathers every benchmark's). */
function table(figures: Figure[], rerun?: (f: Figure) => string): string {
  const rows = [
    `| figure | measured | reference, same run | ratio | target | note |${rerun ? ' rerun |' : ''}`,
    `| --- | --- | --- | --- | --- | --- |${rerun ? ' --- |' : ''}`,
  ];
  for (const f of figures) {
    const ref = f.reference
      ? `${f.reference.name}: ${withRange(f.reference.value, f.reference.unit, f.reference.range)}`
      : '';
    const cells = [
      f.name,
      withRange(f.value, f.unit, f.range),
      ref,
      f.ratio === undefined ? '' : f.ratio.toFixed(3),
      f.target ?? '',
      f.note ?? '',
      ...(rerun ? [rerun(f)] : []),
    ];
    rows.push(`| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`);
  }
  return rows.join('\n');
}

const only = new Set(process.argv.slice(2));
const selected = BENCHES.filter((b) => only.size === 0 || only.has(b.id));
const cpu = cpus();
const startedAt = new Date();
const results: Result[] = [];
for (const b of selected) {
  console.log(`\n== ${b.id}: ${rerunCommand(b)}`);
  results.push(await run(b));
}

const md: string[] = [
  '# Benchmarks',
  '',
  'Written by `pnpm bench` (bench/run-all.ts); do not edit by hand. Every figure below was measured in the run',
  'this file records, each next to its reference measured in the same process or the same run (a ratio is only',
  'taken between two measurements of one run). The machine is shared and noisy: ranges are over the rounds of',
  'one run, and a ratio of side-by-side rounds is the figure to trust, not an absolute rate.',
  '',
  '## Machine',
  '',
  `- CPU: ${cpu[0]?.model ?? 'unknown'}, ${cpu.length} logical cores; ${(totalmem() / 2 ** 30).toFixed(1)} GiB memory`,
  `- Node ${process.version} (${process.platform} ${process.arch})`,
  `- run started ${startedAt.toISOString()}; load average (1, 5, 15 min) at the start of each benchmark is in its section`,
  '',
  '## How to rerun',
  '',
  '- everything: `pnpm bench` (builds, then runs each benchmark in turn and rewrites this file)',
  '- a subset, printing only (this file always holds one whole run): `pnpm bench <id> ...` with the ids below',
  '- one benchmark alone, printing only: the command under its section',
  '- the CI smoke (each benchmark in a tiny mode, checks that it starts and prints figures): `npx vitest run test/bench-smoke.test.ts`',
  '',
];
// Every figure that has a target, in one table: the issue's "each target met or the distance to it".
const targeted = results.flatMap((r) => r.figures.filter((f) => f.target !== undefined));
const benchOf = new Map(results.flatMap((r) => r.figures.map((f) => [f, r.bench] as const)));
const rerunOf = (f: Figure): string => {
  const b = benchOf.get(f);
  return b ? `\`pnpm bench ${b.id}\`` : '';
};
if (targeted.length > 0) md.push('## Figures with a target', '', table(targeted, rerunOf), '');
// What was tried about each target, by hand (bench/notes.md): words only, the figures are the tables'.
const notes = join(ROOT, 'bench/notes.md');
if (existsSync(notes)) md.push(readFileSync(notes, 'utf8').trim(), '');
for (const r of results) {
  md.push(`## ${r.bench.id}`, '', `${r.bench.what}.`, '', `Rerun: \`${rerunCommand(r.bench)}\``, '');
  md.push(
    `Load average at start: ${r.loadBefore.map((x) => x.toFixed(2)).join(', ')}; ran ${r.seconds.toFixed(0)} s.`,
    '',
  );
  if (r.code !== 0 || r.figures.length === 0) {
    md.push(
      `**Failed** (exit ${r.code}, ${r.figures.length} figures). Last lines:`,
      '',
      '```',
      ...r.output.trim().split('\n').slice(-15),
      '```',
      '',
    );
    continue;
  }
  md.push(table(r.figures), '');
  const notes = r.output.split('\n').filter((l) => l.trim() && !l.startsWith('FIGURE '));
  md.push('<details><summary>Output</summary>', '', '```', ...notes, '```', '', '</details>', '');
}
const count = results.reduce((n, r) => n + r.figures.length, 0);
if (only.size === 0) {
  writeFileSync(join(ROOT, 'docs/benchmarks.md'), md.join('\n'));
  console.log(`\nwrote docs/benchmarks.md (${count} figures)`);
} else {
  console.log(`\n${count} figures; docs/benchmarks.md left as it is (a subset ran)`);
}
if (results.some((r) => r.code !== 0)) process.exitCode = 1;
