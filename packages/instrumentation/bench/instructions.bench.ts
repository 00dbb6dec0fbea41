/**
 * The client's cost per SSE event counted in instructions, a figure this shared machine cannot move:
 * the unmodified SDK 1.x client (Client + StreamableHTTPClientTransport) calling the lab's
 * `stream_progress` tool, as fetch.bench.ts and the guard's benchmark run it, once bare, once with
 * `guardedFetch()`, once with `instrumentFetch()` (spans through the OpenTelemetry SDK, a
 * BatchSpanProcessor and an exporter that drops them, flushed before the count ends), each in its own
 * process under `valgrind --tool=callgrind`. A request's own cost is amortised over the events of its
 * stream (`--progress` progress events and the result a call), as a user's client pays it.
 *
 * Only the measured calls are counted: the child calls process.cpuUsage() (libuv's uv_getrusage) just
 * before and just after them, and callgrind runs with `--dump-before=uv_getrusage`, so its second part
 * is those calls alone (start-up, the imports and the warm-up calls are the first part). Every thread
 * is counted (V8's compiler and collector threads as well), as the timed figures count them.
 *
 * To read the counts in time: the bare client also runs without valgrind, timed (its process CPU over
 * the same calls, median of `--timed` runs of them); its µs per event over its instructions per event is
 * this run's µs per instruction, and the instructions each wrapper adds, times that, are the µs it adds.
 * Instructions are not all equally dear (a syscall's kernel time shows in the time, not in the count),
 * so the µs are an estimate; the ratio of counts is not.
 *
 *   node --import tsx bench/instructions.bench.ts [--calls 40] [--progress 100] [--warm 20] [--timed 5]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { FetchLike } from '@resumewatch/wire';
import { median, range } from '../../../bench/client-processes.js';
import { figure } from '../../../bench/figure.js';
import { instructionKinds } from './callgrind-kinds.js';
import type { InstructionKinds } from './callgrind-kinds.js';
import { startLabChild } from './lab-child.js';
import { ourGuardedFetch, ourInstrumentedFetch } from './variants.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '40' },
    progress: { type: 'string', default: '100' },
    warm: { type: 'string', default: '20' },
    timed: { type: 'string', default: '5' },
    runs: { type: 'string', default: '1' },
    url: { type: 'string' },
    child: { type: 'string' },
    smoke: { type: 'boolean', default: false },
  },
});
const CALLS = Number(values.calls);
const PROGRESS = Number(values.progress);
const WARM = Number(values.warm);
const TIMED = Number(values.timed);
const EVENTS = CALLS * (PROGRESS + 1);
const VARIANTS = ['bare', 'guard', 'instrumented'] as const;
type Variant = (typeof VARIANTS)[number];

/** A client process: warm-up calls, then `runs` times the measured calls between two uv_getrusage calls. */
async function child(variant: Variant, url: string, runs: number): Promise<void> {
  let exported = 0;
  const exporter: SpanExporter = {
    export(spans, done) {
      exported += spans.length;
      done({ code: 0 });
    },
    shutdown: async () => undefined,
  };
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
  const fetch: FetchLike | undefined =
    variant === 'guard' ? ourGuardedFetch() : variant === 'instrumented' ? ourInstrumentedFetch(provider) : undefined;
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), fetch ? { fetch } : {}));
  let progress = 0;
  const calls = async (n: number) => {
    for (let i = 0; i < n; i++)
      await client.callTool({ name: 'stream_progress', arguments: { count: PROGRESS, delay: 0 } }, undefined, {
        onprogress: () => void progress++,
      });
    if (variant === 'instrumented') await provider.forceFlush();
  };
  await calls(WARM);
  const cpuPerEvent: number[] = [];
  for (let r = 0; r < runs; r++) {
    // These two process.cpuUsage() calls are the only ones of the measured part: callgrind dumps its
    // counts before each (see the header).
    const start = process.cpuUsage();
    await calls(CALLS);
    const used = process.cpuUsage(start);
    cpuPerEvent.push((used.user + used.system) / EVENTS);
  }
  if (progress !== (WARM + runs * CALLS) * PROGRESS) throw new Error(`${variant}: ${progress} progress notifications`);
  if (variant === 'instrumented' && exported === 0) throw new Error('instrumentFetch recorded no span');
  await client.close();
  await provider.shutdown();
  console.log(JSON.stringify({ cpuPerEvent }));
}

const SCRIPT = [process.execPath, '--import', 'tsx', import.meta.filename];
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

/** Runs a child process; resolves with its stdout. */
function runChild(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => void (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => void (err += d.toString()));
    proc.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited ${code}\n${err.slice(-2000)}`)),
    );
  });
}

/** Instructions of the measured calls: the second of the three parts callgrind dumped for one child. */
async function countInstructions(variant: Variant, url: string, dir: string): Promise<InstructionKinds> {
  await runChild('valgrind', [
    '--tool=callgrind',
    '--dump-before=uv_getrusage',
    `--callgrind-out-file=${join(dir, variant)}.%p`,
    ...SCRIPT,
    ...workload(url),
    '--child',
    variant,
  ]);
  const parts = readdirSync(dir).filter((f) => f.startsWith(`${variant}.`));
  if (parts.length !== 3)
    throw new Error(`${variant}: ${parts.length} callgrind parts, expected 3 (start-up, measured, end)`);
  const measured = parts.find((f) => f.endsWith('.2'))!;
  const kinds = instructionKinds(join(dir, measured));
  const summary = Number(/^summary: (\d+)$/m.exec(readFileSync(join(dir, measured), 'latin1'))![1]);
  if (kinds.total !== summary)
    throw new Error(`${variant}: the functions' costs sum to ${kinds.total}, callgrind says ${summary}`);
  return kinds;
}

