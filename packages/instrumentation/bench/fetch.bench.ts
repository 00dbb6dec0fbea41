/**
 * CPU cost of instrumentFetch on a streaming workload, measured side by side in one run.
 *
 * The lab server runs in a child process, so process.cpuUsage() here counts the client only: the SDK
 * v1 Client and StreamableHTTPClientTransport calling the lab's `stream_progress` tool. Three clients
 * run alternating rounds (the order reverses every round):
 *   bare          the SDK's own fetch
 *   wire          the wire observer with one listener that does nothing (what any listener costs)
 *   instrumented  `fetch: instrumentFetch()`, spans through the OpenTelemetry SDK with a
 *                 BatchSpanProcessor and an exporter that drops everything
 * Each round starts after a full GC (with --expose-gc), so a round pays for the garbage it makes.
 *
 *   node --expose-gc --import tsx bench/fetch.bench.ts [--rounds 20] [--calls 10] [--progress 100] [--variants bare,wire]
 */
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { WireObserver } from '@resumewatch/wire';
import type { FetchLike } from '@resumewatch/wire';
import { figure } from '../../../bench/figure.js';
import { startLabChild } from './lab-child.js';
import { ourInstrumentedFetch, undiciInstrumentation } from './variants.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    calls: { type: 'string', default: '10' },
    progress: { type: 'string', default: '100' },
    pings: { type: 'string', default: '100' },
    variants: { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
const PROGRESS = Number(values.progress);
const PINGS = Number(values.pings);
const gc = (globalThis as { gc?: () => void }).gc;

class DroppingExporter implements SpanExporter {
  exported = 0;
  /** Spans of the stock undici instrumentation: proves the anchor measured what it claims. */
  undici = 0;
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.exported += spans.length;
    for (const span of spans) if (span.instrumentationScope.name.includes('instrumentation-undici')) this.undici++;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

async function connect(url: string, fetch: FetchLike | undefined): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), fetch ? { fetch } : {}));
  return client;
}

/** CPU ms of `PINGS` MCP pings, one after the other: the per-request workload. */
async function pingRound(client: Client): Promise<number> {
  gc?.();
  const start = process.cpuUsage();
  for (let i = 0; i < PINGS; i++) await client.ping();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

async function round(client: Client): Promise<number> {
  gc?.();
  let progress = 0;
  const start = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    await client.callTool({ name: 'stream_progress', arguments: { count: PROGRESS, delay: 0 } }, undefined, {
      onprogress: () => void progress++,
    });
  }
  const used = process.cpuUsage(start);
  if (progress !== CALLS * PROGRESS)
    throw new Error(`expected ${CALLS * PROGRESS} progress notifications, got ${progress}`);
  return (used.user + used.system) / 1000;
}

const lab = await startLabChild();
// The lab server must not outlive a failed run (it would hold the caller's pipes open).
process.on('exit', () => lab.stop());
const exporter = new DroppingExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
const undici = undiciInstrumentation(provider);
const variants = {
  bare: undefined,
  wire: new WireObserver().addListener({ onEvent: () => undefined }).wrap(),
  instrumented: ourInstrumentedFetch(provider),
  undici: undefined,
};
type Variant = keyof typeof variants;
// --variants runs a subset, e.g. one variant alone under --cpu-prof.
const names = (values.variants?.split(',') ?? Object.keys(variants)) as Variant[];
const clients = {} as Record<Variant, Client>;
for (const name of names) clients[name] = await connect(lab.url, variants[name]);
const cpu = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<Variant, number[]>;
const cpuPing = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<Variant, number[]>;

/** Runs `work` for one variant; the undici instrumentation is on only during its own variant's rounds. */
async function as<T>(name: Variant, work: () => Promise<T>): Promise<T> {
  if (name === 'undici') undici.enable();
  try {
    return await work();
  } finally {
    if (name === 'undici') undici.disable();
  }
}
for (const name of names) {
  await as(name, () => round(clients[name]));
  await as(name, () => pingRound(clients[name]));
}
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? names : [...names].reverse();
  for (const name of order) cpu[name].push(await as(name, () => round(clients[name])));
  for (const name of order) cpuPing[name].push(await as(name, () => pingRound(clients[name])));
}
await provider.forceFlush();
if (names.includes('undici') && exporter.undici === 0)
  throw new Error('the undici instrumentation recorded no span: its figure would measure nothing');

