/**
 * The gateway against a bare Node reverse proxy and Debian's nginx, side by side in one run, on the
 * same loopback traffic from the same MCP-like upstream (bench/upstream-server.ts). Two bare proxies:
 * node:http's client with a keep-alive agent (the figures' reference) and undici's pool (`bare-undici`,
 * its CPU in the figures' notes), so that each run shows whether the plain Node proxy could be faster.
 *
 * - CPU per request (tools/call answered with JSON) and per SSE event (tools/call answered by a stream
 *   of `--events` progress notifications and its result), unpaced, `--concurrency` sessions at once:
 *   each proxy's own process CPU (user + system, all threads) over the phase, divided by the requests
 *   or the events (a stream's request and headers are in its events' share). Node proxies report
 *   process.cpuUsage() over IPC; nginx's master and worker are read from /proc (clock ticks).
 * - Latency added, p50 and p99: SSE progress events paced at `--rate` events/s in all, evenly
 *   (`--paced-streams` streams at once, one pacer upstream), each carrying the upstream's monotonic clock
 *   when written, read against the same clock by the client when it arrives; and JSON calls sent at `--json-rate`/s, timed round trip. The
 *   same traffic direct to the upstream is the reference: added = a proxy's percentile minus direct's.
 * - Memory per open stream: `--open` sessions, each with one SSE stream the upstream holds open, at once
 *   through one proxy; its heap (after full GCs, code space left out, array buffers in) and RSS against
 *   its baseline, over the streams. Then every session is DELETEd (the upstream ends its stream) and
 *   the heap read again: what stays, per session.
 * - mcp_server_operation_duration_seconds: its observations over one more phase of `--streams` streams
 *   through the gateway, beyond one per request (per SSE event: none, by count, not by time); and its
 *   CPU per request (operation-metrics.ts): the built-in detector's path for a request span with the
 *   histogram against the same path without it, `--operations` spans a round, alternating, in this
 *   process.
 *
 * Rounds alternate the proxies and flip their order every round; the CPU ratio is the median of the
 * rounds' ratios (gateway / bare), the latency the percentiles of all rounds' events, with the rounds'
 * spread. Upstream, each proxy and the load client run in processes of their own.
 *
 *   node --expose-gc --import tsx bench/proxy.bench.ts [--rounds 6] [--json 3000] [--streams 300]
 *     [--events 100] [--concurrency 8] [--rate 1000] [--paced-seconds 3] [--open 10000] [--operations 200000]
 *     [--enforce] [--smoke]
 *
 * BENCH_PROF=1 writes CPU profiles (--cpu-prof) of the gateway and bare proxy processes to
 * bench/profiles/. BENCH_BEFORE=<dir> runs one more gateway, `before`, from the gateway build in <dir>
 * (another commit's, e.g. `git archive <commit> src | tar -x -C .before`, built with
 * `tsc -p .before/tsconfig.json` (a tsconfig extending the base one, rootDir src, outDir dist), then
 * BENCH_BEFORE=$PWD/.before/dist), in the same rounds: a change's before and after in one run. The
 * gateways run their build, so run `npx tsc -b` (or `pnpm bench`) first.
 */
import { execFileSync, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { figure } from '../../../bench/figure.js';
import { startNginx, type Nginx } from './nginx.js';
import { measureOperationCost } from './operation-metrics.js';
import { Child } from './child.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '6' },
    json: { type: 'string', default: '3000' },
    streams: { type: 'string', default: '300' },
    events: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '8' },
    rate: { type: 'string', default: '1000' },
    'json-rate': { type: 'string', default: '500' },
    'paced-streams': { type: 'string', default: '10' },
    'paced-seconds': { type: 'string', default: '3' },
    open: { type: 'string', default: '10000' },
    operations: { type: 'string', default: '200000' },
    enforce: { type: 'boolean', default: false },
    smoke: { type: 'boolean', default: false },
  },
});
const smoke = values.smoke;
const ROUNDS = smoke ? 2 : Number(values.rounds);
const JSON_CALLS = smoke ? 40 : Number(values.json);
const STREAMS = smoke ? 8 : Number(values.streams);
const EVENTS = smoke ? 20 : Number(values.events);
const CONCURRENCY = smoke ? 4 : Number(values.concurrency);
const RATE = Number(values.rate);
const JSON_RATE = Number(values['json-rate']);
const PACED_STREAMS = smoke ? 4 : Number(values['paced-streams']);
const PACED_SECONDS = smoke ? 0.2 : Number(values['paced-seconds']);
/** Closed sockets and ended streams settle before a heap is read. */
const SETTLE_MS = 500;
let OPEN = smoke ? 100 : Number(values.open);
const OPERATIONS = smoke ? 20_000 : Number(values.operations);
const WANTED_OPEN = OPEN;

