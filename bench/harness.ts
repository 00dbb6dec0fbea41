/**
 * The one harness every benchmark uses (bench/README.md says how):
 *
 * - children over IPC: `Child.start(script)` forks a part as a Node process of its own, where `serve(ops)`
 *   answers `ask(op, args)` with the op's own process CPU (`cpuUs`); built-in ops `cpu` and `heap`. A
 *   part in its own process shares no optimised code, inline caches, heap or collector with its rival.
 * - alternating rounds: `alternate` runs each variant once a round, the order flipped every round;
 *   `compare` takes the median of the per-round ratios and their range, `compared` makes its row cells.
 * - instruction counts: `countInstructions` runs a child under callgrind, its measured work (`measured`)
 *   counted after a warm-up at two sizes, three times each in turn: the median instructions per unit.
 * - heap probes: `heapNow` (after full GCs: heap used without code space, plus array buffers).
 * - results: `figure` (bench/figure.ts) prints one row of `pnpm bench`'s table.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { getHeapSpaceStatistics } from 'node:v8';
import { NODE_FLAGS } from './benches.js';
import type { Figure } from './figure.js';

export { figure } from './figure.js';

export const SMOKE = process.argv.includes('--smoke');

/** `--name value` from argv, as text (undefined without it). */
export function option(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? undefined : process.argv[at + 1];
}
/** `--name value` from argv, else the full-size default, else (with --smoke) the smoke size. */
export const arg = (name: string, full: number, smoke = full): number =>
  option(name) !== undefined ? Number(option(name)) : SMOKE ? smoke : full;

function cpuNow(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}
/** This process's CPU (µs, every thread) while `work` runs. */
export async function cpuOf(work: () => unknown): Promise<number> {
  const start = cpuNow();
  await work();
  return cpuNow() - start;
}

/** `n` workers at once, each given its number. */
export const pool = (n: number, worker: (k: number) => Promise<unknown>) =>
  Promise.all(Array.from({ length: n }, (_, k) => worker(k)));

/** Listens on a loopback port: the server's `http://127.0.0.1:port`. */
export const listen = (server: Server): Promise<string> =>
  new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );

/** Spawns `node ...args` (not over IPC: a server as users run it) and waits for `ready` in what it prints. */
export async function spawnReady(args: string[], ready: RegExp): Promise<{ proc: ChildProcess; out: string }> {
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  process.on('exit', () => proc.kill());
  let out = '';
  const take = (d: Buffer) => void (out.length < 65_536 && (out += d.toString()));
  proc.stdout!.on('data', take);
  proc.stderr!.on('data', take);
  for (const until = Date.now() + 60_000; !ready.test(out); await sleep(20))
    if (proc.exitCode !== null || Date.now() > until) throw new Error(`${args.join(' ')} did not start: ${out}`);
  return { proc, out };
}

// --- Heap ---

/** After full GCs (node --expose-gc): heap used without code space, plus array buffers; and RSS. */
export async function heapNow(): Promise<{ heap: number; rss: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 4; i++) {
    await sleep(25);
    gc();
  }
  const m = process.memoryUsage();
  const code = getHeapSpaceStatistics().find((s) => s.space_name === 'code_space')?.space_used_size ?? 0;
  return { heap: m.heapUsed - code + m.arrayBuffers, rss: m.rss };
}

// --- Children over IPC ---

/**
 * In a child: answers `{ seq, op, ...args }` with `{ seq, cpuUs, ...reply }` (a number replied is
 * `{ units }`: the units of work the op did); `ready` is sent first. `onStop` runs when the parent
 * disconnects, then the process exits.
 */
export function serve(ops: Record<string, (args: never) => unknown>, ready: object = {}, onStop?: () => unknown): void {
  const builtIn = { cpu: () => ({ total: cpuNow() }), heap: () => heapNow() };
  process.on('message', (m: { seq: number; op: string }) => {
    void (async () => {
      const start = cpuNow();
      try {
        const fn = ops[m.op] ?? builtIn[m.op as keyof typeof builtIn];
        if (!fn) throw new Error(`unknown op ${m.op}`);
        const r = await fn(m as never); // each op types the arguments its parent sends
        const reply = typeof r === 'number' ? { units: r } : ((r ?? {}) as object);
        process.send!({ ...reply, seq: m.seq, cpuUs: cpuNow() - start });
      } catch (error) {
        process.send!({ seq: m.seq, error: String((error as Error)?.stack ?? error) });
      }
    })();
  });
  process.on('disconnect', () => {
    void Promise.resolve(onStop?.()).finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  });
  process.send!({ ready: true, ...ready });
}

