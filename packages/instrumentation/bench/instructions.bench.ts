/**
 * The client's cost per SSE event counted in instructions, a figure this shared machine cannot move:
 * the unmodified SDK 1.x client (Client + StreamableHTTPClientTransport) calling the lab's
 * `stream_progress` tool, as fetch.bench.ts and the guard's benchmark run it, once bare, once with
 * `guardedFetch()`, once with `instrumentFetch()` (spans through the OpenTelemetry SDK, a
 * BatchSpanProcessor and an exporter that drops them, flushed before the count ends), each in its own
 * process (instructions-child.mjs, over the packages' built dist) under `valgrind --tool=callgrind`. A
 * request's own cost is amortised over the events of its stream (`--progress` progress events and the
 * result a call), as a user's client pays it.
 *
 * Only the measured calls are counted. Callgrind starts uninstrumented (`--instr-atstart=no`: start-up
 * and warm-up run three times as fast); after the warm-up calls the child says so and waits while
 * callgrind_control switches the instrumentation on. The child calls process.cpuUsage() (libuv's
 * uv_getrusage) just before and just after the measured calls, and callgrind runs with
 * `--dump-before=uv_getrusage`, so its second part is those calls alone. Every thread is counted (V8's
 * compiler and collector threads as well), as the timed figures count them. The lab server keeps idle
 * connections for minutes (lab-child.ts `slowClients`): a client slowed by valgrind otherwise reused a
 * connection that Node's 5 s idle timeout had just closed.
 *
 * To read the counts in time: the bare client also runs without valgrind, timed (its process CPU over
 * the same calls, median of `--timed` runs of them); its µs per event over its instructions per event is
 * this run's µs per instruction, and the instructions each wrapper adds, times that, are the µs it adds.
 * Instructions are not all equally dear (a syscall's kernel time shows in the time, not in the count),
 * so the µs are an estimate; the ratio of counts is not. The collector's and the compilers' instructions
 * move by some thousands an event from run to run (where a major collection or an optimisation falls);
 * the program's own (callgrind-kinds.ts) much less, so the notes give both.
 *
 * Needs valgrind (Debian's package) and the build (`npx tsc -b`). About 3.5 minutes with the defaults on
 * two loaded cores.
 *
 *   node --import tsx bench/instructions.bench.ts [--calls 80] [--progress 100] [--warm 300] [--timed 3]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { median, range } from '../../../bench/client-processes.js';
import { figure } from '../../../bench/figure.js';
import { instructionKinds } from './callgrind-kinds.js';
import type { InstructionKinds } from './callgrind-kinds.js';
import { startLabChild } from './lab-child.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '80' },
    progress: { type: 'string', default: '100' },
    // After 100 warm-up calls the recorder's per-request functions still ran in V8's interpreter and
    // baseline tier (its added instructions were five times what they are after 400); uninstrumented,
    // warm-up calls cost little (about 0.15 s each under valgrind here).
    warm: { type: 'string', default: '300' },
    timed: { type: 'string', default: '3' },
  },
});
const CALLS = Number(values.calls);
const PROGRESS = Number(values.progress);
const WARM = Number(values.warm);
const TIMED = Number(values.timed);
const EVENTS = CALLS * (PROGRESS + 1);
const VARIANTS = ['bare', 'guard', 'instrumented'] as const;
type Variant = (typeof VARIANTS)[number];

const CHILD = fileURLToPath(new URL('instructions-child.mjs', import.meta.url));
const workload = (url: string) => [
  '--url',
  url,
  '--calls',
  String(CALLS),
  '--progress',
  String(PROGRESS),
  '--warm',
  String(WARM),
];

/**
 * Runs a child process; resolves with its stdout. `onWarm`: the child waits after its warm-up
 * (`--await-go`) until this has run, then is told to go on.
 */