const total = (xs: number[]) => xs.reduce((sum, x) => sum + x, 0);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const events = ROUNDS * CALLS * (PROGRESS + 1);
console.log(
  `workload: ${ROUNDS} rounds x ${CALLS} tools/call stream_progress x ${PROGRESS} progress events; SDK v1 client; lab server in a child process`,
);
console.log(
  `node ${process.version}; ${events} SSE events per variant; ${exporter.exported} spans exported (dropped), ${exporter.undici} of them by the undici instrumentation${gc ? '' : '; no --expose-gc'}`,
);
const pairMedian = (a: Variant, b: Variant): number => median(cpu[a].map((x, i) => x / cpu[b][i]!));
const base: Variant = cpu.bare ? 'bare' : names[0]!;
console.log(
  `variant        cpu total ms   median round ms   us per event   ratio to ${base} (sums)   median of round ratios`,
);
for (const name of names) {
  const ms = total(cpu[name]);
  const cells = [
    ms.toFixed(0).padStart(12),
    median(cpu[name]).toFixed(1).padStart(15),
    ((ms * 1000) / events).toFixed(2).padStart(12),
    (ms / total(cpu[base])).toFixed(3).padStart(20),
    pairMedian(name, base).toFixed(3).padStart(22),
  ];
  console.log(`${name.padEnd(14)} ${cells.join('   ')}`);
}
if (cpu.instrumented && cpu.wire) {
  console.log(
    `instrumented / wire (the span recorder's own share): ${(total(cpu.instrumented) / total(cpu.wire)).toFixed(3)}`,
  );
}
const requests = ROUNDS * PINGS;
console.log(`\nper request: ${ROUNDS} rounds x ${PINGS} pings (one POST each)`);
console.log(`variant        cpu total ms   us per request   us added per request   median of round ratios`);
for (const name of names) {
  const ms = total(cpuPing[name]);
  const added = ((ms - total(cpuPing[base])) * 1000) / requests;
  const ratio = median(cpuPing[name].map((x, i) => x / cpuPing[base][i]!));
  console.log(
    `${name.padEnd(14)} ${ms.toFixed(0).padStart(12)}   ${((ms * 1000) / requests).toFixed(1).padStart(14)}   ${added.toFixed(1).padStart(20)}   ${ratio.toFixed(3).padStart(22)}`,
  );
}

if (base === 'bare') {
  const eventUs = (name: Variant) => (total(cpu[name]) * 1000) / events;
  const requestUs = (name: Variant) => (total(cpuPing[name]) * 1000) / requests;
  for (const name of names) {
    if (name === 'bare') continue;
    const label =
      name === 'instrumented'
        ? 'instrumentFetch'
        : name === 'undici'
          ? '@opentelemetry/instrumentation-undici'
          : 'wire observer, one empty listener';
    figure({
      bench: 'instrumentation',
      name: `${label}, SDK 1.x client, ${PROGRESS} progress events a call: client CPU, median of round ratios`,
      value: eventUs(name),
      unit: 'µs CPU per SSE event',
      reference: { name: 'bare SDK client', value: eventUs('bare'), unit: 'µs CPU per SSE event' },
      ratio: pairMedian(name, 'bare'),
      target: name === 'instrumented' ? 'ratio 1.05' : undefined,
      note: `${(eventUs(name) - eventUs('bare')).toFixed(2)} µs added per event; ${events} events per variant`,
    });
    figure({
      bench: 'instrumentation',
      name: `${label}, SDK 1.x client, one ping a request: client CPU, median of round ratios`,
      value: requestUs(name),
      unit: 'µs CPU per request',
      reference: { name: 'bare SDK client', value: requestUs('bare'), unit: 'µs CPU per request' },
      ratio: median(cpuPing[name].map((x, i) => x / cpuPing.bare[i]!)),
      note: `${(requestUs(name) - requestUs('bare')).toFixed(1)} µs added per request; ${requests} requests per variant`,
    });
  }
}

for (const name of names) await clients[name].close();
await provider.shutdown();
lab.stop();