/** In the parent: a part of the benchmark in a process of its own. */
export class Child {
  private static readonly started = new Set<Child>();
  private seq = 0;
  private readonly pending = new Map<number, (m: Record<string, unknown>) => void>();
  private constructor(
    readonly proc: ChildProcess,
    readonly name: string,
  ) {
    proc.on('message', (m: Record<string, unknown>) => {
      const done = this.pending.get(m.seq as number);
      this.pending.delete(m.seq as number);
      done?.(m);
    });
    proc.on('exit', (code) => {
      for (const done of this.pending.values()) done({ error: `${name} exited with ${code}` });
      this.pending.clear();
    });
  }

  /** Forks `script` (TypeScript through tsx, --expose-gc) and waits for its `ready`: `first` is it. */
  static async start(
    script: string,
    args: readonly string[] = [],
  ): Promise<Child & { first: Record<string, unknown> }> {
    const proc = fork(script, args, { execArgv: NODE_FLAGS, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    process.on('exit', () => proc.kill());
    const name = `${script} ${args.join(' ')}`;
    const [first] = (await Promise.race([
      once(proc, 'message'),
      once(proc, 'exit').then(([code]) => {
        throw new Error(`${name} exited with ${code} before it was ready`);
      }),
    ])) as [Record<string, unknown>];
    const child = Object.assign(new Child(proc, name), { first });
    Child.started.add(child);
    return child;
  }

  ask<T = Record<string, unknown>>(op: string, args: object = {}): Promise<T & { cpuUs: number }> {
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, (m) =>
        m.error ? reject(new Error(`${this.name} ${op}: ${String(m.error)}`)) : resolve(m as T & { cpuUs: number }),
      );
      this.proc.send({ ...args, seq, op });
    });
  }

  /** The child's process CPU (µs) while `during` runs, whatever does the work. */
  async cpuDuring(during: () => Promise<unknown>): Promise<number> {
    const before = (await this.ask<{ total: number }>('cpu')).total;
    await during();
    return (await this.ask<{ total: number }>('cpu')).total - before;
  }

  /** Stops every child still running (a benchmark's last line). */
  static async stopAll(): Promise<void> {
    for (const c of Child.started) await c.stop();
  }

  async stop(): Promise<void> {
    Child.started.delete(this);
    if (this.proc.exitCode !== null || !this.proc.connected) return;
    const exited = once(this.proc, 'exit');
    this.proc.disconnect();
    await exited;
  }
}

// --- Alternating rounds ---

/**
 * `warmup` unmeasured rounds, then `rounds` measured: each variant once a round, the order reversed
 * every other round. `round` returns the variant's figure for that round (µs per unit, say).
 */
export async function alternate<V extends string>(
  variants: readonly V[],
  rounds: number,
  round: (variant: V, r: number) => Promise<number>,
  warmup = 1,
): Promise<Record<V, number[]>> {
  const out = Object.fromEntries(variants.map((v) => [v, [] as number[]])) as Record<V, number[]>;
  for (let r = -warmup; r < rounds; r++)
    for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
      const x = await round(v, r);
      if (r >= 0) out[v].push(x);
    }
  return out;
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
export const range = (xs: readonly number[]): [number, number] => [Math.min(...xs), Math.max(...xs)];
/** The `p` quantile (0 < p ≤ 1): the smallest value with at least p of them at or below it. */
export const percentile = (xs: readonly number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.max(0, Math.ceil(p * xs.length) - 1))]!;

/** Ours against the reference, round by round: the medians, and the median of per-round ratios with its range. */
export function compare(ours: readonly number[], ref: readonly number[]) {
  const ratios = ours.map((x, i) => x / ref[i]!);
  return {
    ours: median(ours),
    oursRange: range(ours),
    ref: median(ref),
    refRange: range(ref),
    ratio: median(ratios),
    ratioRange: range(ratios),
    added: median(ours.map((x, i) => x - ref[i]!)),
  };
}

/** A row's reference, ours and ratio cells from a `compare`. */
export const compared = (c: ReturnType<typeof compare>, refWhat: string, unit: string, oursUnit = unit) =>
  ({
    reference: { what: refWhat, value: c.ref, unit, range: c.refRange },
    ours: { value: c.ours, unit: oursUnit, range: c.oursRange },
    ratio: c.ratio,
    ratioRange: c.ratioRange,
  }) satisfies Partial<Figure>;

// --- Instruction counts (callgrind) ---

const COUNTED = 'BENCH_COUNTED';

/**
 * In a child: runs `work(n)` as the measured part at each size of `countInstructions` in turn, in this one
 * process after its warm-up. Under callgrind the child signals its parent (SIGUSR2) before the first
 * size and after each, and waits for the parent's SIGUSR2 back: the parent switches the counting on
 * first, then dumps the count (which zeroes it) after each size. No stdio meanwhile: a pipe's stream
 * would make the sockets' stream code polymorphic, and its recompilation would land in the count.
 */
