/**
 * Where the gateway's cost per JSON request and per SSE event goes, in instructions (callgrind, the
 * measured calls only, at two sizes). Client, proxy and upstream (parts.ts) in one process, one session;
 * four ways through: `direct`, the `bare` proxy, the gateway without its built-in detector
 * (`gateway-nodetector`) and as it runs (`gateway`). The parts: forwarding (bare − direct), the
 * observation without the detector (nodetector − bare), the built-in detector (gateway − nodetector).
 * The ratio, (gateway − direct) / (bare − direct), is proxy.bench.ts's time ratio if every instruction
 * cost the same (a syscall's kernel time is not counted).
 */
import { arg, countInstructions, figure, measured, option } from '../../../bench/harness.js';
import { freshConnections, jsonCalls, open, startProxy, startUpstream, streams, type ProxyKind } from './parts.js';

const STREAM_COUNT = 10;
const VARIANTS = ['direct', 'bare', 'gateway-nodetector', 'gateway'] as const;
// Warm-up enough for the JIT to finish tiering up every function of the path before the counted part,
// so that compilation falls out of the two sizes' difference.
const WARM_JSON = arg('warm', 1000, 20);
const WARM_STREAMS = arg('warm-streams', 100, 3);

const variant = option('count');
if (variant) {
  // One counted run: `--count <variant> --phase json|sse --n <n>` (n requests, or n events a stream).
  const [phase, n] = [option('phase'), Number(option('n'))];
  const upstream = await startUpstream();
  const proxy = variant === 'direct' ? undefined : await startProxy(variant as ProxyKind, upstream);
  const base = proxy?.url ?? upstream;
  const sessions = await open(base, 1);
  // Connections idle while callgrind is switched on (a proxy may close them meanwhile): the counted part
  // opens new ones. New sockets send V8 re-optimizing the stream and http paths they meet (new maps), so
  // the warm-up opens new ones four times too, and the counted part's are nothing new to the JIT.
  for (let slice = 0; slice < 4; slice++) {
    freshConnections();
    await (phase === 'json'
      ? jsonCalls(base, sessions, Math.ceil(WARM_JSON / 4))
      : streams(base, sessions, Math.ceil(WARM_STREAMS / 4), 100));
  }
  freshConnections();
  await measured(() => (phase === 'json' ? jsonCalls(base, sessions, n) : streams(base, sessions, STREAM_COUNT, n)));
  process.exit(0);
}

for (const phase of ['json', 'sse'] as const) {
  const sizes: [number, number] =
    phase === 'json'
      ? [arg('json', 200, 2), arg('json', 200, 2) * 3]
      : [arg('events', 50, 2), arg('events', 50, 2) * 4];
  const units = (n: number) => (phase === 'json' ? n : STREAM_COUNT * (n + 1));
  const per: Record<string, { total: number; collector: number; compiler: number }> = {};
  for (const v of VARIANTS)
    per[v] = await countInstructions(
      import.meta.filename,
      (n) => ['--count', v, '--phase', phase, '--n', String(n)],
      sizes,
      units,
    );
  const own = (v: string) => per[v]!.total - per.direct!.total;
  const of = (k: 'collector' | 'compiler') => (per.gateway![k] - per.direct![k]).toFixed(0);
  const unit = phase === 'json' ? 'instructions per JSON request' : 'instructions per SSE event';
  const parts = {
    forwarding: own('bare'),
    'observation without the detector': per['gateway-nodetector']!.total - per.bare!.total,
    'built-in detector': per.gateway!.total - per['gateway-nodetector']!.total,
  };
  figure({
    id: `gateway-${phase}-instructions`,
    what: `gateway, its own instructions per ${phase === 'json' ? 'JSON request' : 'SSE event'} (gateway − direct), by part`,
    reference: { what: 'bare proxy (bare − direct)', value: own('bare'), unit },
    ours: { value: own('gateway'), unit },
    ratio: own('gateway') / own('bare'),
    note: `${Object.entries(parts)
      .map(([k, x]) => `${k} ${x.toFixed(0)}`)
      .join(', ')}; of the gateway's, collector ${of('collector')}, compilers ${of('compiler')}`,
  });
}
