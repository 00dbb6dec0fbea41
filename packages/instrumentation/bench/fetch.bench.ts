/**
 * CPU cost of instrumentFetch on a streaming workload: what a user of the SDK 1.x client pays per SSE
 * event and per request.
 *
 * How it measures (bench/client-processes.ts): the lab server runs in a child process, and each variant
 * of the client in a process of its own, an unmodified SDK 1.x Client with StreamableHTTPClientTransport
 * calling the lab's `stream_progress` tool. The variants' processes take rounds in turn, one working at
 * a time, the order reversed every round; a round's figure is that process's CPU (user + system, all
 * its threads) over the round, divided by the events (or requests) it read. The figures are medians of
 * the rounds, with their spread (min–max); the added µs and the ratio are taken per round against the
 * bare client's round next to it.
 *   bare          the SDK's own fetch
 *   wire          the wire observer with one listener that does nothing (what any listener costs)
 *   instrumented  `fetch: instrumentFetch()`, spans through the OpenTelemetry SDK with a
 *                 BatchSpanProcessor and an exporter that drops everything (flushed at each round's end,
 *                 so the export is counted in the round)
 *   undici        the SDK's own fetch, with @opentelemetry/instrumentation-undici enabled
 *
 * Until this stop all variants ran in one process; that shared the SDK's optimised code and the garbage
 * collector between them and read the instrumentation's cost low (a ratio below 1; bench/notes.md).
 *
 *   node --import tsx bench/fetch.bench.ts [--rounds 10] [--calls 10] [--progress 100] [--pings 100] [--variants bare,instrumented]
 */
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { WireObserver } from '@resumewatch/wire';
import type { FetchLike } from '@resumewatch/wire';
import {
  VariantProcesses,
  alternatingRounds,
  median,
  paired,
  range,
  serveRounds,
  variantOfChild,
} from '../../../bench/client-processes.js';
import { figure } from '../../../bench/figure.js';
import { startLabChild } from './lab-child.js';
import { ourInstrumentedFetch, undiciInstrumentation } from './variants.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    calls: { type: 'string', default: '10' },
    progress: { type: 'string', default: '100' },
    pings: { type: 'string', default: '100' },
    variants: { type: 'string' },
    url: { type: 'string' },
    'variant-child': { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const WARMUP = Number(values.warmup);
const CALLS = Number(values.calls);
const PROGRESS = Number(values.progress);
const PINGS = Number(values.pings);
const VARIANTS = ['bare', 'wire', 'instrumented', 'undici'] as const;
type Variant = (typeof VARIANTS)[number];

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

/** A variant's client process: connects, then serves the parent's rounds. */
async function child(variant: Variant, url: string): Promise<void> {
  const exporter = new DroppingExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
  let fetch: FetchLike | undefined;
  if (variant === 'wire') fetch = new WireObserver().addListener({ onEvent: () => undefined }).wrap();
  else if (variant === 'instrumented') fetch = ourInstrumentedFetch(provider);
  else if (variant === 'undici') undiciInstrumentation(provider).enable();
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), fetch ? { fetch } : {}));
  const flush = async () => {
    if (variant === 'instrumented' || variant === 'undici') await provider.forceFlush();
  };
  serveRounds(
    {
      async events() {
        let progress = 0;
        for (let i = 0; i < CALLS; i++) {
          await client.callTool({ name: 'stream_progress', arguments: { count: PROGRESS, delay: 0 } }, undefined, {
            onprogress: () => void progress++,
          });
        }
        await flush();
        if (progress !== CALLS * PROGRESS)
          throw new Error(`expected ${CALLS * PROGRESS} progress notifications, got ${progress}`);
        // Each call's stream: its progress events and the result's.
        return CALLS * (PROGRESS + 1);
      },
      async pings() {
        for (let i = 0; i < PINGS; i++) await client.ping();
        await flush();
        return PINGS;
      },
    },
    async () => {
      await client.close();
      await provider.forceFlush();
      if (variant === 'undici' && exporter.undici === 0)
        throw new Error('the undici instrumentation recorded no span: its figure would measure nothing');
      if (variant === 'instrumented' && exporter.exported === 0) throw new Error('instrumentFetch recorded no span');
      await provider.shutdown();
    },
  );
}

