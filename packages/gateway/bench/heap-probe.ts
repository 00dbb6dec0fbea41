/**
 * The memory phase of proxy.bench.ts alone, for one proxy at a time, with heap snapshots: what an open
 * SSE stream keeps, and what an ended session leaves, taken apart by constructor.
 *
 * For each proxy named: a warm-up hold and release (as proxy.bench.ts does), then the baseline heap;
 * `--open` sessions each holding one SSE stream, the heap; every session DELETEd, the heap; and, with
 * `--cycles c`, c − 1 more such batches, the heap after each, so that what stays per ended session can
 * be read at several session counts (a figure that falls per session as sessions grow is a fixed cost).
 * With `--snapshots <dir>`, a heap snapshot at the baseline, with the streams open, and after each
 * release (`<proxy>-base.heapsnapshot`, `-live`, `-after1`, …), compared by heap-diff.ts.
 *
 *   npx tsc -b && node --expose-gc --import tsx bench/heap-probe.ts [--open 2000] [--cycles 2]
 *     [--proxies gateway,bare] [--snapshots /tmp/snaps]
 */
import { fork } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Child } from './child.js';

const { values } = parseArgs({
  options: {
    open: { type: 'string', default: '2000' },
    cycles: { type: 'string', default: '1' },
    proxies: { type: 'string', default: 'gateway,bare' },
    snapshots: { type: 'string' },
  },
});
const OPEN = Number(values.open);
const CYCLES = Number(values.cycles);
const here = import.meta.dirname;

async function start(script: string, args: string[]): Promise<[Child, Record<string, unknown>]> {
  const proc = fork(join(here, script), args, { execArgv: ['--expose-gc', '--import', 'tsx'], stdio: 'inherit' });
  const first = await new Promise<Record<string, unknown>>((resolve, reject) => {
    proc.once('message', resolve);
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return [new Child(proc), first];
}

const [upstreamChild, up] = await start('upstream-server.ts', []);
const [client] = await start('load-client.ts', []);
if (values.snapshots) mkdirSync(values.snapshots, { recursive: true });

for (const kind of values.proxies.split(',')) {
  const args = kind === 'gateway' ? ['--max-streams', String(OPEN * CYCLES + 1000)] : [];
  const [proxy, started] = await start('proxy-child.ts', [kind, up.url as string, ...args]);
  const base = started.url as string;
  const read = (label: string) =>
    values.snapshots
      ? proxy.ask<{ heap: number }>('snapshot', { path: join(values.snapshots, `${kind}-${label}.heapsnapshot`) })
      : proxy.ask<{ heap: number }>('heap');
  const sessions = async () => (kind === 'gateway' ? (await proxy.ask<{ sessions: number }>('stats')).sessions : 0);
  await client.ask('hold', { base, n: Math.min(200, OPEN) });
  await client.ask('release', { base });
  await sleep(500);
  const h0 = (await read('base')).heap;
  let before = h0;
  for (let c = 1; c <= CYCLES; c++) {
    await client.ask('hold', { base, n: OPEN });
    const live = (await read(c === 1 ? 'live' : `live${c}`)).heap;
    const observed = await sessions();
    await client.ask('release', { base });
    await sleep(500);
    const after = (await read(`after${c}`)).heap;
    console.log(
      `${kind} cycle ${c}: per open stream ${((live - before) / OPEN).toFixed(0)} B (against the heap before the cycle), ` +
        `kept per ended session ${((after - h0) / (OPEN * c)).toFixed(1)} B over ${OPEN * c} sessions ` +
        `(${(after - h0).toFixed(0)} B in all); sessions observed live ${observed}, after ${await sessions()}`,
    );
    before = after;
  }
  proxy.proc.disconnect();
  await new Promise((resolve) => proxy.proc.once('exit', resolve));
}
client.proc.disconnect();
upstreamChild.proc.disconnect();