function runChild(command: string, args: string[], onWarm?: (pid: number) => Promise<void>): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn(command, args, { stdio: 'pipe' });
    if (!onWarm) proc.stdin.end();
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!onWarm || !out.startsWith('warm\n')) return;
      out = out.slice('warm\n'.length);
      const go = onWarm;
      onWarm = undefined;
      go(proc.pid!).then(
        () => proc.stdin.end('go\n'),
        (error: unknown) => {
          proc.kill();
          reject(error as Error);
        },
      );
    });
    proc.stderr.on('data', (d: Buffer) => void (err += d.toString()));
    proc.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited ${code}\n${err.slice(-2000)}`)),
    );
  });
}

/** Instructions of the measured calls: the second of the three parts callgrind dumped for one child. */
async function countInstructions(variant: Variant, url: string, dir: string): Promise<InstructionKinds> {
  // Uninstrumented through start-up and warm-up (a third of the time), instrumented from there on.
  await runChild(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      '--dump-before=uv_getrusage',
      `--callgrind-out-file=${join(dir, variant)}.%p`,
      process.execPath,
      CHILD,
      ...workload(url),
      '--variant',
      variant,
      '--await-go',
    ],
    (pid) => runChild('callgrind_control', ['--instr=on', String(pid)]).then(() => undefined),
  );
  const parts = readdirSync(dir).filter((f) => f.startsWith(`${variant}.`));
  if (parts.length !== 3)
    throw new Error(
      `${variant}: ${parts.length} callgrind parts, expected 3 (up to the measured calls, measured, after)`,
    );
  const measured = parts.find((f) => f.endsWith('.2'))!;
  const kinds = instructionKinds(join(dir, measured));
  const summary = Number(/^summary: (\d+)$/m.exec(readFileSync(join(dir, measured), 'latin1'))![1]);
  if (kinds.total !== summary)
    throw new Error(`${variant}: the functions' costs sum to ${kinds.total}, callgrind says ${summary}`);
  return kinds;
}

// Without valgrind, fail at once rather than after the timed client's minute.
if (spawnSync('valgrind', ['--version']).error)
  throw new Error('valgrind is not installed (Debian: apt-get install valgrind); this benchmark counts with it');
const lab = await startLabChild({ slowClients: true });
process.on('exit', () => lab.stop());
const dir = mkdtempSync(join(tmpdir(), 'client-instructions-'));
try {
  // The timed bare client first, alone; then the three counted ones at once (a count does not mind
  // sharing the machine).
  const timedOut = await runChild(process.execPath, [
    CHILD,
    ...workload(lab.url),
    '--variant',
    'bare',
    '--runs',
    String(TIMED),
  ]);
  const timed = (JSON.parse(timedOut) as { cpuPerEvent: number[] }).cpuPerEvent;
  figure({
    bench: 'client-instructions',
    name: `bare SDK 1.x client, ${PROGRESS} progress events a call, timed without valgrind: CPU of its own process, median of ${TIMED} runs of ${CALLS} calls`,
    value: median(timed),
    range: range(timed),
    unit: 'µs CPU per SSE event',
  });
  await countAll(lab.url, dir, timed);
} finally {
  rmSync(dir, { recursive: true, force: true });
  lab.stop();
}