// --- File descriptors: a proxy holds two sockets per open stream (client and upstream side). ---
function nofile(): { soft: number; hard: number } {
  const line = /Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/.exec(readFileSync('/proc/self/limits', 'utf8'));
  const n = (s: string | undefined) => (s === undefined || s === 'unlimited' ? Infinity : Number(s));
  return { soft: n(line?.[1]), hard: n(line?.[2]) };
}
function raiseNofile(to: number): boolean {
  try {
    execFileSync('prlimit', ['--pid', String(process.pid), `--nofile=${to}:${Math.max(to, nofile().hard)}`], {
      stdio: 'ignore',
    });
    return nofile().soft >= to;
  } catch {
    return false;
  }
}
let fdNote = '';
{
  const need = 2 * OPEN + 1024;
  // Children inherit the limit: the orchestrator raises its own first (prlimit; needs the right to raise the hard limit).
  if (nofile().soft < need && !raiseNofile(need)) {
    const { hard } = nofile();
    if (Number.isFinite(hard)) raiseNofile(hard);
    const limit = nofile().soft;
    if (limit < need) {
      OPEN = Math.max(10, Math.floor((limit - 1024) / 2));
      fdNote = `; ${OPEN} streams, not ${WANTED_OPEN}: open-file limit ${limit} (a proxy needs 2 per stream; raise it with ulimit -n or prlimit)`;
    }
  }
}

// --- Children ---
const execArgv = ['--expose-gc', '--import', 'tsx'];
const here = import.meta.dirname;

