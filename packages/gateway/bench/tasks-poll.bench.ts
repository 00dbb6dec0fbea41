/**
 * What a task poll costs the gateway against what a request cost it before tasks (issue 38: "each poll
 * costs no more than a request costs today"): the gateway's process CPU per `tasks/get` of a live task
 * against its CPU per plain tools/call answered with JSON (proxy.bench.ts's JSON phase), side by side in
 * alternating rounds (the two phases' order flips every round), through the same gateway, observing.
 *
 * The processes are proxy.bench.ts's: upstream-server.ts (here answering 2025-11-25 tasks: a
 * task-augmented tools/call with a CreateTaskResult, `tasks/get` with the flat Task, status working,
 * its pollInterval), load-client.ts (`tasks`, `poll`), proxy-child.ts `gateway` and `bare` (the bare
 * Node proxy: its poll and request costs are in the figure's note, to tell the gateway's share from
 * the proxying of a smaller answer). Sessions of protocol 2025-11-25; each creates `--tasks` tasks
 * through the proxy first (the gateway's detector holds a record of each), then polls them in turn:
 * a task is polled every `--tasks` polls of its session, slower than its announced interval (20 ms),
 * so that the figure is a poll's steady cost, not a poll storm's findings. The run fails unless every
 * measured poll reached the gateway's detector (resumewatch_task_polls_total) and was recorded on its
 * live task (the task's timeline); the note says the findings it made (none expected).
 *
 *   npx tsc -b && node --expose-gc --import tsx bench/tasks-poll.bench.ts [--rounds 6] [--requests 3000]
 *     [--concurrency 8] [--tasks 64] [--smoke]
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { figure } from '../../../bench/figure.js';
import { Child } from './child.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '6' },
    requests: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '8' },
    tasks: { type: 'string', default: '64' },
    smoke: { type: 'boolean', default: false },
  },
});
const smoke = values.smoke;
const ROUNDS = smoke ? 2 : Number(values.rounds);
const REQUESTS = smoke ? 40 : Number(values.requests);
const CONCURRENCY = smoke ? 2 : Number(values.concurrency);
const TASKS = smoke ? 4 : Number(values.tasks);
/** Announced by the upstream: a task is polled every TASKS polls of its session, far slower than this. */
const POLL_INTERVAL_MS = 20;
const TTL_MS = 3_600_000;
const VERSION = '2025-11-25';

