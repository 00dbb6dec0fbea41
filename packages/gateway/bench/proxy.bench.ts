/**
 * The gateway (observing, built-in detector on) against a bare Node reverse proxy (node:http piped to
 * node:http), on the same loopback MCP traffic from one upstream; upstream, client and each proxy in a
 * process of its own (parts.ts), alternating rounds:
 *
 * - CPU per request answered with JSON, and per SSE event (streams of `--events` progress events and
 *   the result, a stream's request in its events' share): each proxy's process CPU over the phase.
 * - Latency added, p99: SSE events paced at 1,000 events/s, each carrying the upstream's clock; JSON
 *   calls at 500/s, their round trip. Added = a proxy's p99 minus the same traffic direct to the upstream.
 * - Heap per open SSE stream with `--open` open at once, and kept per DELETEd session (harness heap probe).
 * - mcp_server_operation_duration_seconds: its observations over a phase of streams (one per request,
 *   none per SSE event), and its CPU per request (operation-metrics.ts, in this process).
 *
 * Where a JSON request's or an SSE event's CPU goes: gateway-instructions (instructions.bench.ts).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Child, alternate, arg, compare, compared, figure, median, percentile, range } from '../../../bench/harness.js';
import { measureOperationCost } from './operation-metrics.js';

const ROUNDS = arg('rounds', 6, 2);
const JSON_CALLS = arg('json', 3000, 40);
const STREAMS = arg('streams', 300, 8);
const EVENTS = arg('events', 100, 20);
const CONCURRENCY = arg('concurrency', 8, 4);
const PACED_SECONDS = arg('paced-seconds', 3, 0.2);
let OPEN = arg('open', 10_000, 100);
const OPERATIONS = arg('operations', 200_000, 20_000);
const [RATE, JSON_RATE] = [1000, 500];

// A proxy holds two sockets per open stream: raise the open-file limit (children inherit it), else open fewer.
const softLimit = () =>
  Number(/Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? Infinity);
if (softLimit() < 3 * OPEN + 1024)
  try {
    execFileSync('prlimit', ['--pid', String(process.pid), `--nofile=${3 * OPEN + 1024}`], { stdio: 'ignore' });
  } catch {
    OPEN = Math.max(10, Math.floor((softLimit() - 1024) / 3));
  }

const here = import.meta.dirname + '/parts.ts';
const upstream = (await Child.start(here, ['upstream'])).first.url as string;
const client = await Child.start(here, ['client']);
const proxies = {
  gateway: await Child.start(here, ['gateway', upstream, String(OPEN + 1000)]),
  bare: await Child.start(here, ['bare', upstream]),
};
const url = (p: 'gateway' | 'bare' | 'direct') => (p === 'direct' ? upstream : (proxies[p].first.url as string));
const open = async (base: string, n: number) =>
  (await client.ask<{ sessions: string[] }>('open', { base, n })).sessions;

// CPU per JSON request and per SSE event, and latency, in alternating rounds.
const cpu = {
  json: { gateway: [] as number[], bare: [] as number[] },
  sse: { gateway: [] as number[], bare: [] as number[] },
};
const delays: Record<string, number[]> = { direct: [], gateway: [], bare: [] };
const times: Record<string, number[]> = { direct: [], gateway: [], bare: [] };
await alternate(['gateway', 'bare'] as const, ROUNDS, async (p, r) => {
  const base = url(p);
  const sessions = await open(base, CONCURRENCY);
  const json = await proxies[p].cpuDuring(() => client.ask('json', { base, sessions, n: r < 0 ? 100 : JSON_CALLS }));
  const sse = await proxies[p].cpuDuring(() =>
    client.ask('sse', { base, sessions, n: r < 0 ? 10 : STREAMS, events: EVENTS }),
  );
  await client.ask('close', { base, sessions });
  if (r >= 0) [cpu.json[p][r], cpu.sse[p][r]] = [json / JSON_CALLS, sse / (STREAMS * (EVENTS + 1))];
  return 0;
});
await alternate(['direct', 'gateway', 'bare'] as const, ROUNDS, async (p, r) => {
  const base = url(p);
  const sessions = await open(base, 10);
  const n = Math.max(10, Math.round((PACED_SECONDS * RATE) / EVENTS));
  const paced = { base, sessions, latency: true };
  const sse = await client.ask<{ delays: number[] }>('sse', { ...paced, n, events: EVENTS, rate: RATE });
  const json = await client.ask<{ times: number[] }>('jsonPaced', {
    ...paced,
    n: PACED_SECONDS * JSON_RATE,
    rate: JSON_RATE,
  });
  if (r < 0) return 0;
  delays[p]!.push(...sse.delays);
  times[p]!.push(...json.times);
  await client.ask('close', { base, sessions });
  return 0;
});

// The operation histogram's observations over a phase of streams through the gateway.
const observed = async () => (await proxies.gateway.ask<{ observed: number }>('operations')).observed;
const opSessions = await open(url('gateway'), CONCURRENCY);
const observedBefore = await observed();
await client.ask('sse', { base: url('gateway'), sessions: opSessions, n: STREAMS, events: EVENTS });
const observations = (await observed()) - observedBefore;
await client.ask('close', { base: url('gateway'), sessions: opSessions });

// Heap per open stream, and kept per DELETEd session.
const memory: Record<string, { perStream: number; kept: number; keptFirst: number; sessionsAfter: number }> = {};
for (const p of ['gateway', 'bare'] as const) {
  const heap = async () => {
    await sleep(500); // closed sockets and ended streams settle first
    return (await proxies[p].ask<{ heap: number }>('heap')).heap;
  };
  await client.ask('hold', { base: url(p), n: Math.min(200, OPEN) });
  await client.ask('release', { base: url(p) });
  const base = await heap();
  await client.ask('hold', { base: url(p), n: OPEN });
  const live = await heap();
  await client.ask('release', { base: url(p) });
  const after = await heap();
  // Kept as a slope: N more sessions DELETEd, so a bounded window the first N filled does not count.
  await client.ask('hold', { base: url(p), n: OPEN });
  await client.ask('release', { base: url(p) });
  memory[p] = {
    perStream: (live - base) / OPEN,
    kept: ((await heap()) - after) / OPEN,
    keptFirst: (after - base) / OPEN,
    sessionsAfter: (await proxies[p].ask<{ sessions: number }>('stats')).sessions,
  };
}
await Child.stopAll();

// --- Results ---
const fmt = (n: number, d = 2) => n.toFixed(d);
const held = 'the observation (wire observer, digests, detector, recorder): gateway-instructions gives each part';
for (const [kind, unit, bound] of [
  ['json', 'µs CPU per JSON request', 1.3],
  ['sse', 'µs CPU per SSE event', 1.15],
] as const) {
  const c = compare(cpu[kind].gateway, cpu[kind].bare);
  figure({
    id: `gateway-${kind}`,
    what:
      kind === 'json'
        ? 'gateway, proxy CPU per request answered with JSON'
        : `gateway, proxy CPU per SSE event (streams of ${EVENTS})`,
    target: { text: `≤ ${bound}x a bare node:http proxy`, bound, dir: '<=' },
    ...compared(c, 'bare node:http proxy', unit),
    heldBy: held,
    note: `${ROUNDS} alternating rounds, ${CONCURRENCY} sessions`,
  });
}
const added = (data: Record<string, number[]>, p: string) =>
  (percentile(data[p]!, 0.99) - percentile(data.direct!, 0.99)) / 1000;
figure({
  id: 'gateway-sse-latency',
  what: `gateway, latency added per SSE event at ${RATE} events/s, p99`,
  target: { text: '< 1 ms', bound: 1, dir: '<=', on: 'ours' },
  reference: { what: 'bare proxy, added', value: added(delays, 'bare'), unit: 'ms' },
  ours: { value: added(delays, 'gateway'), unit: 'ms' },
  heldBy: 'event-loop stalls of the gateway under the paced load (its GC and the observation)',
  note: `direct p99 ${fmt(percentile(delays.direct!, 0.99) / 1000)} ms; ${delays.gateway!.length} events`,
});
figure({
  id: 'gateway-json-latency',
  what: `gateway, latency added per JSON request at ${JSON_RATE}/s, p99, beyond the bare proxy's`,
  target: { text: '≤ bare + 0.5 ms', bound: 0.5, dir: '<=', on: 'ours' },
  reference: { what: 'bare proxy, added', value: added(times, 'bare'), unit: 'ms' },
  ours: { value: added(times, 'gateway') - added(times, 'bare'), unit: 'ms' },
  heldBy: "the observation's CPU per request (gateway-json) queues paced requests behind each other",
  note: `gateway added ${fmt(added(times, 'gateway'))} ms; direct p99 ${fmt(percentile(times.direct!, 0.99) / 1000)} ms`,
});
figure({
  id: 'gateway-stream-heap',
  what: `gateway, heap per open SSE stream beyond the bare proxy's, ${OPEN} open`,
  target: { text: '≤ bare + 4 KB', bound: 4096, dir: '<=', on: 'ours' },
  reference: { what: 'bare proxy, per open stream', value: memory.bare!.perStream, unit: 'B' },
  ours: { value: memory.gateway!.perStream - memory.bare!.perStream, unit: 'B' },
  heldBy:
    "what an open stream needs while it is open: the recorder's open request span, the session's cursor ring, the exchange's closures, the SSE scanner, the session, stream and request records (docs/performance.md)",
  note: 'heap after full GCs, code space left out, array buffers in',
});
figure({
  id: 'gateway-kept',
  what: `gateway, heap kept per DELETEd session, slope from ${OPEN} to ${2 * OPEN} sessions with a stream`,
  target: { text: 'nothing kept (≤ 64 B, the probe’s noise)', bound: 64, dir: '<=', on: 'ours' },
  reference: { what: 'bare proxy, kept per session', value: memory.bare!.kept, unit: 'B' },
  ours: { value: memory.gateway!.kept, unit: 'B' },
  heldBy:
    "the built-in detector's request table, two tracked requests a session kept to their retention so a terminal after the DELETE is still judged (about 100 B each with its growth slack), and its started sessions, 24 B (docs/performance.md)",
  note: `over the first ${OPEN} alone ${fmt(memory.gateway!.keptFirst, 0)} B a session (bare ${fmt(memory.bare!.keptFirst, 0)} B): they also fill the page's evidence window, fixed (4 MiB counted, about 3 MB real); sessions still observed after the DELETEs: ${memory.gateway!.sessionsAfter}`,
});
figure({
  id: 'gateway-operation-observations',
  what: `gateway, mcp_server_operation_duration_seconds observations per SSE event beyond one per request`,
  target: { text: 'none per SSE event', bound: 0, dir: '<=', on: 'ours' },
  reference: { what: 'observations per request', value: observations / STREAMS, unit: 'per request' },
  ours: { value: (observations - STREAMS) / (STREAMS * EVENTS), unit: 'per SSE event' },
  heldBy: 'an observation per event',
});
const op = await measureOperationCost(ROUNDS, OPERATIONS);
const opAdded = op.withHistogram.map((w, i) => w - op.without[i]!);
figure({
  id: 'gateway-operation-cpu',
  what: "gateway, CPU per request of mcp_server_operation_duration_seconds (the detector's request span path, with it minus without)",
  target: { text: '< 2 µs per request', bound: 2, dir: '<=', on: 'ours' },
  reference: {
    what: 'the same path without the histogram',
    value: median(op.without),
    unit: 'µs per request',
    range: range(op.without),
  },
  ours: { value: median(opAdded), unit: 'µs per request', range: range(opAdded) },
  heldBy: 'the histogram',
  note: `${OPERATIONS} request spans a round, ${op.series} label sets, in-process`,
});