async function start(script: string, args: string[], extra: string[] = []): Promise<[Child, Record<string, unknown>]> {
  const proc = fork(join(here, script), args, { execArgv: [...execArgv, ...extra], stdio: 'inherit' });
  const first = await new Promise<Record<string, unknown>>((resolve, reject) => {
    proc.once('message', resolve);
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return [new Child(proc), first];
}

const prof = process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(here, 'profiles')}`] : [];
const [upstreamChild, up] = await start('upstream-server.ts', []);
const upstream = up.url as string;
const [client] = await start('load-client.ts', []);
const proxyArgs = ['--max-streams', String(OPEN + 1000), ...(values.enforce ? ['--enforce'] : [])];
const [gatewayChild, gw] = await start('proxy-child.ts', ['gateway', upstream, ...proxyArgs], prof);
const [bareChild, bare] = await start('proxy-child.ts', ['bare', upstream], prof);
const [undiciChild, bareUndici] = await start('proxy-child.ts', ['bare-undici', upstream], prof);
const beforeSrc = process.env.BENCH_BEFORE;
const [beforeChild, before] = beforeSrc ? await startBefore(beforeSrc) : [undefined, undefined];
async function startBefore(source: string): Promise<[Child, Record<string, unknown>]> {
  process.env.BENCH_GATEWAY_DIST = source;
  try {
    return await start('proxy-child.ts', ['gateway', upstream, ...proxyArgs], prof);
  } finally {
    delete process.env.BENCH_GATEWAY_DIST;
  }
}
// Two connections per open stream, and room for the sessions being set up and idle keep-alive ones.
const nginx: Nginx | { missing: string } = await startNginx(upstream, 3 * OPEN + 1024);
const nginxMissing = 'missing' in nginx ? nginx.missing : undefined;
// A run that fails leaves no nginx behind (the Node children end with their IPC channel).
if (!('missing' in nginx)) process.once('exit', () => nginx.stop());

interface Target {
  name: 'gateway' | 'bare' | 'nginx' | 'before' | 'bare-undici';
  url: string;
  cpuUs(): Promise<number>;
}
const nodeCpu = (c: Child) => async () => {
  const u = await c.ask<{ user: number; system: number }>('cpu');
  return u.user + u.system;
};
const targets: Target[] = [
  { name: 'gateway', url: gw.url as string, cpuUs: nodeCpu(gatewayChild) },
  { name: 'bare', url: bare.url as string, cpuUs: nodeCpu(bareChild) },
];
if (!('missing' in nginx)) targets.push({ name: 'nginx', url: nginx.url, cpuUs: async () => nginx.cpuUs() });
targets.push({ name: 'bare-undici', url: bareUndici.url as string, cpuUs: nodeCpu(undiciChild) });
if (beforeChild) targets.push({ name: 'before', url: before!.url as string, cpuUs: nodeCpu(beforeChild) });

const open = async (base: string, n: number) =>
  (await client.ask<{ sessions: string[] }>('open', { base, n })).sessions;
const close = (base: string, sessions: string[]) => client.ask('close', { base, sessions });

// --- Warm-up, not measured: every path each proxy takes, compiled before the first round. ---
for (const t of [...targets, { name: 'direct', url: upstream }]) {
  const sessions = await open(t.url, CONCURRENCY);
  await client.ask('json', { base: t.url, sessions, requests: Math.max(50, JSON_CALLS / 10) });
  await client.ask('sse', { base: t.url, sessions, streams: Math.max(8, STREAMS / 10), events: EVENTS, rate: 0 });
  await close(t.url, sessions);
}

// --- CPU and latency, alternating rounds ---
type Name = Target['name'] | 'direct';
const cpu: Record<string, { json: number[]; sse: number[] }> = {};
const eventDelays: Record<string, number[][]> = {};
const jsonTimes: Record<string, number[][]> = {};
for (const t of targets) cpu[t.name] = { json: [], sse: [] };
const pacedCount = Math.max(PACED_STREAMS, Math.round((PACED_SECONDS * RATE) / EVENTS));
const jsonPaced = Math.max(10, Math.round(PACED_SECONDS * JSON_RATE));
const started = Date.now();

for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? targets : [...targets].reverse();
  for (const t of order) {
    const sessions = await open(t.url, CONCURRENCY);
    const c0 = await t.cpuUs();
    await client.ask('json', { base: t.url, sessions, requests: JSON_CALLS });
    const c1 = await t.cpuUs();
    await client.ask('sse', { base: t.url, sessions, streams: STREAMS, events: EVENTS, rate: 0 });
    const c2 = await t.cpuUs();
    await close(t.url, sessions);
    cpu[t.name]!.json.push((c1 - c0) / JSON_CALLS);
    cpu[t.name]!.sse.push((c2 - c1) / (STREAMS * (EVENTS + 1)));
  }
  const paced: { name: Name; url: string }[] = [{ name: 'direct', url: upstream }, ...targets];
  for (const t of round % 2 === 0 ? paced : paced.reverse()) {
    const sessions = await open(t.url, PACED_STREAMS);
    const { delays } = await client.ask<{ delays: number[] }>('sse', {
      base: t.url,
      sessions,
      streams: pacedCount,
      events: EVENTS,
      rate: RATE,
      latency: true,
    });
    const { times } = await client.ask<{ times: number[] }>('jsonPaced', {
      base: t.url,
      sessions,
      requests: jsonPaced,
      rate: JSON_RATE,
    });
    await close(t.url, sessions);
    (eventDelays[t.name] ??= []).push(delays);
    (jsonTimes[t.name] ??= []).push(times);
  }
  console.log(`round ${round + 1}/${ROUNDS} done (${((Date.now() - started) / 1000).toFixed(0)} s)`);
}

// --- mcp_server_operation_duration_seconds through the gateway: what a phase of streams adds to it ---
const observedIn = async (): Promise<number> => (await gatewayChild.ask<{ observed: number }>('operations')).observed;
let operationStreams: number;
let operationsObserved: number;
{
  const sessions = await open(gw.url as string, CONCURRENCY);
  const before = await observedIn();
  await client.ask('sse', { base: gw.url, sessions, streams: STREAMS, events: EVENTS, rate: 0 });
  operationsObserved = (await observedIn()) - before;
  operationStreams = STREAMS;
  await close(gw.url as string, sessions);
}

// --- Memory per open stream, and what stays after DELETE ---
interface Memory {
  perStream: number;
  rssPerStream: number;
  kept: number;
  sessionsLive?: number;
  sessionsAfter?: number;
}
const memory: Record<string, Memory> = {};
async function holdAndRelease(base: string, n: number): Promise<void> {
  await client.ask('hold', { base, n });
  await client.ask('release', { base });
}
async function measureMemory(t: Target): Promise<void> {
  const child =
    t.name === 'gateway'
      ? gatewayChild
      : t.name === 'bare'
        ? bareChild
        : t.name === 'before'
          ? beforeChild
          : t.name === 'bare-undici'
            ? undiciChild
            : undefined;
  const read = async () => {
    if (child) return child.ask<{ heap: number; rss: number }>('heap');
    await sleep(200);
    const rss = (nginx as Nginx).workersRss();
    return { heap: rss, rss };
  };
  // Warm-up of the paths measured (it leaves up to 200 idle upstream connections, as the release does 256), then the baseline.
  await holdAndRelease(t.url, Math.min(200, OPEN));
  await sleep(SETTLE_MS);
  const base = await read();
  await client.ask('hold', { base: t.url, n: OPEN });
  const live = await read();
  const liveStats = t.name === 'gateway' ? await gatewayChild.ask<{ sessions: number }>('stats') : undefined;
  await client.ask('release', { base: t.url });
  await sleep(SETTLE_MS);
  const after = await read();
  const afterStats = t.name === 'gateway' ? await gatewayChild.ask<{ sessions: number }>('stats') : undefined;
  memory[t.name] = {
    perStream: (live.heap - base.heap) / OPEN,
    rssPerStream: (live.rss - base.rss) / OPEN,
    kept: (after.heap - base.heap) / OPEN,
    ...(liveStats ? { sessionsLive: liveStats.sessions, sessionsAfter: afterStats!.sessions } : {}),
  };
  console.log(`memory: ${t.name} done (${((Date.now() - started) / 1000).toFixed(0)} s)`);
}
let nginxMemoryFailed: string | undefined;
for (const t of targets) {
  try {
    await measureMemory(t);
  } catch (e) {
    // nginx's row says why; a Node proxy's failure fails the run.
    if (t.name !== 'nginx') throw e;
    nginxMemoryFailed = `${(e as Error).message.split('\n')[0]} (${(nginx as Nginx).errors()})`;
    console.log(`memory: nginx failed: ${nginxMemoryFailed}`);
  }
}

// --- Figures ---
const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
const mean = (a: number[]) => sum(a) / a.length;
const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const range = (a: number[]): [number, number] => [Math.min(...a), Math.max(...a)];
function pct(a: number[], p: number): number {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.max(0, Math.ceil(p * s.length) - 1)]!;
}
/** Percentile p of a target's events minus direct's: over all rounds, and each round's. */
function added(data: Record<string, number[][]>, name: Name, p: number): { value: number; range: [number, number] } {
  const all = pct(data[name]!.flat(), p) - pct(data.direct!.flat(), p);
  const perRound = data[name]!.map((d, i) => pct(d, p) - pct(data.direct![i]!, p));
  return { value: all, range: range(perRound) };
}
const has = (n: string) => targets.some((t) => t.name === n);
const ratiosOf = (name: string, to: string, kind: 'json' | 'sse') =>
  cpu[name]![kind].map((g, i) => g / cpu[to]![kind][i]!);
const ratios = (kind: 'json' | 'sse') => ratiosOf('gateway', 'bare', kind);
const nginxNote = (f: (n: 'nginx') => string) => (has('nginx') ? f('nginx') : `nginx: ${nginxMissing}`);
const fmt = (n: number, d = 1) => n.toFixed(d);

const rows = [...targets.map((t) => t.name), 'direct'].map((name) => {
  const c = cpu[name];
  const m = memory[name];
  return {
    proxy: name,
    'µs CPU/JSON req': c ? fmt(mean(c.json)) : '',
    'µs CPU/SSE event': c ? fmt(mean(c.sse), 2) : '',
    'event p50 µs': fmt(pct(eventDelays[name]!.flat(), 0.5), 0),
    'event p99 µs': fmt(pct(eventDelays[name]!.flat(), 0.99), 0),
    'JSON p50 µs': fmt(pct(jsonTimes[name]!.flat(), 0.5), 0),
    'JSON p99 µs': fmt(pct(jsonTimes[name]!.flat(), 0.99), 0),
    'heap B/stream': m && name !== 'nginx' ? fmt(m.perStream, 0) : '',
    'RSS B/stream': m ? fmt(m.rssPerStream, 0) : '',
    'heap B kept/DELETEd': m && name !== 'nginx' ? fmt(m.kept, 0) : '',
  };
});
console.log(
  `\n${ROUNDS} alternating rounds; per round and proxy: ${JSON_CALLS} JSON calls and ${STREAMS} SSE streams of ${EVENTS} events + result, ` +
    `${CONCURRENCY} sessions at once; latency: ${RATE} events/s (${PACED_STREAMS} streams at once, paced by one timer upstream) ` +
    `and ${JSON_RATE} JSON calls/s for ${PACED_SECONDS} s; memory: ${OPEN} streams open at once${fdNote}. Gateway ${values.enforce ? 'enforcing' : 'observing'}, detector on. Node ${process.version}.` +
    (nginxMissing ? `\nnginx: ${nginxMissing}` : ''),
);
console.table(rows);
const memoryGw = memory.gateway!;
console.log(
  `gateway sessions observed: ${memoryGw.sessionsLive} with ${OPEN} streams open, ${memoryGw.sessionsAfter} after every session was DELETEd`,
);

if (has('before'))
  for (const kind of ['json', 'sse'] as const) {
    const r = (name: string) => ratiosOf(name, 'bare', kind).map((x) => fmt(x, 2));
    console.log(
      `${kind} CPU / bare, by round: before ${r('before').join(' ')} (median ${fmt(median(ratiosOf('before', 'bare', kind)), 2)}); gateway ${r('gateway').join(' ')} (median ${fmt(median(ratiosOf('gateway', 'bare', kind)), 2)})`,
    );
  }

const rangeOf = (a: number[]) => range(a);
const cpuFigure = (kind: 'json' | 'sse') => {
  const unit = kind === 'json' ? 'µs CPU per JSON request' : 'µs CPU per SSE event';
  const r = ratios(kind);
  figure({
    bench: 'gateway',
    name: `gateway, proxy process CPU per ${kind === 'json' ? 'request answered with JSON' : `SSE event (streams of ${EVENTS} events)`}, median of round ratios`,
    value: mean(cpu.gateway![kind]),
    unit,
    range: rangeOf(cpu.gateway![kind]),
    reference: {
      name: 'bare Node proxy (node:http piped to node:http)',
      value: mean(cpu.bare![kind]),
      unit,
      range: rangeOf(cpu.bare![kind]),
    },
    ratio: median(r),
    target: kind === 'sse' ? 'ratio 1.15' : 'ratio 1.3',
    note: `round ratios ${fmt(Math.min(...r), 2)}–${fmt(Math.max(...r), 2)}; ${nginxNote((n) => `nginx (1 worker, /proc ticks), same run: ${fmt(mean(cpu[n]![kind]), 2)} ${unit}, gateway / nginx ${fmt(median(ratiosOf('gateway', n, kind)), 1)}, bare / nginx ${fmt(median(ratiosOf('bare', n, kind)), 1)}`)}; bare with undici's pool (proxy-child.ts bare-undici), same run: ${fmt(mean(cpu['bare-undici']![kind]), 2)} ${unit}, round ratios to the node:http bare ${ratiosOf(
      'bare-undici',
      'bare',
      kind,
    )
      .map((x) => fmt(x, 2))
      .join(' ')}; ${ROUNDS} alternating rounds`,
  });
};
cpuFigure('json');
cpuFigure('sse');

const latencyFigure = (what: 'event' | 'json', p: number) => {
  const data = what === 'event' ? eventDelays : jsonTimes;
  const g = added(data, 'gateway', p);
  const b = added(data, 'bare', p);
  const pName = p === 0.5 ? 'p50' : 'p99';
  figure({
    bench: 'gateway',
    name:
      what === 'event'
        ? `gateway, latency added per SSE event at ${RATE} events/s, ${pName}`
        : `gateway, latency added per JSON request at ${JSON_RATE}/s, ${pName}`,
    value: g.value / 1000,
    unit: 'ms',
    range: [g.range[0] / 1000, g.range[1] / 1000],
    reference: {
      name: 'bare Node proxy, added',
      value: b.value / 1000,
      unit: 'ms',
      range: [b.range[0] / 1000, b.range[1] / 1000],
    },
    ...(what === 'event' && p === 0.99 ? { target: 'under 1 ms' } : {}),
    ...(what === 'json' && p === 0.99 ? { target: 'bare + 0.5 ms at most' } : {}),
    note: `${what === 'json' ? `gateway − bare ${fmt((g.value - b.value) / 1000, 3)} ms; ` : ''}direct to the upstream ${pName}: ${fmt(pct(data.direct!.flat(), p) / 1000, 3)} ms; ${nginxNote((n) => `nginx added: ${fmt(added(data, n, p).value / 1000, 3)} ms`)}; ${data.gateway!.flat().length} ${what === 'event' ? 'events' : 'requests'} a proxy over ${ROUNDS} rounds (range: rounds)`,
  });
};
latencyFigure('event', 0.5);
latencyFigure('event', 0.99);
latencyFigure('json', 0.5);
latencyFigure('json', 0.99);

figure({
  bench: 'gateway',
  name: `gateway, heap per open SSE stream, ${OPEN} open at once (one session each)`,
  value: memoryGw.perStream,
  unit: 'bytes',
  reference: { name: 'bare Node proxy, heap per open stream', value: memory.bare!.perStream, unit: 'bytes' },
  target: 'bare + 4 KB at most',
  note: `gateway − bare ${fmt(memoryGw.perStream - memory.bare!.perStream, 0)} bytes; heap (code space left out) + array buffers after GC; RSS per stream: gateway ${fmt(memoryGw.rssPerStream, 0)}, bare ${fmt(memory.bare!.rssPerStream, 0)}, ${nginxNote((n) => (memory[n] ? `nginx worker ${fmt(memory[n].rssPerStream, 0)}` : `nginx: ${nginxMemoryFailed}`))} bytes${fdNote}`,
});
figure({
  bench: 'gateway',
  name: `gateway, heap kept per DELETEd session (${OPEN} sessions, each with a stream, DELETEd)`,
  value: memoryGw.kept,
  unit: 'bytes',
  reference: { name: 'bare Node proxy, kept per DELETEd session', value: memory.bare!.kept, unit: 'bytes' },
  target: 'nothing kept',
  note: `against the heap before the sessions opened; sessions the gateway still observes after the DELETEs: ${memoryGw.sessionsAfter} of ${memoryGw.sessionsLive}`,
});

// The histogram per SSE event, by count: each stream is one request, whatever its events.
figure({
  bench: 'gateway',
  name: `gateway, mcp_server_operation_duration_seconds observations per SSE event beyond one per request (${operationStreams} streams of ${EVENTS} events and a result)`,
  value: (operationsObserved - operationStreams) / (operationStreams * EVENTS),
  unit: 'observations per SSE event',
  reference: {
    name: 'observations per request (each stream is one tools/call)',
    value: operationsObserved / operationStreams,
    unit: 'observations per request',
  },
  target: 'nothing per SSE event',
  note: `${operationsObserved} observations for ${operationStreams} requests and ${operationStreams * EVENTS} progress events, counted in the gateway's /metrics before and after the phase`,
});

