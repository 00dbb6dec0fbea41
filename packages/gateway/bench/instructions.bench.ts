/**
 * Where the gateway's cost per JSON request and per SSE event goes, in instructions of the proxy's
 * process alone: only the proxy runs under callgrind (the measured calls only, two sizes three times
 * each, V8 single threaded: its compilers finish in the warm-up); the client and the
 * upstream (parts.ts) run in a process it forks, which callgrind does not follow. Four proxies: `bare`
 * node:http, the gateway's forwarding alone (`gateway-forwarding`), the gateway without its detector
 * (`gateway-nodetector`) and whole: their differences are the parts, without collector and compilers.
 * The ratio, gateway / bare without the compilers, is proxy.bench.ts's time ratio if every instruction
 * cost the same (kernel time not counted). */
import { Server } from 'node:http';
import { arg, Child, countInstructions, figure, measured, option, serve } from '../../../bench/harness.js';
import { jsonCalls, open, startProxy, startUpstream, streams, type ProxyKind } from './parts.js';

const [STREAM_COUNT, ST] = [10, ['--single-threaded']];
const VARIANTS = ['bare', 'gateway-forwarding', 'gateway-nodetector', 'gateway'] as const;
// Warm-up on the one kept-alive connection the counted part uses, enough for the JIT to finish tiering
// up every function of the path first, so that compilation falls out of the two sizes' difference.
const WARM_JSON = arg('warm', 4000, 20);
const WARM_STREAMS = arg('warm-streams', 100, 3);

const [variant, drive, phase] = [option('count'), option('drive'), option('phase')];
const work = (base: string, sessions: string[], n: number) =>
  phase === 'json' ? jsonCalls(base, sessions, n) : streams(base, sessions, STREAM_COUNT, n);
if (drive) {
  // The client and the upstream, outside valgrind: one session, its calls one after another.
  let [base, sessions] = ['', [] as string[]];
  serve(
    {
      warm: async ({ url }: { url: string }) => {
        [base, sessions] = [url, await open(url, 1)];
        await (phase === 'json' ? jsonCalls(base, sessions, WARM_JSON) : streams(base, sessions, WARM_STREAMS, 100));
      },
      run: ({ n }: { n: number }) => work(base, sessions, n),
    },
    { upstream: await startUpstream() },
  );
} else if (variant) {
  // The counted proxy: `--count <variant> --phase json|sse` (n requests, or n events a stream).
  // Under valgrind the pause between warm-up and work can outlast node:http's 5 s keep-alive: a new
  // connection in the counted part would cost recompilations (both proxies' servers alike).
  Object.defineProperty(Server.prototype, 'keepAliveTimeout', { get: () => 600_000, set: () => undefined });
  const driver = await Child.start(import.meta.filename, ['--drive', '1', ...process.argv.slice(2)]);
  const proxy = await startProxy(variant as ProxyKind, driver.first.upstream as string);
  await driver.ask('warm', { url: proxy.url });
  await measured((n) => driver.ask('run', { n }));
  process.exit(0);
} else
  for (const phase of ['json', 'sse'] as const) {
    const n1 = phase === 'json' ? arg('json', 300, 2) : arg('events', 50, 2);
    const units = (n: number) => (phase === 'json' ? n : STREAM_COUNT * (n + 1));
    const per: Record<string, Awaited<ReturnType<typeof countInstructions>>> = {};
    for (const v of VARIANTS)
      per[v] = await countInstructions(import.meta.filename, ['--count', v, '--phase', phase], [n1, n1 * 2], units, ST);
    const own = (v: string) => per[v]!.own;
    const ours = (v: string) => per[v]!.own + per[v]!.collector;
    const unit = phase === 'json' ? 'instructions per JSON request' : 'instructions per SSE event';
    const parts = {
      'bare proxy': own('bare'),
      forwarding: own('gateway-forwarding') - own('bare'),
      'observation without the detector': own('gateway-nodetector') - own('gateway-forwarding'),
      'built-in detector': own('gateway') - own('gateway-nodetector'),
    };
    const each = (k: 'collector' | 'compiler') => VARIANTS.map((v) => per[v]![k].toFixed(0)).join('/');
    const spread = VARIANTS.map((v) => per[v]!.spread.map((x) => (x / 1000).toFixed(1)).join('–')).join(', ');
    figure({
      id: `gateway-${phase}-instructions`,
      what: `gateway, its process's instructions per ${phase === 'json' ? 'JSON request' : 'SSE event'}, by part`,
      reference: { what: 'bare node:http proxy, its process', value: ours('bare'), unit },
      ours: { value: ours('gateway'), unit },
      ratio: ours('gateway') / ours('bare'),
      note: `without collector and compilers:${Object.entries(parts).map(([k, x]) => ` ${k} ${x.toFixed(0)}`)}; ${VARIANTS.join('/')}: collector ${each('collector')}, compilers ${each('compiler')} (left out of ours); whole-process ratio ${(per.gateway!.total / per.bare!.total).toFixed(3)}; own's five differences (countInstructions) from ${spread} k`,
    });
  }