export async function measured(work: (n: number) => Promise<unknown>): Promise<void> {
  const { mode, sizes } = JSON.parse(process.env[COUNTED] ?? '{"sizes":[]}') as { mode: string; sizes: number[] };
  const cpu: number[] = [];
  let answered = () => {};
  process.on('SIGUSR2', () => answered());
  const handshake = () =>
    new Promise<void>((resolve) => {
      // A timer ticks meanwhile: valgrind takes callgrind_control's command while the program runs. (No
      // gc() between sizes: a forced full GC makes V8 recompile, 1.2 M a gateway request in the count.)
      const tick = setInterval(() => undefined, 5);
      answered = () => resolve(clearInterval(tick));
      process.kill(process.ppid, 'SIGUSR2');
    });
  if (mode === 'callgrind') await handshake();
  for (const n of sizes) {
    cpu.push(await cpuOf(() => work(n)));
    if (mode === 'callgrind') await handshake();
  }
  if (mode === 'cpu') process.stdout.write(cpu.map((c) => `cpu ${c}\n`).join(''));
}

/** Instructions of one callgrind out file: all, V8's collector's and its compilers' (self cost by function name). */
export type Instructions = Record<'total' | 'collector' | 'compiler' | 'major', number>;
// Named from callgrind runs collecting only in Heap::CollectGarbage and IncrementalMarking (99% named), only in
// tier-ups and lazy compiles (88%: the rest malloc, string table). RecordWrite: the write barrier's slow path.
const COLLECTOR = new RegExp(
  '(Heap|MarkCompact|Scaveng|Sweep|Marking|MarkBit|Evacuat|Remembered|SlotSet|MemoryChunk|MemoryAllocator|VirtualMemory|' +
    'Compaction|WeakObjects|GCTracer|PagedSpace|LargeObjectSpace|NewSpace|SemiSpace|SpaceIterator|Collector|FreeList|MinorMS|' +
    'heap::base|cppgc|Worklist|LiveObjectRange|UsedInstanceSize|IterateObjectCache|PointersUpdating|ShouldFlushCode|' +
    'LocalAllocationBuffer|StubCache::Clear|GlobalHandles::Iterate|RootVisitor|ObjectVisitor|VisitSpillSlots|ClearStale|' +
    'IteratePc|Builtins_RecordWrite|Builtins_EphemeronKeyBarrier)',
);
const COMPILER = new RegExp(
  '(compiler::|maglev::|baseline::|interpreter::|turboshaft|(?<!Json)Parser|Preparse|Scanner|Compil|Zone|Bytecode|Deoptimiz|' +
    'Ast|internal::Scope::|DeclarationScope|ScopeInfo|VariableProxy|FuncNameInferrer|KeywordHash|SourcePosition|IdentityMap|' +
    'FeedbackMetadata|FeedbackVectorSpec|Assembler|internal::Serializer|internal::Deserializer|SnapshotByteSink|Boilerplate)',
);

function readCallgrind(path: string): Instructions {
  const names = new Map<string, string>();
  const out: Instructions = { total: 0, collector: 0, compiler: 0, major: 0 };
  let [kind, major] = [undefined as 'collector' | 'compiler' | undefined, false];
  let skipNext = false;
  for (const line of readFileSync(path, 'latin1').split('\n')) {
    if (line.startsWith('fn=') || line.startsWith('cfn=')) {
      const m = /^c?fn=\((\d+)\)(?: (.*))?$/.exec(line);
      if (m?.[2] !== undefined) names.set(m[1]!, m[2]);
      const name = m ? (names.get(m[1]!) ?? '') : line;
      if (line.startsWith('fn='))
        kind = COLLECTOR.test(name) ? 'collector' : COMPILER.test(name) ? 'compiler' : undefined;
      if (line.startsWith('fn=')) major = kind === 'collector' && /MarkCompact|Marking/.test(name); // a full collection's
    } else if (line.startsWith('calls='))
      skipNext = true; // the next cost line is a callee's inclusive cost
    else if (/^[0-9+*-]/.test(line)) {
      const cost: number = skipNext ? 0 : Number(line.split(' ')[1] ?? 0);
      [out.total, skipNext] = [out.total + cost, false];
      if (kind) out[kind] += cost;
      if (major) out.major += cost;
    }
  }
  return out;
}

const control = (arg: string, pid: string) =>
  new Promise<void>((resolve, reject) =>
    spawn('callgrind_control', [arg, pid], { stdio: 'ignore' }).on('close', (c) =>
      c === 0 ? resolve() : reject(new Error(`callgrind_control ${arg} exited ${c}`)),
    ),
  );

