/**
 * Where the gateway's CPU per JSON request (`--phase json`) or per SSE event (`--phase sse`) goes
 * beyond the bare Node proxy's, in µs per request or event, by part. The same processes as
 * proxy.bench.ts (upstream-server.ts, load-client.ts, proxy-child.ts `gateway` and `bare`, and with
 * BENCH_BEFORE=<dir> the gateway build in <dir> as `before`), the same phases, alternating rounds:
 * JSON, tools/call answered with JSON, `--json` requests a round; SSE, `--streams` tools/call answered
 * by a stream of `--events` progress notifications and its result, a round's CPU over its
 * `--streams` × (`--events` + 1) events (a stream's request and headers in its events' share), as
 * proxy.bench.ts counts it; both unpaced, over `--concurrency` sessions. Over each proxy's phase only,
 * V8's sampling profiler runs in that proxy (proxy-child.ts `profileStart`/`profileStop`) and
 * process.cpuUsage is read before and after.
 *
 * Each sample's time goes to the part of the function it is in (its self time), by the function's
 * file: Node's HTTP, sockets, streams, events, timers and ticks, the wire observer (packages/wire), the
 * digests (the wire's digest.ts and node:crypto), the span recorder (packages/instrumentation), the
 * detector-only tracer (the gateway's detector-tracer.ts), the detector (packages/detector,
 * packages/daemon), the gateway's own forwarding (the rest of packages/gateway), dependencies, GC,
 * V8's own work outside JavaScript (`(program)`). A native function without a file (JSON.parse, a
 * binding) counts for the part of its nearest caller that has one, except the socket writes (`writev`,
 * `writeBuffer`, `write*String`), a part of their own. A part's µs per request is its share of the
 * process's busy samples (idle left out) times the process's measured CPU per request (every thread,
 * user + system): the profiler samples the main thread's wall time, so time the process was preempted
 * while busy counts in the part it was in, and the other threads' CPU is spread over the parts.
 *
 *   npx tsc -b && node --expose-gc --import tsx bench/cpu-parts.ts [--phase json|sse] [--rounds 4]
 *     [--json 4000] [--streams 300] [--events 100] [--concurrency 8] [--interval 100] [--top 25]
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { figure } from '../../../bench/figure.js';
import { Child } from './child.js';

const { values } = parseArgs({
  options: {
    phase: { type: 'string', default: 'json' },
    rounds: { type: 'string', default: '4' },
    json: { type: 'string', default: '4000' },
    streams: { type: 'string', default: '300' },
    events: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '8' },
    interval: { type: 'string', default: '100' },
    top: { type: 'string', default: '25' },
  },
});
const PHASE = values.phase;
if (PHASE !== 'json' && PHASE !== 'sse') throw new Error(`--phase json|sse, not ${PHASE}`);
const ROUNDS = Number(values.rounds);
const JSON_CALLS = Number(values.json);
const STREAMS = Number(values.streams);
const EVENTS = Number(values.events);
/** What a round's CPU is divided by: requests, or SSE events (a stream's progress events and its result). */
const UNITS = PHASE === 'json' ? JSON_CALLS : STREAMS * (EVENTS + 1);
const UNIT = PHASE === 'json' ? 'JSON request' : 'SSE event';
const CONCURRENCY = Number(values.concurrency);
const INTERVAL_US = Number(values.interval);
const TOP = Number(values.top);

