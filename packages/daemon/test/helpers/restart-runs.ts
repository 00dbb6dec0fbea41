import { stat } from 'node:fs/promises';
import type { Finding } from '@resumewatch/detector';
import { startServer, type ResumewatchConfig } from '../../src/index.js';
import { belongsTo, type Sequence } from './restart-corpus.js';
import { postBatch, serveFlags, startServe, type ServeProcess } from './serve-process.js';

/**
 * The options of every serve of a restart test (and of the detector that finalizes its state). The storm
 * window and the retention are far longer than a test run: no storm may end, and no state may leave, by
 * the wall clock while spans are being sent, or two runs would differ by when serve's clock ticked. What
 * time ends is seen once all spans are in, by moving the restored detector's clock (`finalize`).
 */
const RESTART_OPTIONS = {
  stormWindowMs: 10 * 60_000,
  retentionMs: 60 * 60_000,
  maxRequests: 10_000,
  dedupeCapacity: 50_000,
  findingsBuffer: 100_000,
} satisfies Partial<ResumewatchConfig>;

/** How often a serve that is to be killed writes its snapshot: often, so that the test waits little for one. */
const SNAPSHOT_INTERVAL_MS = 50;

/**
 * Where one sequence is cut: the first serve stops after `k` of its export requests; when it is killed,
 * a snapshot written after its first `s` (s ≤ k) is on disk, and a later one may be.
 */
export interface Cut {
  s: number;
  k: number;
}

/** One sequence's findings: those of the serve process(es) that received it, in order, and those time then adds. */
export interface SequenceFindings {
  reported: Finding[];
  finalized: Finding[];
}

/** The uninterrupted run: each sequence's findings, and how many it had after n of its export requests (n at each cut). */
export interface ReferenceFindings extends SequenceFindings {
  after: Map<number, number>;
}

const ofSequence = (findings: Finding[], sequence: Sequence): Finding[] =>
  findings.filter((f) => belongsTo(f.service, sequence.name));

/** Sends export requests [from, to) of every sequence: the sequences at once, each in its order. */
async function send(
  serve: ServeProcess,
  sequences: readonly Sequence[],
  range: (i: number) => [number, number],
): Promise<void> {
  await Promise.all(
    sequences.map(async (sequence, i) => {
      const [from, to] = range(i);
      for (let j = from; j < to; j++) await serve.post(sequence.batches[j]!);
    }),
  );
}

/**
 * What the state in `file` still holds once time passes: a detector restored from it (the same code as
 * serve, in process) moved far past every window and retention. Storms still open end quietly and are
 * reported; every state is released.
 */
async function finalize(file: string): Promise<Finding[]> {
  const notices: string[] = [];
  const server = await startServer({
    ...RESTART_OPTIONS,
    stateFile: file,
    port: 0,
    grpcPort: false,
    metricsPort: 0,
    output: null,
    log: (line) => void notices.push(line),
  });
  try {
    if (!server.restored || 'error' in server.restored)
      throw new Error(`the final state was not restored: ${notices.join('; ')}`);
    server.detector.advance(Number.MAX_SAFE_INTEGER);
    return server.findings();
  } finally {
    await server.close();
  }
}

function stateFlags(file: string, snapshots: boolean): string[] {
  return [
    ...serveFlags({
      ...RESTART_OPTIONS,
      stateFile: file,
      snapshotIntervalMs: snapshots ? SNAPSHOT_INTERVAL_MS : 0,
    }),
    '--grace',
    '2s',
  ];
}

async function stopGracefully(serve: ServeProcess): Promise<void> {
  const end = await serve.stop('SIGTERM');
  if (end !== 0) throw new Error(`serve ended with ${end} on SIGTERM: ${serve.stderr()}`);
}

/**
 * One uninterrupted serve (in process: the server `resumewatch serve` runs, over the same OTLP/HTTP):
 * every sequence sent whole, the findings counted after each cut's export requests; then time passes on
 * the live detector itself, so that no state file stands between the reference and what time ends.
 */
