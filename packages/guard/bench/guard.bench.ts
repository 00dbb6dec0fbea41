/**
 * CPU cost of the guard on the hot path: what a client pays per SSE event with and without
 * guardedFetch. Two clients:
 *   lean  reads the body, splits events, JSON.parses each data line (the least any MCP client does),
 *         against bench/server.ts, which streams `--events` progress notifications (each with an `id:`)
 *         in answer to one POST
 *   sdk   an unmodified SDK 1.x Client with StreamableHTTPClientTransport calling the lab server's
 *         `stream_progress` tool (`--calls` calls of `--progress` events a round)
 *
 * How it measures (bench/client-processes.ts): the servers run in child processes, and each variant of
 * the client (plain, guarded) in a process of its own; the variants take rounds in turn, one working at
 * a time, the order reversed every round. A round's figure is that process's CPU (user + system, all
 * threads) over the round, divided by the SSE events it read. Figures are medians of the rounds with
 * their spread; the added µs and the ratio are taken per round against the plain client's round next
 * to it. (Until this stop both variants ran in one process, sharing the SDK's optimised code and the
 * garbage collector.)
 *
 *   node --import tsx bench/guard.bench.ts [--events 20000] [--calls 10] [--progress 100] [--rounds 10] [--clients lean,sdk]
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
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
import { guardedFetch } from '../src/index.js';

type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    calls: { type: 'string', default: '10' },
    progress: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    clients: { type: 'string', default: 'lean,sdk' },
    'lean-url': { type: 'string' },
    'lab-url': { type: 'string' },
    'variant-child': { type: 'string' },
  },
});
const EVENTS = Number(values.events);
const CALLS = Number(values.calls);
const PROGRESS = Number(values.progress);
const ROUNDS = Number(values.rounds);
const WARMUP = Number(values.warmup);
const CLIENTS = values.clients.split(',') as ('lean' | 'sdk')[];
const VARIANTS = ['plain', 'guarded'];

/** A variant's client process: serves the parent's rounds of each client. */
async function child(variant: string): Promise<void> {
  const fetch: FetchLike = variant === 'guarded' ? guardedFetch() : (input, init) => globalThis.fetch(input, init);
  const leanUrl = values['lean-url']!;
  let nextId = 1;
  let sdk: Client | undefined;
  if (CLIENTS.includes('sdk')) {
    sdk = new Client({ name: 'bench', version: '1.0.0' });
    await sdk.connect(new StreamableHTTPClientTransport(new URL(values['lab-url']!), { fetch }));
  }
  serveRounds(
    {
      async lean() {
        const id = nextId++;
        const response = await fetch(leanUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'bench' } }),
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
      },
      async sdk() {
        let progress = 0;
        for (let i = 0; i < CALLS; i++) {
          await sdk!.callTool({ name: 'stream_progress', arguments: { count: PROGRESS, delay: 0 } }, undefined, {
            onprogress: () => void progress++,
          });
        }
        if (progress !== CALLS * PROGRESS)
          throw new Error(`expected ${CALLS * PROGRESS} progress notifications, got ${progress}`);
        return CALLS * (PROGRESS + 1);
      },
    },
    async () => {
      await sdk?.close();
    },
  );
}

const childVariant = variantOfChild();
if (childVariant !== undefined) {
  await child(childVariant);
} else {
  const lean = fork(join(import.meta.dirname, 'server.ts'), [String(EVENTS)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const [line] = (await once(lean.stdout!, 'data')) as [Buffer];
  const leanUrl = line.toString().trim();
  const labCli = fileURLToPath(new URL('../node_modules/@resumewatch/lab/dist/cli.js', import.meta.url));
  const lab = fork(labCli, ['server', '--capacity', '100000'], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const labUrl = await new Promise<string>((resolve) => {
    let out = '';
    lab.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /MCP\s+(\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
  });
  process.on('exit', () => {
    lean.kill();
    lab.kill();
  });
  const processes = await VariantProcesses.start(import.meta.filename, VARIANTS, [
    '--lean-url',
    leanUrl,
    '--lab-url',
    labUrl,
    '--clients',
    CLIENTS.join(','),
    '--calls',
    String(CALLS),
    '--progress',
    String(PROGRESS),
  ]);
  const expected = { lean: EVENTS + 1, sdk: CALLS * (PROGRESS + 1) };
  const perEvent = await alternatingRounds(processes, VARIANTS, CLIENTS, ROUNDS, WARMUP, expected);
  await processes.stop();
  lean.kill();
  lab.kill();

  const spread = (xs: number[], digits: number) =>
    `${median(xs).toFixed(digits)} (${range(xs)
      .map((x) => x.toFixed(digits))
      .join('–')})`;
  console.log(
    `${ROUNDS} alternating rounds after ${WARMUP} warm-up, each variant in its own process; CPU of that process (user + system) per SSE event; median (min–max) of rounds; Node ${process.version}`,
  );
  for (const name of CLIENTS) {
    const plain = perEvent[name]!.plain!;
    const guarded = perEvent[name]!.guarded!;
    const { ratios, added } = paired(guarded, plain);
    console.log(
      `${name.padEnd(5)} ${expected[name]} events a round: plain ${spread(plain, 3)} µs, guarded ${spread(guarded, 3)} µs, added ${spread(added, 3)} µs, ratio ${spread(ratios, 3)}`,
    );
    figure({
      bench: 'guard',
      name: `guardedFetch, ${name === 'sdk' ? 'unmodified SDK 1.x client' : 'lean client (bytes straight through)'}: CPU of the client's own process, median of round ratios`,
      value: median(guarded),
      range: range(guarded),
      unit: 'µs CPU per SSE event',
      reference: {
        name: 'the same client without the guard, its own process',
        value: median(plain),
        range: range(plain),
        unit: 'µs CPU per SSE event',
      },
      ratio: median(ratios),
      target: name === 'sdk' ? 'ratio 1.02' : '0.3 µs added per SSE event',
      note: `${median(added).toFixed(2)} µs added per SSE event (rounds ${range(added)
        .map((x) => x.toFixed(2))
        .join(' to ')}), ratio ${range(ratios)
        .map((x) => x.toFixed(3))
        .join('–')}; ${expected[name]} events a round, ${ROUNDS} alternating rounds`,
    });
  }
}