/** The three variants counted, their figures printed with the timed bare client's µs per instruction. */
async function countAll(url: string, dir: string, timed: number[]): Promise<void> {
  const counted = await Promise.all(VARIANTS.map((v) => countInstructions(v, url, dir)));
  const per = (i: number, k: keyof InstructionKinds) => counted[i]![k] / EVENTS;
  const perEvent = Object.fromEntries(VARIANTS.map((v, i) => [v, per(i, 'total')])) as Record<Variant, number>;
  // The program's own instructions: neither the collector's nor the compilers' (callgrind-kinds.ts).
  const own = Object.fromEntries(
    VARIANTS.map((v, i) => [v, per(i, 'total') - per(i, 'collector') - per(i, 'compiler')]),
  ) as Record<Variant, number>;
  const bareUs = median(timed);
  const usPerInstruction = bareUs / perEvent.bare;
  const timedText = `${bareUs.toFixed(2)} µs per SSE event timed (${TIMED} runs, ${range(timed)
    .map((x) => x.toFixed(2))
    .join('–')})`;
  console.log(
    `workload: ${CALLS} tools/call stream_progress x ${PROGRESS} progress events (${EVENTS} SSE events) after ${WARM} warm-up calls; SDK 1.x client, each variant in its own process under callgrind; lab server in another; node ${process.version}`,
  );
  console.log(
    `bare, timed without valgrind: ${timedText}; ${(usPerInstruction * 1e6).toFixed(1)} µs per million instructions`,
  );
  console.log('instructions per SSE event: all (collector, compilers, the rest); added and ratio against bare');
  console.log(
    `${'variant'.padEnd(14)} ${'all'.padEnd(9)} ${'collector'.padEnd(10)} ${'compilers'.padEnd(10)} ${'rest'.padEnd(9)} ${'added'.padEnd(9)} ${'ratio'.padEnd(7)} ${'rest added'.padEnd(11)} ${'rest ratio'.padEnd(11)} µs added (estimated)`,
  );
  VARIANTS.forEach((v, i) => {
    const added = perEvent[v] - perEvent.bare;
    console.log(
      [
        v.padEnd(14),
        perEvent[v].toFixed(0).padEnd(9),
        per(i, 'collector').toFixed(0).padEnd(10),
        per(i, 'compiler').toFixed(0).padEnd(10),
        own[v].toFixed(0).padEnd(9),
        added.toFixed(0).padEnd(9),
        (perEvent[v] / perEvent.bare).toFixed(4).padEnd(7),
        (own[v] - own.bare).toFixed(0).padEnd(11),
        (own[v] / own.bare).toFixed(4).padEnd(11),
        (added * usPerInstruction).toFixed(2),
      ].join(' '),
    );
  });
  const what = `SDK 1.x client, ${PROGRESS} progress events a call (a request's cost spread over its events), ${CALLS} calls counted by callgrind`;
  const bareKinds = `collector ${per(0, 'collector').toFixed(0)}, compilers ${per(0, 'compiler').toFixed(0)}, the program's own ${own.bare.toFixed(0)}`;
  figure({
    bench: 'client-instructions',
    name: `bare ${what}: instructions per SSE event`,
    value: perEvent.bare,
    unit: 'instructions per SSE event',
    note: `${bareKinds}; ${timedText}: ${(usPerInstruction * 1e6).toFixed(1)} µs per million instructions`,
  });
  const reference = {
    name: 'bare SDK client, its own process, under callgrind',
    value: perEvent.bare,
    unit: 'instructions per SSE event',
  };
  for (const [v, label, target, usTarget] of [
    ['guard', 'guardedFetch', '≤ 1.02 of bare', undefined],
    ['instrumented', 'instrumentFetch', undefined, '≤ 2 µs added per SSE event'],
  ] as const) {
    const i = VARIANTS.indexOf(v);
    const added = perEvent[v] - perEvent.bare;
    figure({
      bench: 'client-instructions',
      name: `${label}, ${what}: instructions added per SSE event`,
      value: added,
      unit: 'instructions added per SSE event',
      reference,
      ratio: perEvent[v] / perEvent.bare,
      target,
      note: `${perEvent[v].toFixed(0)} instructions per SSE event (collector ${per(i, 'collector').toFixed(0)}, compilers ${per(i, 'compiler').toFixed(0)}); the program's own ${own[v].toFixed(0)} against bare's ${own.bare.toFixed(0)}: ${(own[v] - own.bare).toFixed(0)} added, ratio ${(own[v] / own.bare).toFixed(4)}`,
    });
    figure({
      bench: 'client-instructions',
      name: `${label}, ${what}: µs CPU added per SSE event, its added instructions at the bare client's µs per instruction`,
      value: added * usPerInstruction,
      unit: 'µs CPU added per SSE event (estimated)',
      target: usTarget,
      note: `${added.toFixed(0)} instructions × ${(usPerInstruction * 1e6).toFixed(1)} µs per million (the program's own added: ${((own[v] - own.bare) * usPerInstruction).toFixed(2)} µs)`,
    });
  }
}