export async function referenceRun(
  sequences: readonly Sequence[],
  cutsOf: (i: number) => readonly number[],
): Promise<ReferenceFindings[]> {
  const server = await startServer({
    ...RESTART_OPTIONS,
    port: 0,
    grpcPort: false,
    metricsPort: 0,
    output: null,
    log: () => undefined,
  });
  try {
    const after = await Promise.all(
      sequences.map(async (sequence, i) => {
        const counts = new Map<number, number>();
        const cuts = new Set(cutsOf(i));
        for (let j = 0; j < sequence.batches.length; j++) {
          if (cuts.has(j)) counts.set(j, ofSequence(server.findings(), sequence).length);
          await postBatch(server.httpPort, sequence.batches[j]!);
        }
        return counts;
      }),
    );
    const reported = server.findings();
    server.detector.advance(Number.MAX_SAFE_INTEGER);
    const finalized = server.findings().slice(reported.length);
    return sequences.map((sequence, i) => {
      after[i]!.set(sequence.batches.length, ofSequence(reported, sequence).length);
      return {
        reported: ofSequence(reported, sequence),
        finalized: ofSequence(finalized, sequence),
        after: after[i]!,
      };
    });
  } finally {
    await server.close();
  }
}

/** Resolves once a snapshot begun after this call is on disk: the second new file (the first may have been begun before). */
async function snapshotFromNow(file: string, timeoutMs = 10_000): Promise<void> {
  const version = async (): Promise<string> => {
    try {
      const s = await stat(file, { bigint: true });
      return `${s.ino}:${s.mtimeNs}:${s.size}`;
    } catch {
      return 'none';
    }
  };
  let seen = await version();
  let changes = 0;
  const deadline = Date.now() + timeoutMs;
  while (changes < 2) {
    if (Date.now() > deadline) throw new Error(`no snapshot of ${file} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, SNAPSHOT_INTERVAL_MS / 5));
    const now = await version();
    if (now !== seen) {
      seen = now;
      changes++;
    }
  }
}

/** How a restart test stops the first serve, and what the second one is sent. */
export type RestartMode =
  /** SIGTERM after k export requests (the state written on exit); the second serve gets the rest. */
  | 'sigterm'
  /** A snapshot after s, SIGKILL after k; the second serve gets everything from s on again. */
  | 'sigkill-resend'
  /** A snapshot after s, SIGKILL after k; the second serve gets the rest from k on, as an exporter would. */
  | 'sigkill';

/** Two serve processes over one state file: the first stopped (`mode`) at each sequence's cut, the second sent the rest. */
export async function restartRun(
  file: string,
  sequences: readonly Sequence[],
  cut: (i: number) => Cut,
  mode: RestartMode,
): Promise<SequenceFindings[]> {
  const killed = mode !== 'sigterm';
  const flags = stateFlags(file, killed);
  const first = await startServe(flags);
  let firstFindings: Finding[];
  try {
    if (killed) {
      await send(first, sequences, (i) => [0, cut(i).s]);
      await snapshotFromNow(file);
    }
    await send(first, sequences, (i) => [killed ? cut(i).s : 0, cut(i).k]);
    firstFindings = await first.findings();
  } catch (e) {
    await first.stop('SIGKILL');
    throw e;
  }
  if (!killed) await stopGracefully(first);
  else if ((await first.stop('SIGKILL')) !== 'SIGKILL') throw new Error('serve did not die of SIGKILL');
  const second = await startServe(flags);
  try {
    if (!/restored \d+ tracked requests/.test(second.stderr()))
      throw new Error(`the restarted serve did not restore its state: ${second.stderr()}`);
    await send(second, sequences, (i) => [
      mode === 'sigkill-resend' ? cut(i).s : cut(i).k,
      sequences[i]!.batches.length,
    ]);
    const secondFindings = await second.findings();
    await stopGracefully(second);
    const finalized = await finalize(file);
    return sequences.map((sequence) => ({
      reported: [...ofSequence(firstFindings, sequence), ...ofSequence(secondFindings, sequence)],
      finalized: ofSequence(finalized, sequence),
    }));
  } catch (e) {
    await second.stop('SIGKILL');
    throw e;
  }
}
