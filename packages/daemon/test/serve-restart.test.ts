// Restarts proven by behaviour: `resumewatch serve` (the built CLI) is stopped at random points of every
// lab scenario and of a corpus of span sequences, restarted on its state file and sent the rest; the
// findings of its two lives together are compared with those of one uninterrupted serve. The spans are
// recorded once (the lab scenarios through the real instrumentation and OTLP/JSON exporter) and replayed
// byte for byte; all sequences share each serve (their services keep them apart), so that a handful of
// processes covers a cut in every sequence. Cuts are drawn from one seed, printed with every failure;
// RESTART_TEST_SEED=<seed> replays them.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { join } from 'node:path';
import { LAB_SERVER_SCENARIO_NAMES, TASK_SCENARIO_NAMES } from '@resumewatch/lab';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_TASK_ID,
  FINDING_KINDS,
  FindingKind,
  FindingRecord,
} from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJsonRequest, type Finding } from '@resumewatch/detector';
import { recordLabScenario, recordTaskScenario, shiftedBatches, type OtlpBatch } from './helpers/otlp-recording.js';
import { restartCorpus, type Sequence } from './helpers/restart-corpus.js';
import {
  referenceRun,
  restartRun,
  type Cut,
  type ReferenceFindings,
  type RestartMode,
  type SequenceFindings,
} from './helpers/restart-runs.js';

const SEED = Number(process.env.RESTART_TEST_SEED) || 1 + Math.floor(Math.random() * 2 ** 31);
const TIMEOUT = 60_000;
/** How far the task scenarios' spans are moved ahead of the wall clock (far past a test run, within retention). */
const TASKS_AHEAD_MS = 30 * 60_000;
/** Recording every lab and task scenario at once, on a shared machine. */
const RECORD_TIMEOUT = 180_000;

/** The restarts of this file: two graceful ones, two crashes (the lost export requests sent again, or not). */
const ROUNDS: readonly RestartMode[] = ['sigterm', 'sigterm', 'sigkill-resend', 'sigkill'];

/** xorshift32 from the seed and the round: the same cuts for the same seed. */
function cutsOfRound(sequences: readonly Sequence[], round: number): Cut[] {
  let x = (SEED ^ Math.imul(round + 1, 0x9e3779b1)) >>> 0 || 1;
  const below = (n: number): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
  return sequences.map((sequence) => {
    const n = sequence.batches.length;
    const k = n < 2 ? n : 1 + below(n - 1);
    return { k, s: below(k + 1) };
  });
}

/** A finding as the comparison sees it: every field (none of them is wall-clock time), keys in one order. */
const canonical = (f: Finding): string =>
  JSON.stringify(Object.fromEntries(Object.entries(f).sort(([a], [b]) => (a < b ? -1 : 1))));

/** `a` without one occurrence of each of `b` (multisets). */
function minus(a: readonly string[], b: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const x of b) left.set(x, (left.get(x) ?? 0) + 1);
  return a.filter((x) => {
    const n = left.get(x) ?? 0;
    if (n > 0) left.set(x, n - 1);
    return n === 0;
  });
}

/** What is missing from `got`, and what it has beyond `want` (a finding reported twice included). */
const difference = (got: readonly Finding[], want: readonly Finding[]) => {
  const g = got.map(canonical);
  const w = want.map(canonical);
  return { missing: minus(w, g), extra: minus(g, w) };
};

const requestOf = (service: string, session: string, request: string): string =>
  JSON.stringify([service, session, request]);
const findingRequest = (f: Finding): string => requestOf(f.service, f.session_id, f.request_id);

/** A task's key: its findings name the request that created it, its later spans are other requests'. */
const taskOf = (service: string, task: string): string => JSON.stringify([service, 'task', task]);
/** The (service, session, request) of every span in `batches` that names one, and the task of every span that names one. */
function requestsIn(batches: readonly OtlpBatch[]): Set<string> {
  const out = new Set<string>();
  for (const batch of batches)
    decodeJsonRequest(batch.body, (s) => {
      const session = s.attributes[ATTR_MCP_SESSION_ID];
      const request = s.attributes[ATTR_JSONRPC_REQUEST_ID];
      const task = s.attributes[ATTR_MCP_TASK_ID];
      if (session !== undefined && request !== undefined)
        out.add(requestOf(s.service, String(session), String(request)));
      if (task !== undefined) out.add(taskOf(s.service, String(task)));
    });
  return out;
}

