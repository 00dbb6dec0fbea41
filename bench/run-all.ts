/**
 * `pnpm bench`: every benchmark of bench/benches.ts, one after the other (two at once would measure each
 * other), then ONE table of their results, printed and written to docs/benchmarks.md with the machine
 * and the load during each. `pnpm bench --smoke`: each in its tiny mode, the file marked as a smoke run;
 * `pnpm bench gateway wire`: a subset, printed only (the file holds one whole run).
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { BENCHES, NODE_FLAGS, ROOT, argsOf, type Bench } from './benches.js';
import { parseFigures, type Figure } from './figure.js';

/**
 * Cores, on average over a benchmark, busy with something other than it: above this, not a result. The
 * load average cannot say it: it counts the benchmark's own processes, and for a minute the previous one's.
 */
const OTHER_LIMIT = 0.25;

/** Seconds of the clock ticks in fields [from, to) of a /proc stat line, after `after`; NaN elsewhere than Linux. */
function ticks(file: string, after: string, from: number, to: number): number {
  try {
    const stat = readFileSync(file, 'utf8');
    const fields = stat
      .slice(stat.lastIndexOf(after) + after.length)
      .trim()
      .split(/\s+/);
    return fields.slice(from, to).reduce((sum, f) => sum + Number(f), 0) / 100;
  } catch {
    return NaN;
  }
}
// Every process of the machine (user, nice, system): interrupts are left out, since loopback traffic's
// softirq time is the benchmark's own but accounted to no process.
const machineBusy = () => ticks('/proc/stat', 'cpu ', 0, 3);
// This process and its reaped children: the benchmarks and all they spawned and waited for.
const ownTreeCpu = () => ticks('/proc/self/stat', ') ', 11, 15);
const smoke = process.argv.includes('--smoke');
const only = new Set(process.argv.slice(2).filter((a) => !a.startsWith('--')));
const selected = BENCHES.filter((b) => only.size === 0 || only.has(b.id));

interface Run {
  bench: Bench;
  code: number | null;
  figures: Figure[];
  seconds: number;
  load: number[];
  /** Cores busy with other work than the benchmark, on average while it ran. */
  other: number;
}

function run(b: Bench): Promise<Run> {
  const load = loadavg();
  const start = Date.now();
  const [busy0, own0] = [machineBusy(), ownTreeCpu()];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...NODE_FLAGS, ...argsOf(b, smoke)], {
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
    child.on('close', (code) => {
      const seconds = (Date.now() - start) / 1000;
      const other = (machineBusy() - busy0 - (ownTreeCpu() - own0)) / seconds;
      resolve({ bench: b, code, figures: parseFigures(output), load, seconds, other });
    });
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
const value = (v: { value: number; unit: string; range?: [number, number] }) =>
  `${fmt(v.value)} ${v.unit}${v.range ? ` (${fmt(v.range[0])}–${fmt(v.range[1])})` : ''}`;

function table(runs: Run[]): string {
  const rows = [
    '| result | target | reference | ours | ratio | met | note |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of runs) {
    const loaded = r.other > OTHER_LIMIT;
    if (r.code !== 0) rows.push(`| **${r.bench.id}: failed** (exit ${r.code}) | | | | | | see its output |`);
    for (const f of r.figures) {
      const ratio =
        f.ratio === undefined
          ? ''
          : `${f.ratio.toFixed(3)}${f.ratioRange ? ` (${f.ratioRange.map((x) => x.toFixed(2)).join('–')})` : ''}`;
      const met = loaded ? 'under load: not a result' : f.met === undefined ? '' : f.met ? 'yes' : '**no**';
      const note = [f.heldBy && `held by: ${f.heldBy}`, f.note].filter(Boolean).join('; ');
      const cells = [
        f.id === f.what ? f.what : `${f.what} \`${f.id}\``,
        f.target?.text ?? '',
        f.reference ? `${f.reference.what}: ${value(f.reference)}` : '',
        value(f.ours),
        ratio,
        met,
        note,
      ];
      rows.push(`| ${cells.map((c) => c.replace(/\|/g, '\\|').replace(/\n/g, ' ')).join(' | ')} |`);
    }
  }
  return rows.join('\n');
}

const startedAt = new Date();
const runs: Run[] = [];
const cpu = cpus();
const machine = `${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} logical cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB; Node ${process.version} (${process.platform} ${process.arch})`;
for (const b of selected) {
  console.log(`\n== ${b.id} (load average ${loadavg()[0]!.toFixed(2)})`);
  runs.push(await run(b));
  console.log(`== ${b.id}: other load ${runs.at(-1)!.other.toFixed(2)} cores`);
  // Written after each benchmark: a run cut short leaves what it measured, said to be incomplete.
  if (only.size === 0) writeFileSync(join(ROOT, 'docs/benchmarks.md'), markdown());
}
const result = table(runs);
console.log(`\n${result}\n\nmachine: ${machine}`);
console.log(only.size === 0 ? 'wrote docs/benchmarks.md' : 'a subset ran: docs/benchmarks.md left as it is');
if (runs.some((r) => r.code !== 0)) process.exitCode = 1;

function markdown(): string {
  const minutes = ((Date.now() - startedAt.getTime()) / 60_000).toFixed(1);
  const incomplete =
    runs.length < selected.length ? ` **Incomplete: ${runs.length} of ${selected.length} benchmarks ran.**` : '';
  return [
    '# Benchmarks',
    '',
    'Written by `pnpm bench` (bench/run-all.ts); do not edit by hand. The history of runs is in git.',
    '',
    smoke
      ? '**A smoke run (`pnpm bench --smoke`): every benchmark in its tiny mode. Its figures only show that each benchmark runs and what it prints; none is a result.**'
      : '',
    '',
    `Machine: ${machine}. Run started ${startedAt.toISOString()}, ${minutes} minutes.${incomplete}`,
    '',
    '## How to read the table',
    '',
    '- One row per result. **ours** and **reference** are measured in the same run, side by side: a time ratio is the',
    '  median of per-round ratios of alternating rounds (its range in brackets), each variant in a process of its own;',
    '  an instruction ratio is of callgrind counts (two work sizes, their difference per unit), stable on a busy machine.',
    '- **met** compares the ratio (or ours, when the target is on ours) with the target. A target not met names the',
    '  part that holds it (**held by**). Rows without a target are there to read the others (a part, a reference).',
    `- A benchmark during which the machine spent more than ${OTHER_LIMIT} of a core, on average, on anything but the`,
    '  benchmark is marked "under load: not a result" (the Runs table gives that figure: /proc/stat less the CPU of',
    '  the benchmark and all it spawned). The load average is given too; it counts the benchmark itself.',
    '- bench/README.md says what each benchmark measures, how to rerun one (`pnpm bench <id>`), and how to add one.',
    '- docs/performance.md says, for each target not met, what holds it part by part (instruction counts, heap',
    '  snapshots) and why it does not go lower on Node.',
    '',
    '## Results',
    '',
    table(runs),
    '',
    '## Runs',
    '',
    '| benchmark | other load (cores, average) | load average at start (1, 5, 15 min) | seconds | exit |',
    '| --- | --- | --- | --- | --- |',
    ...runs.map(
      (r) =>
        `| ${r.bench.id} | ${r.other.toFixed(2)} | ${r.load.map((x) => x.toFixed(2)).join(', ')} | ${r.seconds.toFixed(0)} | ${r.code} |`,
    ),
    '',
  ].join('\n');
}