// --- Children, as proxy.bench.ts starts them ---
const here = import.meta.dirname;
async function start(script: string, args: string[]) {
  const proc = fork(join(here, script), args, { execArgv: ['--expose-gc', '--import', 'tsx'], stdio: 'inherit' });
  const first = await new Promise<Record<string, unknown>>((resolve, reject) => {
    proc.once('message', resolve);
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { child: new Child(proc), first };
}
const up = await start('upstream-server.ts', []);
const upstream = up.first.url as string;
const client = (await start('load-client.ts', [])).child;
const targets = await Promise.all(
  (['gateway', 'bare'] as const).map(async (name) => {
    const s = await start('proxy-child.ts', [name, upstream]);
    const url = s.first.url as string;
    const sessions = (await client.ask<{ sessions: string[] }>('open', { base: url, n: CONCURRENCY, version: VERSION }))
      .sessions;
    const { tasks } = await client.ask<{ tasks: Record<string, string[]> }>('tasks', {
      base: url,
      sessions,
      n: TASKS,
      ttl: TTL_MS,
      pollInterval: POLL_INTERVAL_MS,
    });
    return { name, child: s.child, url, sessions, tasks, json: [] as number[], poll: [] as number[] };
  }),
);
const cpuUs = async (c: Child) => {
  const u = await c.ask<{ user: number; system: number }>('cpu');
  return u.user + u.system;
};
type Target = (typeof targets)[number];
const phase = async (t: Target, kind: 'json' | 'poll', requests: number) => {
  const c0 = await cpuUs(t.child);
  await client.ask(kind, { base: t.url, sessions: t.sessions, tasks: t.tasks, requests });
  return ((await cpuUs(t.child)) - c0) / requests;
};

// --- Warm-up, not measured; then alternating rounds: the proxies' order and the phases' order flip ---
for (const t of targets)
  for (const kind of ['json', 'poll'] as const) await phase(t, kind, Math.max(50, REQUESTS / 10));
interface Counted {
  live: number;
  polls: number;
  recorded: number;
  findings: number;
}
const ids = Object.values(targets[0]!.tasks).flat();
const counted = () => targets[0]!.child.ask<Counted>('tasks', { ids });
const before = await counted();
for (let round = 0; round < ROUNDS; round++) {
  for (const t of round % 2 === 0 ? targets : [...targets].reverse())
    for (const kind of round % 2 === 0 ? (['json', 'poll'] as const) : (['poll', 'json'] as const))
      t[kind].push(await phase(t, kind, REQUESTS));
}
// A request's span reaches the detector as its exchange ends, which may be just after the client read the answer.
const measured = ROUNDS * REQUESTS;
let seen = await counted();
for (let i = 0; i < 20 && seen.recorded - before.recorded < measured; i++) {
  await sleep(50);
  seen = await counted();
}
// Every poll must have reached the gateway's detector as a poll of a live task, or the figure is of something else.
const polls = seen.polls - before.polls;
const recorded = seen.recorded - before.recorded;
if (polls !== measured || recorded !== measured || seen.live !== CONCURRENCY * TASKS)
  throw new Error(
    `gateway's detector: ${polls} polls counted and ${recorded} recorded on the tasks of ${measured}, ${seen.live} live tasks of ${CONCURRENCY * TASKS}`,
  );

// --- Figure ---
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const range = (a: number[]): [number, number] => [Math.min(...a), Math.max(...a)];
const ratios = (t: Target) => t.poll.map((p, i) => p / t.json[i]!);
const [gateway, bare] = targets as [Target, Target];
const ratio = median(ratios(gateway));
const fmt = (n: number, d = 1) => n.toFixed(d);
console.log(
  `${ROUNDS} alternating rounds of ${REQUESTS} tasks/get and ${REQUESTS} JSON tools/call a proxy, ${CONCURRENCY} sessions (${VERSION}) ` +
    `of ${TASKS} live tasks each; µs CPU per poll / per request: gateway ${fmt(mean(gateway.poll))} / ${fmt(mean(gateway.json))}, ` +
    `bare ${fmt(mean(bare.poll))} / ${fmt(mean(bare.json))}; gateway round ratios ${ratios(gateway)
      .map((r) => fmt(r, 2))
      .join(' ')}`,
);
figure({
  bench: 'gateway',
  name: 'gateway, proxy process CPU per tasks/get of a live task (2025-11-25, observing), median of round ratios to a JSON tools/call',
  value: mean(gateway.poll),
  unit: 'µs CPU per poll',
  range: range(gateway.poll),
  reference: {
    name: 'the same gateway, per tools/call answered with JSON (a request before tasks)',
    value: mean(gateway.json),
    unit: 'µs CPU per request',
    range: range(gateway.json),
  },
  ratio,
  target: 'ratio 1.0 at most',
  note:
    `${ratio <= 1 ? 'met' : 'not met'}; round ratios ${fmt(Math.min(...ratios(gateway)), 2)}–${fmt(Math.max(...ratios(gateway)), 2)}; ` +
    `bare Node proxy, same run: ${fmt(mean(bare.poll))} µs per poll, ${fmt(mean(bare.json))} per request (ratio ${fmt(median(ratios(bare)), 2)}); ` +
    `the gateway's detector recorded every poll on its task (${seen.live} live tasks), ${seen.findings} findings; ` +
    `${ROUNDS} alternating rounds of ${REQUESTS} each, ${CONCURRENCY} sessions`,
});

for (const c of [...targets.map((t) => t.child), client, up.child]) c.proc.disconnect();