/** Whether a span of the finding's request, or of its task(s), is among `lost`. */
const touchedBy = (lost: ReadonlySet<string>, f: Finding): boolean =>
  lost.has(findingRequest(f)) ||
  [f.task_id, f.duplicate_task_id].some((task) => task !== undefined && lost.has(taskOf(f.service, task)));

let dir: string;
let sequences: Sequence[];
let cuts: Cut[][];
let reference: Promise<ReferenceFindings[]>;
let rounds: Promise<SequenceFindings[]>[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'resumewatch-restart-'));
  const now = Date.now();
  // Each lab scenario once, all at once, each on its own lab server (server-restart's deadline is the
  // evidence of its finding: short, as in the lab's own tests).
  const lab = await Promise.all(
    LAB_SERVER_SCENARIO_NAMES.map(async (name) => {
      const service = `lab.${name}`;
      const options = name === 'server-restart' ? { requestTimeoutMs: 2_000 } : {};
      return { name: service, batches: await recordLabScenario(name, service, options) };
    }),
  );
  // Each task scenario once (both shapes), and the re-issue with an idempotency key (duplicate_task):
  // their task records are kept in the state file across the restarts. A re-issue's first attempt's
  // server span joins its trace under a W3C propagator, as the OpenTelemetry Node SDK registers it. Their
  // times are moved an hour ahead: the expiry scenarios' ttl (1 s) would otherwise pass by serve's clock
  // while they are sent, at a moment no two runs share (a lost result reported at the ttl in one run, at
  // the `gone` answer in another); the clock is moved past every ttl once all spans are in.
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const tasks = await Promise.all([
    ...TASK_SCENARIO_NAMES.map(async (name) => {
      const service = `lab.${name}`;
      return { name: service, batches: await recordTaskScenario(name, service) };
    }),
    (async () => {
      const service = 'lab.task-reissue-after-lost-reply-keyed';
      const batches = await recordTaskScenario('task-reissue-after-lost-reply', service, { idempotencyKey: true });
      return { name: service, batches };
    })(),
  ]);
  propagation.disable();
  const ahead = tasks.map((t) => ({ name: t.name, batches: shiftedBatches(t.batches, TASKS_AHEAD_MS) }));
  sequences = [...lab, ...ahead, ...restartCorpus(now)];
  cuts = ROUNDS.map((_, round) => cutsOfRound(sequences, round));
  // The reference and every round run at once: each has its own processes and state file.
  reference = referenceRun(sequences, (i) =>
    cuts.flatMap((round, r) => (ROUNDS[r] === 'sigterm' ? [] : [round[i]!.s, round[i]!.k])),
  );
  rounds = ROUNDS.map((mode, r) => restartRun(join(dir, `round-${r}.state`), sequences, (i) => cuts[r]![i]!, mode));
  // Failures are reported by the tests that await them.
  for (const p of [reference, ...rounds]) p.catch(() => undefined);
}, RECORD_TIMEOUT);

afterAll(async () => {
  // Every serve has stopped (the runs kill theirs on any failure) before their files go.
  await Promise.allSettled([reference, ...rounds]);
  await rm(dir, { recursive: true, force: true });
});

/** Where sequence i was cut in round r, for failure messages. */
const where = (r: number, i: number): string => {
  const c = cuts[r]![i]!;
  const n = sequences[i]!.batches.length;
  const stop = ROUNDS[r] === 'sigterm' ? 'SIGTERM' : `snapshot after ${c.s}, SIGKILL`;
  return `seed ${SEED} (RESTART_TEST_SEED=${SEED}), round ${r} (${ROUNDS[r]}), ${sequences[i]!.name}: ${stop} after ${c.k} of ${n} export requests`;
};

/** The reference's findings reported while export requests [from, to) of the sequence were received. */
const reportedBetween = (ref: ReferenceFindings, from: number, to: number): Finding[] =>
  ref.reported.slice(ref.after.get(from)!, ref.after.get(to)!);