if (values.child) {
  await child(values.child as Variant, values.url!, Number(values.runs));
} else {
  const lab = await startLabChild();
  process.on('exit', () => lab.stop());
  const dir = mkdtempSync(join(tmpdir(), 'client-instructions-'));
  try {
    // The timed bare client first, alone; then the three counted ones at once (a count does not mind
    // sharing the machine).
    const [node, ...script] = SCRIPT;
    const timedOut = await runChild(node!, [
      ...script,
      ...workload(lab.url),
      '--child',
      'bare',
      '--runs',
      String(TIMED),
    ]);
    const timed = (JSON.parse(timedOut) as { cpuPerEvent: number[] }).cpuPerEvent;
    const bareUs = median(timed);
    figure({
      bench: 'client-instructions',
      name: `bare SDK 1.x client, ${PROGRESS} progress events a call, timed without valgrind: CPU of its own process, median of ${TIMED} runs of ${CALLS} calls`,
      value: bareUs,
      range: range(timed),
      unit: 'µs CPU per SSE event',
    });
    if (values.smoke) {
      // The wrapped clients run once without valgrind; their counts (minutes a variant) are left out.
      for (const v of ['guard', 'instrumented']) await runChild(node!, [...script, ...workload(lab.url), '--child', v]);
    } else await countAll(lab.url, dir, timed);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    lab.stop();
  }
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
  console.log(
    `workload: ${CALLS} tools/call stream_progress x ${PROGRESS} progress events (${EVENTS} SSE events) after ${WARM} warm-up calls; SDK 1.x client, each variant in its own process under callgrind; lab server in another; node ${process.version}`,
  );
  console.log(
    `bare, timed without valgrind: ${bareUs.toFixed(2)} µs CPU per SSE event (${TIMED} runs, ${range(timed)
      .map((x) => x.toFixed(2))
      .join('–')}); ${(usPerInstruction * 1e6).toFixed(1)} µs per million instructions`,
  );
  console.log('instructions per SSE event: all (collector, compilers, the rest); added and ratio against bare');
  console.log(
    `${'variant'.padEnd(14)} ${'all'.padEnd(9)} ${'collector'.padEnd(10)} ${'compilers'.padEnd(10)} ${'rest'.padEnd(9)} ${'added'.padEnd(9)} ${'ratio'.padEnd(7)} ${'rest ratio'.padEnd(11)} µs added (estimated)`,
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
        (own[v] / own.bare).toFixed(4).padEnd(11),
        (added * usPerInstruction).toFixed(2),
      ].join(' '),
    );
  });
  const reference = {
    name: 'bare SDK client, its own process, under callgrind',
    value: perEvent.bare,
    unit: 'instructions per SSE event',
  };
  const what = `SDK 1.x client, ${PROGRESS} progress events a call (a request's cost spread over its events), ${CALLS} calls counted by callgrind`;
  figure({
    bench: 'client-instructions',
    name: `bare SDK 1.x client: µs CPU per instruction (its timed µs per SSE event over its instructions per SSE event)`,
    value: usPerInstruction * 1e6,
    unit: 'µs per million instructions',
    note: `${bareUs.toFixed(2)} µs per SSE event timed (${TIMED} runs, ${range(timed)
      .map((x) => x.toFixed(2))
      .join('–')}) over ${perEvent.bare.toFixed(0)} instructions per SSE event`,
  });
  for (const [v, label, target, usTarget] of [
    ['guard', 'guardedFetch', '≤ 1.02 of bare', undefined],
    ['instrumented', 'instrumentFetch', undefined, '2 µs added per SSE event'],
  ] as const) {
    const added = perEvent[v] - perEvent.bare;
    figure({
      bench: 'client-instructions',
      name: `${label}, ${what}: instructions per SSE event`,
      value: perEvent[v],
      unit: 'instructions per SSE event',
      reference,
      ratio: perEvent[v] / perEvent.bare,
      target,
      note: `${added.toFixed(0)} instructions added per SSE event; without the collector's and the compilers' instructions ${own[v].toFixed(0)} against ${own.bare.toFixed(0)}, ratio ${(own[v] / own.bare).toFixed(4)}, ${(own[v] - own.bare).toFixed(0)} added`,
    });
    figure({
      bench: 'client-instructions',
      name: `${label}, ${what}: µs CPU added per SSE event, its added instructions at the bare client's µs per instruction`,
      value: added * usPerInstruction,
      unit: 'µs CPU added per SSE event (estimated)',
      target: usTarget,
      note: `${added.toFixed(0)} instructions × ${(usPerInstruction * 1e6).toFixed(1)} µs per million`,
    });
  }
}