const childVariant = variantOfChild();
if (childVariant !== undefined) {
  await child(childVariant as Variant, values.url!);
} else {
  const names = (values.variants?.split(',') ?? [...VARIANTS]) as Variant[];
  const lab = await startLabChild();
  // The lab server must not outlive a failed run (it would hold the caller's pipes open).
  process.on('exit', () => lab.stop());
  const args = ['--url', lab.url, '--calls', String(CALLS), '--progress', String(PROGRESS), '--pings', String(PINGS)];
  const processes = await VariantProcesses.start(import.meta.filename, names, args);
  const events = CALLS * (PROGRESS + 1);
  const perUnit = await alternatingRounds(processes, names, ['events', 'pings'], ROUNDS, WARMUP, {
    events,
    pings: PINGS,
  });
  await processes.stop();
  lab.stop();

  const base: Variant = names.includes('bare') ? 'bare' : names[0]!;
  const fmt = (xs: number[], digits: number) =>
    `${median(xs).toFixed(digits)} (${range(xs)
      .map((x) => x.toFixed(digits))
      .join('–')})`;
  console.log(
    `workload: ${CALLS} tools/call stream_progress x ${PROGRESS} progress events a round (${events} SSE events), ${PINGS} pings a round; ${ROUNDS} measured rounds after ${WARMUP} warm-up; SDK 1.x client, each variant in its own process; lab server in another; node ${process.version}`,
  );
  console.log('figures: median of rounds (min–max); "added" and "ratio" are per round against the same round of bare');
  for (const [kind, unit] of [
    ['events', 'SSE event'],
    ['pings', 'request'],
  ] as const) {
    console.log(`\nper ${unit}`);
    console.log(`${'variant'.padEnd(14)} ${'µs CPU'.padEnd(24)} ${'µs added'.padEnd(24)} ratio`);
    for (const name of names) {
      const own = perUnit[kind]![name]!;
      const { ratios, added } = paired(own, perUnit[kind]![base]!);
      console.log(`${name.padEnd(14)} ${fmt(own, 2).padEnd(24)} ${fmt(added, 2).padEnd(24)} ${fmt(ratios, 3)}`);
    }
  }

  if (base === 'bare') {
    for (const name of names) {
      if (name === 'bare') continue;
      const label =
        name === 'instrumented'
          ? 'instrumentFetch'
          : name === 'undici'
            ? '@opentelemetry/instrumentation-undici'
            : 'wire observer, one empty listener';
      for (const [kind, what, unit] of [
        ['events', `${PROGRESS} progress events a call`, 'µs CPU per SSE event'],
        ['pings', 'one ping a request', 'µs CPU per request'],
      ] as const) {
        const own = perUnit[kind]![name]!;
        const bare = perUnit[kind]!.bare!;
        const { ratios, added } = paired(own, bare);
        figure({
          bench: 'instrumentation',
          name: `${label}, SDK 1.x client, ${what}: CPU of the client's own process, median of ${ROUNDS} alternating rounds`,
          value: median(own),
          range: range(own),
          unit,
          reference: { name: 'bare SDK client, its own process', value: median(bare), range: range(bare), unit },
          ratio: median(ratios),
          target: name === 'instrumented' && kind === 'events' ? '2 µs added per SSE event' : undefined,
          note: `${median(added).toFixed(2)} µs added (rounds ${range(added)
            .map((x) => x.toFixed(2))
            .join(' to ')}), ratio ${range(ratios)
            .map((x) => x.toFixed(3))
            .join('–')}; ${kind === 'events' ? events : PINGS} a round`,
        });
      }
    }
  }
}
