/**
 * What guardedFetch and instrumentFetch cost the client per SSE event, against the bare client: the
 * unmodified SDK 1.x client (Client + StreamableHTTPClientTransport) calling the lab server's
 * `stream_progress` tool (`--progress` events a call, a request's cost spread over its events), bare,
 * with guardedFetch(), with instrumentFetch() (spans exported inside the measured work); the lab server
 * in a child.
 *
 * - Instructions (the verdict: stable on a busy machine): each variant counted by callgrind, the measured
 *   calls only, two call counts three times each (countInstructions), V8 single threaded, no memory reducer
 *   (its timer starts full GCs by wall time, and a paced client idles), against lab-child.ts' paced
 *   leanServer (one event a read); the ratio to bare's of the process's own: without compilers and collector.
 * - Time, beside them: each variant in a process of its own, alternating rounds, its process CPU per
 *   SSE event; the median of per-round ratios to bare's.
 * - The lean client (reads the body, splits events, JSON.parses each data line: the least any client
 *   does) with and without the guard, against a lean server streaming `--events` events: µs added.
 */
import { createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@resumewatch/wire';
import {
  Child,
  alternate,
  arg,
  compare,
  compared,
  countInstructions,
  figure,
  listen,
  measured,
  option,
  serve,
} from '../../../bench/harness.js';
import { VARIANTS, leanServer, startLabChild, variantFetch, type Variant } from './lab-child.js';

const PROGRESS = arg('progress', 100, 3);
const CALLS = arg('calls', 20, 1);
const LEAN_EVENTS = arg('events', 20_000, 200);

/** A variant's SDK client: `calls(n)` makes n calls and returns the SSE events read; `read` runs at each progress event. */
async function sdkClient(variant: Variant, url: string, read = () => {}) {
  const v = variantFetch(variant);
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), v.fetch ? { fetch: v.fetch } : {}));
  return {
    fetch: v.fetch ?? (globalThis.fetch as FetchLike),
    async calls(n: number) {
      let progress = 0;
      for (let i = 0; i < n; i++)
        await client.callTool({ name: 'stream_progress', arguments: { count: PROGRESS, delay: 0 } }, undefined, {
          onprogress: () => void (progress++, read()),
        });
      if (variant === 'instrumented') await v.provider.forceFlush();
      if (progress !== n * PROGRESS || (variant === 'instrumented' && v.exported === 0))
        throw new Error(`${variant}: ${progress} progress events, ${v.exported} spans`);
      return n * (PROGRESS + 1);
    },
  };
}

/** The lean client: one POST, its SSE body split and each data line parsed. */
async function lean(fetch: FetchLike, url: string): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: '{"jsonrpc":"2.0","id":1,"method":"tools/call"}',
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let [buffer, messages] = ['', 0];
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    buffer += r.value;
    for (let end; (end = buffer.indexOf('\n\n')) >= 0; buffer = buffer.slice(end + 2), messages++)
      JSON.parse(buffer.slice(buffer.indexOf('data: ') + 6, end));
  }
  return messages;
}