// --- Children, as proxy.bench.ts starts them ---
const here = import.meta.dirname;
async function start(script: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  const proc = fork(join(here, script), args, { execArgv: ['--expose-gc', '--import', 'tsx'], stdio: 'inherit', env });
  const first = await new Promise<Record<string, unknown>>((resolve, reject) => {
    proc.once('message', resolve);
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { child: new Child(proc), first };
}

const up = await start('upstream-server.ts', []);
const upstream = up.first.url as string;
const client = (await start('load-client.ts', [])).child;
const proxyArgs = ['--max-streams', '20000'];
interface Target {
  name: string;
  child: Child;
  url: string;
}
const targets: Target[] = [];
for (const [name, env] of [
  ['gateway', process.env],
  ['bare', process.env],
  ...(process.env.BENCH_BEFORE
    ? [['before', { ...process.env, BENCH_GATEWAY_DIST: process.env.BENCH_BEFORE }] as const]
    : []),
] as const) {
  const s = await start('proxy-child.ts', [name === 'before' ? 'gateway' : name, upstream, ...proxyArgs], env);
  targets.push({ name, child: s.child, url: s.first.url as string });
}

// --- Profiles: self time by part ---
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
/** The parts a sample's time goes to (the README's list), in the order the figures give them. */
const PART = {
  digests: 'digests (wire digest.ts, node:crypto)',
  http: 'node:http (parser, messages, agent)',
  net: 'node:net (sockets)',
  streams: 'node streams',
  events: 'node events',
  timers: 'node timers',
  ticks: 'node ticks, microtasks, async hooks',
  nodeOther: 'node other',
  dependencies: 'dependencies (node_modules)',
  wire: 'wire observer',
  recorder: 'span recorder (instrumentation)',
  detector: 'detector (detector, daemon)',
  tracer: 'detector-only tracer',
  forwarding: "gateway's own forwarding",
  packages: 'other project packages',
  other: 'other',
  gc: 'GC (main thread)',
  v8: 'V8 outside JavaScript (program)',
  writes: 'socket writes (writev, native)',
} as const;
const PARTS: readonly string[] = Object.values(PART);
const SOCKET_WRITES = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString']);

/** The part of a function with a file; undefined for a native one without (it takes its caller's). */
function partOfUrl(url: string): string | undefined {
  if (url === '') return undefined;
  if (url.startsWith('node:')) {
    const m = url.slice(5);
    if (m.startsWith('internal/crypto') || m === 'crypto') return PART.digests;
    if (m.startsWith('_http') || m === 'http' || m.startsWith('internal/http')) return PART.http;
    if (m === 'net' || m.startsWith('internal/stream_base') || m.startsWith('internal/net') || m === 'internal/dtrace')
      return PART.net;
    if (m.startsWith('internal/streams') || m === 'stream') return PART.streams;
    if (m === 'events' || m.startsWith('internal/event')) return PART.events;
    if (m.startsWith('internal/timers') || m === 'timers') return PART.timers;
    if (m.startsWith('internal/process/task_queues') || m.startsWith('internal/async_hooks') || m === 'async_hooks')
      return PART.ticks;
    return PART.nodeOther;
  }
  if (url.includes('/node_modules/')) return PART.dependencies;
  if (url.includes('/packages/wire/')) return url.includes('/digest.') ? PART.digests : PART.wire;
  if (url.includes('/packages/bounded/')) return PART.wire;
  if (url.includes('/packages/instrumentation/')) return PART.recorder;
  if (url.includes('/packages/detector/') || url.includes('/packages/daemon/')) return PART.detector;
  if (url.includes('detector-tracer.')) return PART.tracer;
  if (url.includes('/packages/gateway/') || url.includes('/.before/')) return PART.forwarding;
  if (url.includes('/packages/')) return PART.packages;
  return PART.other;
}

interface Tally {
  parts: Map<string, number>;
  functions: Map<string, { part: string; us: number }>;
  busy: number;
  cpuUs: number;
  units: number;
}
const tallies = new Map<string, Tally>();
for (const t of targets) tallies.set(t.name, { parts: new Map(), functions: new Map(), busy: 0, cpuUs: 0, units: 0 });

function add(t: Tally, p: Profile): void {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const partOf = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = partOf.get(id);
    if (known) return known;
    const n = byId.get(id)!;
    const f = n.callFrame.functionName;
    let part: string;
    if (f === '(garbage collector)') part = PART.gc;
    else if (f === '(program)') part = PART.v8;
    else if (f === '(idle)') part = '(idle)';
    else if (n.callFrame.url === '' && SOCKET_WRITES.has(f)) part = PART.writes;
    else {
      const own = partOfUrl(n.callFrame.url);
      const up = parent.get(id);
      part = own ?? (up === undefined ? PART.other : resolve(up));
    }
    partOf.set(id, part);
    return part;
  };
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i]!;
    const us = p.timeDeltas[i + 1] ?? INTERVAL_US;
    const part = resolve(id);
    if (part === '(idle)') continue;
    t.busy += us;
    t.parts.set(part, (t.parts.get(part) ?? 0) + us);
    const n = byId.get(id)!;
    const key = `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/packages\//, '').replace(/^file:\/\//, '')}`;
    const f = t.functions.get(key) ?? { part, us: 0 };
    f.us += us;
    t.functions.set(key, f);
  }
}

// --- Warm-up, then alternating rounds of the phase ---
const sessions = new Map<string, string[]>();
/** One phase's traffic through a proxy, `scale` of a round's. */
const run = (t: Target, scale: number) =>
  PHASE === 'json'
    ? client.ask('json', { base: t.url, sessions: sessions.get(t.name), requests: Math.round(JSON_CALLS * scale) })
    : client.ask('sse', {
        base: t.url,
        sessions: sessions.get(t.name),
        streams: Math.round(STREAMS * scale),
        events: EVENTS,
        rate: 0,
      });
for (const t of targets) {
  const s = (await client.ask<{ sessions: string[] }>('open', { base: t.url, n: CONCURRENCY })).sessions;
  sessions.set(t.name, s);
  await run(t, Math.max(0.25, 500 / UNITS));
}
const cpuOf = async (c: Child) => {
  const u = await c.ask<{ user: number; system: number }>('cpu');
  return u.user + u.system;
};
for (let round = 0; round < ROUNDS; round++) {
  for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
    await t.child.ask('profileStart', { intervalUs: INTERVAL_US });
    const c0 = await cpuOf(t.child);
    await run(t, 1);
    const c1 = await cpuOf(t.child);
    const { profile } = await t.child.ask<{ profile: Profile }>('profileStop');
    const tally = tallies.get(t.name)!;
    tally.cpuUs += c1 - c0;
    tally.units += UNITS;
    add(tally, profile);
  }
  console.log(
    `round ${round + 1}/${ROUNDS}: ${targets.map((t) => `${t.name} ${(tallies.get(t.name)!.cpuUs / tallies.get(t.name)!.units).toFixed(PHASE === 'json' ? 0 : 1)} µs`).join(', ')}`,
  );
}
for (const t of targets) await client.ask('close', { base: t.url, sessions: sessions.get(t.name) });