/** Runs a counted child under callgrind: the count after each size dumped to `out`.1, `out`.2, ... (`measured`). */
function runCounted(nodeArgs: string[], sizes: number[], out: string): Promise<Instructions[]> {
  return new Promise((resolve, reject) => {
    const valgrind = ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${out}`, process.execPath];
    const env = { ...process.env, [COUNTED]: JSON.stringify({ mode: 'callgrind', sizes }) };
    const proc = spawn('valgrind', [...valgrind, ...nodeArgs], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let [err, said] = ['', 0];
    proc.stderr.on('data', (d: Buffer) => void (err = (err + d.toString()).slice(-4000)));
    // Counting stays on from the first signal: switched off and on again, the next dump's functions would
    // carry the costs of the one before.
    const signalled = () =>
      control(said++ === 0 ? '--instr=on' : '--dump', String(proc.pid)).then(
        () => proc.kill('SIGUSR2'),
        (e: unknown) => reject(e as Error),
      );
    process.on('SIGUSR2', signalled);
    proc.on('close', (code) => {
      process.off('SIGUSR2', signalled);
      if (code === 0 && said === sizes.length + 1) resolve(sizes.map((_, i) => readCallgrind(`${out}.${i + 1}`)));
      else reject(new Error(`valgrind ${nodeArgs.join(' ')}: exit ${code}\n${err}`));
    });
  });
}

/** A counted child run without valgrind (a smoke's): each size's measured CPU µs as its "instructions". */
async function runPlain(nodeArgs: string[], sizes: number[]): Promise<Instructions[]> {
  const proc = spawn(process.execPath, nodeArgs, {
    env: { ...process.env, [COUNTED]: JSON.stringify({ mode: 'cpu', sizes }) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let said = '';
  proc.stdout.on('data', (d: Buffer) => void (said += d.toString()));
  const [code] = (await once(proc, 'close')) as [number];
  const cpu = [...said.matchAll(/^cpu (\d+)$/gm)].map((m) => Number(m[1]));
  if (code !== 0 || cpu.length !== sizes.length) throw new Error(`${nodeArgs.join(' ')}: exit ${code}`);
  return cpu.map((total) => ({ total, collector: 0, compiler: 0, major: 0 }));
}
let counts = 0;

/**
 * Instructions per unit of work of `script` (`node [flags] --import tsx script ...args`, with --smoke in a
 * smoke run), counted in one process after its warm-up: the work at n1, n2, n1, n2, n1, n2 (`measured` in
 * the child), a dump after each; each two neighbours' (count(n2) − count(n1)) / (units(n2) − units(n1)),
 * so what does not grow with the work falls out; total's and compilers' median of the five (a late
 * compilation lands whole in one dump), the collector's all dumps' per unit (full collections recur at
 * n1 + n2), and `own`, without collector and compilers (below; `spread`: its differences' range). `flags`:
 * `--single-threaded` runs V8's compilers on the main thread as functions tier up, in the warm-up, not in
 * background jobs in the counted part. A smoke run counts without valgrind, CPU µs standing in (never a
 * result), but for its first count with `--callgrind`.
 */
export async function countInstructions(
  script: string,
  args: readonly string[],
  sizes: [number, number],
  units: (n: number) => number = (n) => n,
  flags: readonly string[] = [],
): Promise<Instructions & { own: number; spread: [number, number] }> {
  if (spawnSync('valgrind', ['--version']).error) throw new Error('no valgrind (Debian: apt-get install valgrind)');
  const dir = mkdtempSync(join(tmpdir(), 'bench-callgrind-'));
  const callgrind = !SMOKE || (process.argv.includes('--callgrind') && counts++ === 0);
  try {
    const nodeArgs = [...flags, ...NODE_FLAGS, script, ...args, ...(SMOKE ? ['--smoke'] : [])];
    const seq = [0, 1, 0, 1, 0, 1].map((i) => sizes[i]!);
    const c = callgrind ? await runCounted(nodeArgs, seq, join(dir, 'count')) : await runPlain(nodeArgs, seq);
    const du = units(sizes[1]) - units(sizes[0]);
    const per = (f: (x: Instructions) => number) =>
      c.slice(1).map((x, i) => ((i % 2 ? -1 : 1) * (f(x) - f(c[i]!))) / du);
    const own = (x: Instructions) => x.total - x.collector - x.compiler;
    const [t, k] = (['total', 'compiler'] as const).map((kind) => median(per((x) => x[kind])));
    const g = c.reduce((a, x) => a + x.collector, 0) / seq.reduce((a, n) => a + units(n), 0); // amortized
    // Own from dumps without a full collection (its unnamed side: frees, weak callbacks; it can recur at n1 + n2).
    const clean = (j: number) => c.filter((x, i) => i % 2 === j && x.major < 0.02 * x.total).map(own);
    const mine = clean(0).length && clean(1).length ? (median(clean(1)) - median(clean(0))) / du : median(per(own));
    return { total: t!, collector: g, compiler: k!, major: 0, own: mine, spread: range(per(own)) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