describe('serve restarts: the findings of a stopped and restarted serve are those of an uninterrupted one', () => {
  it(
    'the reference covers every finding kind, every record, and storms still open at the end',
    { timeout: TIMEOUT },
    async () => {
      const ref = await reference;
      const all = ref.flatMap((s) => [...s.reported, ...s.finalized]);
      // The loop kinds (issue 39) have no lab scenario in this reference yet.
      const loops = new Set<string>([FindingKind.DEAD_SESSION_LOOP, FindingKind.LISTENING_STREAM_LOOP]);
      expect(new Set(all.filter((f) => f.record === undefined).map((f) => f.kind))).toEqual(
        new Set(FINDING_KINDS.filter((kind) => !loops.has(kind))),
      );
      expect(new Set(all.map((f) => f.record).filter(Boolean))).toEqual(new Set(Object.values(FindingRecord)));
      // Storms open at the end: only time ends them, after the restarts too.
      expect(ref.some((s) => s.finalized.some((f) => f.record === FindingRecord.STORM_ENDED))).toBe(true);
    },
  );

  it(
    'SIGTERM with --state-file: no finding missing, none extra, none reported twice, the same once time passes',
    { timeout: TIMEOUT },
    async () => {
      const ref = await reference;
      for (const [r, mode] of ROUNDS.entries()) {
        if (mode !== 'sigterm') continue;
        const got = await rounds[r]!;
        for (const [i, s] of got.entries()) {
          expect.soft(difference(s.reported, ref[i]!.reported), where(r, i)).toEqual({ missing: [], extra: [] });
          expect.soft(difference(s.finalized, ref[i]!.finalized), where(r, i)).toEqual({ missing: [], extra: [] });
        }
      }
    },
  );

  it(
    'SIGKILL, the export requests after the last snapshot sent again: nothing missing; repeated only what was first reported after the snapshot',
    { timeout: TIMEOUT },
    async () => {
      const ref = await reference;
      const r = ROUNDS.indexOf('sigkill-resend');
      const got = await rounds[r]!;
      for (const [i, s] of got.entries()) {
        const { s: snapshot, k } = cuts[r]![i]!;
        const { missing, extra } = difference(s.reported, ref[i]!.reported);
        expect.soft(missing, where(r, i)).toEqual([]);
        // A snapshot may have been written between s and k; what it holds is not reported again.
        expect.soft(minus(extra, reportedBetween(ref[i]!, snapshot, k).map(canonical)), where(r, i)).toEqual([]);
        expect.soft(difference(s.finalized, ref[i]!.finalized), where(r, i)).toEqual({ missing: [], extra: [] });
      }
    },
  );

  it(
    'SIGKILL: requests untouched after the last snapshot lose nothing; findings reported before it are never repeated',
    { timeout: TIMEOUT },
    async () => {
      const ref = await reference;
      const r = ROUNDS.indexOf('sigkill');
      const got = await rounds[r]!;
      for (const [i, s] of got.entries()) {
        const { s: snapshot, k } = cuts[r]![i]!;
        const lost = requestsIn(sequences[i]!.batches.slice(snapshot, k));
        const untouched = (f: Finding) => !touchedBy(lost, f);
        expect
          .soft(
            difference(s.reported.filter(untouched), ref[i]!.reported.filter(untouched)),
            `${where(r, i)}: requests without a span after the snapshot`,
          )
          .toEqual({ missing: [], extra: [] });
        expect
          .soft(
            difference(s.finalized.filter(untouched), ref[i]!.finalized.filter(untouched)),
            `${where(r, i)}: requests without a span after the snapshot, once time passes`,
          )
          .toEqual({ missing: [], extra: [] });
        // The requests that lost spans: what was reported before the snapshot stands, once.
        const before = reportedBetween(ref[i]!, 0, snapshot).map(canonical);
        const reported = s.reported.map(canonical);
        expect
          .soft(
            before.filter((f) => reported.filter((x) => x === f).length !== 1),
            `${where(r, i)}: reported before the snapshot`,
          )
          .toEqual([]);
      }
    },
  );
});