// --- The table: µs per request or event by part, gateway − bare (and before − gateway) ---
const perRequest = (name: string, part: string) => {
  const t = tallies.get(name)!;
  return ((t.parts.get(part) ?? 0) / t.busy) * (t.cpuUs / t.units);
};
const names = targets.map((t) => t.name);
const parts = [...new Set(names.flatMap((n) => [...tallies.get(n)!.parts.keys()]))];
parts.sort(
  (a, b) => perRequest('gateway', b) - perRequest('bare', b) - (perRequest('gateway', a) - perRequest('bare', a)),
);
const f1 = (x: number) => x.toFixed(PHASE === 'json' ? 1 : 2);
const header = [
  'part',
  ...names.map((n) => `${n} µs`),
  'gateway − bare',
  ...(names.includes('before') ? ['before − gateway'] : []),
];
const traffic =
  PHASE === 'json' ? `${JSON_CALLS} requests` : `${STREAMS} streams of ${EVENTS} events and a result, ${UNITS} events`;
console.log(
  `\nCPU per ${UNIT} by part (${ROUNDS} rounds × ${traffic}, ${CONCURRENCY} sessions, sampled every ${INTERVAL_US} µs)\n`,
);
console.log(`| ${header.join(' | ')} |\n| ${header.map(() => '---').join(' | ')} |`);
const row = (label: string, value: (n: string) => number) => {
  const cells = names.map((n) => f1(value(n)));
  const gap = value('gateway') - value('bare');
  const extra = names.includes('before') ? [f1(value('before') - value('gateway'))] : [];
  console.log(`| ${label} | ${cells.join(' | ')} | ${f1(gap)} | ${extra.join(' | ')}${extra.length ? ' |' : ''}`);
};
for (const part of parts) row(part, (n) => perRequest(n, part));
row(`**all (process CPU per ${UNIT})**`, (n) => tallies.get(n)!.cpuUs / tallies.get(n)!.units);
for (const n of names) {
  const t = tallies.get(n)!;
  console.log(
    `${n}: busy samples ${(t.busy / 1e6).toFixed(2)} s of main thread, CPU ${(t.cpuUs / 1e6).toFixed(2)} s (all threads)`,
  );
}

console.log(
  `\nThe gateway's top ${TOP} functions by self time, µs per ${UNIT}, and the same functions' in the bare proxy:\n`,
);
const perUnit = (name: string, key: string) => {
  const t = tallies.get(name)!;
  return ((t.functions.get(key)?.us ?? 0) * t.cpuUs) / t.units / t.busy;
};
for (const [key, f] of [...tallies.get('gateway')!.functions].sort((a, b) => b[1].us - a[1].us).slice(0, TOP))
  console.log(
    `${f1(perUnit('gateway', key)).padStart(7)} ${f1(perUnit('bare', key)).padStart(7)}  ${f.part.padEnd(40)} ${key}`,
  );

// For `pnpm bench` (docs/benchmarks.md): every part, in a fixed order, as the gateway's µs against the
// bare proxy's in the same rounds; a part no sample fell in is 0. Then the whole, the process's CPU.
const overBare = (part: string) => f1(perRequest('gateway', part) - perRequest('bare', part));
for (const part of PARTS)
  figure({
    bench: 'gateway-parts',
    name: `${PHASE}: ${part}`,
    value: perRequest('gateway', part),
    unit: `µs/${PHASE === 'json' ? 'request' : 'event'}`,
    reference: { name: 'bare Node proxy, same part', value: perRequest('bare', part), unit: 'µs' },
    note: `gateway − bare ${overBare(part)} µs`,
  });
const whole = (name: string) => tallies.get(name)!.cpuUs / tallies.get(name)!.units;
figure({
  bench: 'gateway-parts',
  name: `${PHASE}: all parts (process CPU)`,
  value: whole('gateway'),
  unit: `µs/${PHASE === 'json' ? 'request' : 'event'}`,
  reference: { name: 'bare Node proxy', value: whole('bare'), unit: 'µs' },
  ratio: whole('gateway') / whole('bare'),
  note: `gateway − bare ${f1(whole('gateway') - whole('bare'))} µs; with the sampling profiler running (the gateway benchmark's figure is the one without); sampled every ${INTERVAL_US} µs over ${ROUNDS} rounds × ${traffic}`,
});

for (const t of [...targets.map((x) => x.child), client, up.child]) t.proc.disconnect();
