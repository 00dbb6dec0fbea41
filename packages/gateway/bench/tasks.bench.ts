/**
 * A task poll against a request before tasks ("each poll costs no more than a request does today"): the
 * gateway's (observing) process CPU per `tasks/get` of a live 2025-11-25 task against per tools/call
 * answered with JSON, alternating phases; the bare proxy's beside them. Each session creates `--tasks`
 * tasks, then polls them in turn (each slower than its 20 ms interval: a steady cost, not a poll storm).
 * The run fails unless every measured poll reached the gateway's detector and was recorded on its task.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Child, alternate, arg, compare, compared, figure } from '../../../bench/harness.js';

const ROUNDS = arg('rounds', 6, 2);
const REQUESTS = arg('requests', 3000, 40);
const CONCURRENCY = arg('concurrency', 8, 2);
const TASKS = arg('tasks', 64, 4);

const here = import.meta.dirname + '/parts.ts';
const upstream = (await Child.start(here, ['upstream'])).first.url as string;
const client = await Child.start(here, ['client']);
const targets = await Promise.all(
  (['gateway', 'bare'] as const).map(async (name) => {
    const proxy = await Child.start(here, [name, upstream]);
    const base = proxy.first.url as string;
    const { sessions } = await client.ask<{ sessions: string[] }>('open', {
      base,
      n: CONCURRENCY,
      version: '2025-11-25',
    });
    const { tasks } = await client.ask<{ tasks: Record<string, string[]> }>('tasks', { base, sessions, n: TASKS });
    return { proxy, base, sessions, tasks, json: [] as number[], poll: [] as number[] };
  }),
);
const [gateway, bare] = targets as [(typeof targets)[0], (typeof targets)[0]];
const ids = Object.values(gateway.tasks).flat();
const counted = () =>
  gateway.proxy.ask<{ live: number; polls: number; recorded: number; findings: number }>('tasks', { ids });

const round = async (t: typeof gateway, kind: 'json' | 'poll', n: number) =>
  (await t.proxy.cpuDuring(() => client.ask(kind, { base: t.base, sessions: t.sessions, tasks: t.tasks, n }))) / n;
for (const t of targets)
  for (const kind of ['json', 'poll'] as const) await round(t, kind, Math.max(50, REQUESTS / 10));
const before = await counted();
await alternate(
  ['json', 'poll'] as const,
  ROUNDS,
  async (kind) => {
    for (const t of targets) t[kind].push(await round(t, kind, REQUESTS));
    return 0;
  },
  0,
);

// A request's span reaches the detector as its exchange ends, maybe just after the client read the answer.
let seen = await counted();
for (let i = 0; i < 20 && seen.recorded - before.recorded < ROUNDS * REQUESTS; i++, seen = await counted())
  await sleep(50);
if (seen.polls - before.polls !== ROUNDS * REQUESTS || seen.recorded - before.recorded !== ROUNDS * REQUESTS)
  throw new Error(
    `the gateway's detector counted ${seen.polls - before.polls} polls and recorded ${seen.recorded - before.recorded} of ${ROUNDS * REQUESTS}`,
  );
await Child.stopAll();

const g = compare(gateway.poll, gateway.json);
const b = compare(bare.poll, bare.json);
figure({
  id: 'gateway-task-poll',
  what: 'gateway, CPU per tasks/get of a live task (observing) against per tools/call answered with JSON',
  target: { text: '≤ 1.0x a request', bound: 1, dir: '<=' },
  ...compared(g, 'the same gateway, per JSON tools/call', 'µs CPU', 'µs CPU per poll'),
  heldBy: "the poll's record on its task in the detector",
  note: `bare proxy: ${b.ours.toFixed(0)} µs per poll, ${b.ref.toFixed(0)} per request; ${seen.live} live tasks, ${seen.findings} findings`,
});
