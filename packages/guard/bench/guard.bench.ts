/**
 * CPU cost of the guard on the hot path: a client streams many SSE events over loopback from a
 * server in another process, with and without guardedFetch, in alternating rounds of one run.
 * Two clients: `lean` (reads the body, splits events, JSON.parses each data line: the least any
 * MCP client does) and `sdk` (the MCP SDK's StreamableHTTPClientTransport). Prints a table and the
 * ratio guarded/plain of process CPU time (user + system) per client.
 *
 * The ratio is the median of the rounds' ratios (each round runs both, back to back), which keeps
 * a noisy neighbour from deciding the figure; the sums are printed too.
 *
 * Each timed run starts after a full GC (with --expose-gc).
 *
 *   node --expose-gc --import tsx bench/guard.bench.ts [events per stream, default 100000] [rounds, default 10] [lean|sdk]
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { figure } from '../../../bench/figure.js';
import { guardedFetch } from '../src/index.js';

type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const EVENTS = Number(process.argv[2] ?? 100_000);
const gc = (globalThis as { gc?: () => void }).gc;
const ROUNDS = Number(process.argv[3] ?? 10);
const ONLY = process.argv[4];

const server = fork(join(import.meta.dirname, 'server.ts'), [String(EVENTS)], {
  execArgv: ['--import', 'tsx'],
  stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
});
const [line] = (await once(server.stdout!, 'data')) as [Buffer];
const url = line.toString().trim();

let nextId = 1;
const body = (id: number): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'bench' } });

async function lean(fetch: FetchLike): Promise<number> {
  const id = nextId++;
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: body(id),
  });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let messages = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.indexOf('data: ');
      if (data >= 0) {
        JSON.parse(block.slice(data + 6));
        messages++;
      }
    }
  }
  return messages;
}

async function sdk(fetch: FetchLike): Promise<number> {
  const id = nextId++;
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch });
  let messages = 0;
  const done = new Promise<void>((resolve, reject) => {
    transport.onmessage = (message) => {
      messages++;
      if ('id' in message && message.id === id) resolve();
    };
    transport.onerror = reject;
  });
  await transport.start();
  await transport.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'bench' } });
  await done;
  await transport.close();
  return messages;
}

const clients = { lean, sdk };
const plain: FetchLike = (input, init) => globalThis.fetch(input, init);

function cpuMs(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

const results: {
  client: string;
  plainMs: number;
  guardedMs: number;
  ratioOfSums: number;
  medianRatio: number;
  eventsPerSecondPlain: number;
  eventsPerSecondGuarded: number;
}[] = [];
/** Unrounded CPU sums per client, for the per-event figures. */
const rawTotals = new Map<string, { plain: number; guarded: number }>();
for (const [name, client] of Object.entries(clients)) {
  if (ONLY !== undefined && ONLY !== name) continue;
  // One warm-up of each, then alternating rounds; the order inside a round alternates too.
  await client(plain);
  await client(guardedFetch());
  const total = { plain: 0, guarded: 0 };
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['plain', 'guarded'] as const) : (['guarded', 'plain'] as const);
    const spent = { plain: 0, guarded: 0 };
    for (const which of order) {
      const fetch = which === 'plain' ? plain : guardedFetch();
      // Each run pays for its own garbage, not the previous run's.
      gc?.();
      const start = process.cpuUsage();
      const messages = await client(fetch);
      spent[which] = cpuMs(start);
      if (messages !== EVENTS + 1) throw new Error(`${name}/${which}: ${messages} messages, expected ${EVENTS + 1}`);
    }
    total.plain += spent.plain;
    total.guarded += spent.guarded;
    ratios.push(spent.guarded / spent.plain);
  }
  rawTotals.set(name, { ...total });
  ratios.sort((a, b) => a - b);
  const median =
    ratios.length % 2 === 1
      ? ratios[(ratios.length - 1) / 2]!
      : (ratios[ratios.length / 2 - 1]! + ratios[ratios.length / 2]!) / 2;
  const events = EVENTS * ROUNDS;
  results.push({
    client: name,
    plainMs: Math.round(total.plain),
    guardedMs: Math.round(total.guarded),
    ratioOfSums: Number((total.guarded / total.plain).toFixed(3)),
    medianRatio: Number(median.toFixed(3)),
    eventsPerSecondPlain: Math.round(events / (total.plain / 1000)),
    eventsPerSecondGuarded: Math.round(events / (total.guarded / 1000)),
  });
}
server.kill();

console.log(
  `${EVENTS} SSE events per stream, ${ROUNDS} alternating rounds, client process CPU (user + system), Node ${process.version}${gc ? '' : '; no --expose-gc'}`,
);
console.table(results);
for (const r of results) {
  const events = EVENTS * ROUNDS;
  const raw = rawTotals.get(r.client)!;
  const addedUs = ((raw.guarded - raw.plain) * 1000) / events;
  figure({
    bench: 'guard',
    name: `guardedFetch, ${r.client === 'sdk' ? 'unmodified SDK 1.x client' : 'lean client (bytes straight through)'}: client CPU, median of round ratios`,
    value: (raw.guarded * 1000) / events,
    unit: 'µs CPU per SSE event',
    reference: {
      name: 'the same client without the guard',
      value: (raw.plain * 1000) / events,
      unit: 'µs CPU per SSE event',
    },
    ratio: r.medianRatio,
    target: r.client === 'sdk' ? 'ratio 1.02' : '0.3 µs added per SSE event',
    note: `${addedUs.toFixed(2)} µs added per SSE event (ratio of sums ${r.ratioOfSums}); ${EVENTS} events a stream, ${ROUNDS} alternating rounds`,
  });
}