// The histogram per request, side by side in this process (the children are idle).
const cost = await measureOperationCost(ROUNDS, OPERATIONS);
const costAdded = cost.withHistogram.map((w, i) => w - cost.without[i]!);
figure({
  bench: 'gateway',
  name: `gateway, CPU per request of mcp_server_operation_duration_seconds: the built-in detector's request span path with the histogram, median of rounds' differences`,
  value: median(costAdded),
  unit: 'µs CPU per request',
  range: range(costAdded),
  reference: {
    name: 'the same path without the histogram',
    value: median(cost.without),
    unit: 'µs CPU per request',
    range: range(cost.without),
  },
  ratio: median(cost.withHistogram.map((w, i) => w / cost.without[i]!)),
  target: 'under 2 µs per request',
  note: `with the histogram ${fmt(median(cost.withHistogram), 3)} µs per request; ${cost.requests} request spans a round (${cost.series} label sets), ${ROUNDS} alternating rounds`,
});

// --- Done: stop what this run started ---
if (!('missing' in nginx)) nginx.stop();
for (const c of [gatewayChild, bareChild, undiciChild, ...(beforeChild ? [beforeChild] : []), client, upstreamChild])
  c.proc.disconnect();
await Promise.all(
  [gatewayChild, bareChild, undiciChild, ...(beforeChild ? [beforeChild] : [])].map(
    (c) => new Promise((resolve) => (c.proc.exitCode !== null ? resolve(0) : c.proc.once('exit', resolve))),
  ),
);