const role = option('role');
if (role === 'lean-server') {
  // Every POST: LEAN_EVENTS progress notifications in batches of 64, then the result.
  const event = (n: number) =>
    `id: 1-${n}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":${n},"total":${LEAN_EVENTS}}}\n\n`;
  const server = createServer((req, res) => {
    req.resume().once('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const write = (): void => {
        while (n < LEAN_EVENTS) {
          let batch = '';
          for (let i = 0; i < 64 && n < LEAN_EVENTS; i++) batch += event(n++);
          if (!res.write(batch)) return void res.once('drain', write);
        }
        res.end(`id: 1-${n}\nevent: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n`);
      };
      write();
    });
  });
  serve({}, { url: `${await listen(server)}/mcp` });
} else if (role === 'paced-server') {
  serve({}, { url: `${await listen(leanServer(PROGRESS, true))}/mcp` }); // the counted clients' server
} else if (role === 'client') {
  const c = await sdkClient(option('variant') as Variant, option('url')!);
  serve({ sdk: () => c.calls(CALLS), lean: () => lean(c.fetch, option('lean')!) });
} else if (role === 'count') {
  const server = Number(option('server'));
  const c = await sdkClient(option('variant') as Variant, option('url')!, () => process.kill(server, 'SIGUSR2'));
  await c.calls(arg('warm', 200, 2));
  await measured((n) => c.calls(n));
  process.exit(0);
} else {
  const sizes = ['--progress', String(PROGRESS), ...(process.argv.includes('--smoke') ? ['--smoke'] : [])];
  const lab = await startLabChild({ slowClients: true });
  try {
    const leanServer = await Child.start(import.meta.filename, [
      '--role',
      'lean-server',
      '--events',
      String(LEAN_EVENTS),
    ]);
    const clients = {} as Record<Variant, Child>;
    for (const v of VARIANTS)
      clients[v] = await Child.start(import.meta.filename, [
        ...sizes,
        ...['--role', 'client', '--variant', v, '--url', lab.url, '--lean', String(leanServer.first.url)],
        ...['--calls', String(CALLS)],
      ]);
    const perEvent = async (v: Variant, kind: 'sdk' | 'lean') => {
      const r = await clients[v].ask<{ units: number }>(kind);
      return r.cpuUs / r.units;
    };
    const rounds = arg('rounds', 10, 1);
    const sdk = await alternate(VARIANTS, rounds, (v) => perEvent(v, 'sdk'), arg('warmup', 2, 0));
    const leanTimes = await alternate(
      ['bare', 'guard'] as const,
      rounds,
      (v) => perEvent(v, 'lean'),
      arg('warmup', 2, 0),
    );
    await Child.stopAll();
    console.log(`timed rounds done; counting instructions (${VARIANTS.length} variants, under callgrind)`);
    const counts = {} as Record<Variant, Awaited<ReturnType<typeof countInstructions>>>;
    const paced = await Child.start(import.meta.filename, ['--role', 'paced-server', '--progress', String(PROGRESS)]);
    const served = ['--url', String(paced.first.url), '--server', String(paced.proc.pid)];
    for (const v of VARIANTS)
      counts[v] = await countInstructions(
        import.meta.filename,
        ['--progress', String(PROGRESS), '--role', 'count', '--variant', v, ...served],
        [arg('counted', 15, 1), arg('counted', 15, 1) * 2],
        (n) => n * (PROGRESS + 1),
        ['--single-threaded', '--no-memory-reducer'],
      );
    // The verdict's count (`own`): the process's instructions without the compilers and the collector.
    const own = (v: Variant) => counts[v].own;
    const ours = (v: Variant) => own(v) + counts[v].collector;
    const unit = 'instructions per SSE event, without compilers and collector';
    const usPerInstruction = compare(sdk.bare, sdk.bare).ours / counts.bare.total;
    for (const [v, label, bound] of [
      ['guard', 'guardedFetch', 1.02],
      ['instrumented', 'instrumentFetch', 1.05],
    ] as const) {
      const t = compare(sdk[v], sdk.bare);
      const added = own(v) - own('bare');
      const k = (x: number) => `${(x / 1000).toFixed(1)} k`;
      figure({
        id: `client-${v}-instructions`,
        what: `${label}, SDK 1.x client, ${PROGRESS} progress events a call, one a read: instructions per SSE event`,
        target: { text: `≤ ${bound}x bare, by instructions`, bound, dir: '<=' },
        reference: { what: 'bare SDK client', value: own('bare'), unit },
        ours: { value: own(v), unit },
        ratio: own(v) / own('bare'),
        heldBy: `${v === 'guard' ? "the wire observer's scan and the guard's decisions" : "the wire observer's scan and the span recorder"}: ${added.toFixed(0)} instructions added per event`,
        note: `own's five differences ${counts[v].spread.map(k).join('–')} (bare's ${counts.bare.spread.map(k).join('–')}); with the collector ${(ours(v) / ours('bare')).toFixed(3)} (collector ${k(counts[v].collector)}, bare's ${k(counts.bare.collector)}); whole process ${(counts[v].total / counts.bare.total).toFixed(3)} (compilers ${k(counts[v].compiler)}, bare's ${k(counts.bare.compiler)}); time ratio beside it ${t.ratio.toFixed(3)} (${t.ratioRange.map((x) => x.toFixed(2)).join('–')}); ≈ ${(added * usPerInstruction).toFixed(2)} µs added at bare's µs per instruction`,
      });
      figure({
        id: `client-${v}-time`,
        what: `${label}, SDK 1.x client: its process CPU per SSE event, median of round ratios`,
        target: { text: `≤ ${bound}x bare`, bound, dir: '<=' },
        ...compared(t, 'bare SDK client, its own process', 'µs CPU per SSE event'),
        heldBy: 'time on a shared machine: judge by client-*-instructions',
        note: `${t.added.toFixed(2)} µs added; ${rounds} alternating rounds of ${CALLS} calls`,
      });
    }
    const l = compare(leanTimes.guard, leanTimes.bare);
    figure({
      id: 'client-guard-lean',
      what: 'guardedFetch, lean client (bytes straight through): µs CPU added per SSE event',
      target: { text: '≤ 0.3 µs added', bound: 0.3, dir: '<=', on: 'ours' },
      ...compared(l, 'the lean client without the guard', 'µs CPU per SSE event'),
      ours: { value: l.added, unit: 'µs added per SSE event' },
      heldBy: "the wire observer's scan of each event",
      note: `${LEAN_EVENTS + 1} events a round`,
    });
  } finally {
    lab.stop();
    await Child.stopAll();
  }
}
