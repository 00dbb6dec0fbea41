// A gateway restarted on its --state-file (the built CLI, as users run it, in front of the real lab
// server): what its built-in detector tracked before a SIGTERM is what it tracks after, by serve's file
// and serve's schema: the findings of the two lives together are those of one gateway that never
// stopped, none missing, none reported twice. The wire observer's sessions, cursors, records and proofs
// are kept in the same file (its "wire-observer" section), with the open request spans: a resume refused
// before the restart is refused after it, a duplicate replayed after it is reported, and a request that
// was awaiting its result is tied to it or reported lost at the deadline it had. What the restart makes
// uncertain (a proof not yet given) fails safe: forwarded and reported, never withheld. A bad file is one
// line and an empty start, as for serve.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpHttpSession, isResponseTo, startLabServer, type FetchLike } from '@resumewatch/lab';
import { FindingKind, FindingRecord, GuardProof, RequestRecovery, StormEnd } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

const CLI = join(import.meta.dirname, '../../daemon/dist/cli.js');
const TIMEOUT = 60_000;

interface Finding {
  kind: string;
  record?: string;
  request_id: string;
  ended_by?: string;
  attempts?: number;
  duplicates?: number;
  recovery?: string;
}

/** `resumewatch gateway` in front of `upstream`, with `args`; its endpoint once it listens. */
async function gateway(upstream: string, args: string[]) {
  const child = spawn(process.execPath, [
    CLI,
    'gateway',
    '--upstream',
    upstream,
    '--port',
    '0',
    '--metrics-port',
    '0',
    ...args,
  ]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await vi.waitFor(() => expect(stderr).toMatch(/metrics on/), { timeout: 20_000, interval: 20 });
  return {
    url: /gateway on (\S+)/.exec(stderr)![1]!,
    metricsPort: Number(/127\.0\.0\.1:(\d+)\/metrics/.exec(stderr)![1]),
    stderr: () => stderr,
    /** The findings on stdout so far (records of a finding, such as a storm's end, left out). */
    findings: (): Finding[] => lines(stdout).filter((f) => f.record === undefined),
    /** The storms' ends on stdout so far. */
    records: (): Finding[] => lines(stdout).filter((f) => f.record === FindingRecord.STORM_ENDED),
    /** SIGTERM, as a rolling restart sends it: the exit code. */
    async stop(): Promise<number | null> {
      child.kill('SIGTERM');
      return exited;
    },
    kill: () => child.kill('SIGKILL'),
  };
}
type Gateway = Awaited<ReturnType<typeof gateway>>;

/** A fetch that sends every request to the gateway in `target.url` now: one client across the restart. */
function through(target: { url: string }): FetchLike {
  return (_input, init) => fetch(target.url, init);
}

const lines = (text: string): Finding[] =>
  text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Finding);
const kinds = (findings: readonly Finding[]): string[] => findings.map((f) => f.kind).sort();

/** The seed loop through `fetchThrough`: the tool's result arrives live, then `resumes` resumes with the stale cursor. */
async function seedLoop(fetchThrough: FetchLike, resumes: number) {
  const session = await McpHttpSession.open('http://gateway.invalid/mcp', fetchThrough, 'state-file');
  const call = session.toolCall('stream_progress', { count: 3, delay: 5 });
  const live = await session.post(call.message);
  expect(live.events.some((e) => isResponseTo(e.message, call.id))).toBe(true);
  // The last progress event's id: the cursor the seed's client sends on every reconnect.
  const cursor = live.events.filter((e) => e.id !== undefined && !isResponseTo(e.message, call.id)).at(-1)!.id!;
  // The result's own id: a cursor there proves the client read the result.
  const resultCursor = live.events.find((e) => isResponseTo(e.message, call.id))!.id!;
  const resume = async (from = cursor) => {
    const read = await session.get(from);
    return { status: read.status, replayed: read.events.some((e) => isResponseTo(e.message, call.id)) };
  };
  const statuses = [];
  for (let i = 0; i < resumes; i++) statuses.push(await resume());
  return { session, call, resume, resultCursor, statuses };
}

/**
 * A tool call that stays quiet `quietMs` after its first progress event, through `fetchThrough`; the
 * gateway `g` gets its SIGTERM as that event reaches the client, so the request awaits its result then.
 */
async function cutAtProgress(fetchThrough: FetchLike, g: Gateway, quietMs: number) {
  const session = await McpHttpSession.open('http://gateway.invalid/mcp', fetchThrough, 'state-file');
  const call = session.toolCall('quiet_progress', { quietMs });
  let stopped: Promise<number | null> | undefined;
  const cut = await session.post(call.message, {
    onEvent: (e) => {
      if (e.message !== undefined && !isResponseTo(e.message, call.id)) stopped ??= g.stop();
    },
  });
  expect(await stopped).toBe(0);
  expect(cut.events.some((e) => isResponseTo(e.message, call.id))).toBe(false);
  const cursor = cut.events.filter((e) => e.id !== undefined).at(-1)!.id!;
  return { session, call, cursor, cut };
}

let dir: string;
let lab: Awaited<ReturnType<typeof startLabServer>>;
const started: Gateway[] = [];
const start = async (args: string[]) => {
  const g = await gateway(lab.url, args);
  started.push(g);
  return g;
};
/**
 * The storm window: short enough that a storm open at the restart ends by it within the test, long
 * enough that it is still open at the SIGTERM that follows its report on a loaded machine.
 */
const WINDOW = ['--storm-window', '10s'];
const SEED_KINDS = [
  FindingKind.DUPLICATE_TERMINAL,
  FindingKind.RESUME_AFTER_TERMINAL,
  FindingKind.RECONNECT_STORM,
  FindingKind.SIGNATURE,
].sort();
const stormEnd = (f: Finding) => ({ ended_by: f.ended_by, attempts: f.attempts, duplicates: f.duplicates });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'resumewatch-gateway-state-'));
  lab = await startLabServer({ retryIntervalMs: 50 });
});
afterAll(async () => {
  for (const g of started) g.kill();
  await lab.close();
  await rm(dir, { recursive: true, force: true });
});

describe('resumewatch gateway --state-file (built CLI)', () => {
  it(
    'a storm open at SIGTERM: the restarted gateway ends it once, as one that never stopped does',
    { timeout: TIMEOUT },
    async () => {
      const file = join(dir, 'rolling.state');
      const [whole, first] = await Promise.all([start(WINDOW), start([...WINDOW, '--state-file', file])]);
      // The reference: one gateway that runs on until the storm's window passes.
      const loops = await Promise.all([seedLoop(through(whole), 3), seedLoop(through(first), 3)]);
      for (const loop of loops) expect(loop.statuses).toEqual(Array(3).fill({ status: 200, replayed: true }));
      await vi.waitFor(() => expect(kinds(first.findings())).toEqual(SEED_KINDS), { timeout: 10_000 });
      // SIGTERM while the storm runs: the state is written, the storm is left open for the next process.
      expect(await first.stop()).toBe(0);
      expect(first.records()).toEqual([]);
      expect((await stat(file)).size).toBeGreaterThan(0);
      const second = await start([...WINDOW, '--state-file', file]);
      // The session's initialize and its tools/call.
      expect(second.stderr()).toContain(`resumewatch: restored 2 tracked requests from ${file}\n`);
      await vi.waitFor(() => expect(whole.records()).toHaveLength(1), { timeout: 30_000 });
      await vi.waitFor(() => expect(second.records()).toHaveLength(1), { timeout: 30_000 });
      expect(stormEnd(whole.records()[0]!)).toMatchObject({ ended_by: StormEnd.QUIET, attempts: 3 });
      expect(stormEnd(second.records()[0]!)).toEqual(stormEnd(whole.records()[0]!));
      // Nothing reported twice: the restarted gateway's detector knew every finding was out.
      expect(kinds(second.findings())).toEqual([]);
      expect(kinds([...first.findings(), ...second.findings()])).toEqual(kinds(whole.findings()));
      await Promise.all([whole.stop(), second.stop()]);
    },
  );

  it(
    'what a restart keeps: a resume of a result proven received before it is refused after it, its replay never sent',
    { timeout: TIMEOUT },
    async () => {
      const file = join(dir, 'enforce.state');
      const first = await start(['--enforce', '--state-file', file]);
      const target = { url: first.url };
      const loop = await seedLoop(through(target), 0);
      // A resume from the result's own event id proves the client holds it (its cursor): that resume,
      // and the stale one after it, are refused.
      expect(await loop.resume(loop.resultCursor)).toEqual({ status: 405, replayed: false });
      expect(await loop.resume()).toEqual({ status: 405, replayed: false });
      expect(await first.stop()).toBe(0);
      expect(first.stderr()).toContain(
        `resumewatch: shutting down\nresumewatch: keeping 0 requests awaiting their result and 1 sessions observed in ${file}\n`,
      );
      const second = await start(['--enforce', '--state-file', file]);
      expect(second.stderr()).toContain(
        'resumewatch: restored 1 sessions and 0 requests of the wire observer, 0 awaiting their result\n',
      );
      target.url = second.url;
      // The new process knows the session's streams, its cursors and the proof: the stale resume is
      // refused as it was before the restart (not forwarded: the replay of the result never reaches the
      // client), and so is one from the result's own id. (A process that started empty forwarded both.)
      expect(await loop.resume()).toEqual({ status: 405, replayed: false });
      expect(await loop.resume(loop.resultCursor)).toEqual({ status: 405, replayed: false });
      await second.stop();
      // Refused before they left: no replay, nothing to report.
      expect(second.findings()).toEqual([]);
    },
  );

  it(
    'a result delivered before the restart and not yet proven received: its replay after it is forwarded and reported as a duplicate, then its proof refuses',
    { timeout: TIMEOUT },
    async () => {
      const file = join(dir, 'unproven.state');
      const first = await start(['--enforce', '--state-file', file]);
      const target = { url: first.url };
      // The result reached the gateway's client connection; no cursor of the client has named it yet.
      const loop = await seedLoop(through(target), 0);
      expect(await first.stop()).toBe(0);
      const second = await start(['--enforce', '--state-file', file]);
      target.url = second.url;
      // Uncertain (the client may not have read it): forwarded whole, as it would have been before the
      // restart, never withheld; but the restored record knows the result was delivered, so the replay
      // is a duplicate terminal of a resume after the terminal, and reported.
      expect(await loop.resume()).toEqual({ status: 200, replayed: true });
      await vi.waitFor(
        () =>
          expect(kinds(second.findings())).toEqual(
            [FindingKind.DUPLICATE_TERMINAL, FindingKind.RESUME_AFTER_TERMINAL].sort(),
          ),
        { timeout: 10_000 },
      );
      for (const f of second.findings()) expect(f.request_id).toBe(String(loop.call.id));
      // Now the client's cursor names the result: proven, and the next resume is refused.
      expect(await loop.resume(loop.resultCursor)).toEqual({ status: 405, replayed: false });
      await second.stop();
    },
  );

  it(
    'a request awaiting its result at SIGTERM: tied to its result when the client resumes to it through the restarted gateway',
    { timeout: TIMEOUT },
    async () => {
      const file = join(dir, 'open-tied.state');
      const first = await start(['--enforce', '--state-file', file]);
      const target = { url: first.url };
      const { session, call, cursor, cut } = await cutAtProgress(through(target), first, 1500);
      expect(cut.end).toBe('error');
      expect(first.stderr()).toContain(
        `resumewatch: keeping 1 requests awaiting their result and 1 sessions observed in ${file}\n`,
      );
      const second = await start(['--enforce', '--state-file', file]);
      expect(second.stderr()).toContain('of the wire observer, 1 awaiting their result\n');
      target.url = second.url;
      // The client resumes from its cursor: the restored stream places it, and the result it brings is
      // the restored request's (its span ends with it).
      const resumed = await session.get(cursor);
      const result = resumed.events.find((e) => isResponseTo(e.message, call.id));
      expect(result?.id).toBeDefined();
      // Tied: a cursor at the result proves it received, and a resume of it is refused. (A process that
      // started empty never knew the request, and forwarded that resume.)
      expect((await session.get(result!.id)).status).toBe(405);
      await second.stop();
      expect(kinds(second.findings())).toEqual([]);
    },
  );

  it(
    'a request awaiting its result at SIGTERM whose client never comes back: reported lost at the deadline it had',
    { timeout: TIMEOUT },
    async () => {
      const file = join(dir, 'open-lost.state');
      const timeout = ['--request-timeout', '8s'];
      const first = await start([...timeout, '--state-file', file]);
      const { call } = await cutAtProgress(through(first), first, 20_000);
      expect(kinds(first.findings())).toEqual([]);
      // The next process's own --request-timeout is an hour: the request keeps the deadline it had.
      const second = await start(['--request-timeout', '1h', '--state-file', file]);
      // No resume, no result: at the request's deadline (its start in the first process, plus 8 s) its
      // span ends without the result after its stream ended without it, and the restored detector says so.
      await vi.waitFor(() => expect(kinds(second.findings())).toEqual([FindingKind.LOST_RESULT]), {
        timeout: 40_000,
        interval: 100,
      });
      expect(second.findings()[0]).toMatchObject({
        request_id: String(call.id),
        recovery: RequestRecovery.NOT_RESUMED,
      });
      await second.stop();
    },
  );

  it(
    'a crash after a periodic snapshot (written in steps, the gateway serving between them): the proof it held is kept',
    { timeout: TIMEOUT },
    async () => {
      const file = join(dir, 'periodic.state');
      const first = await start(['--enforce', '--state-file', file, '--snapshot-interval', '200ms']);
      const target = { url: first.url };
      const loop = await seedLoop(through(target), 0);
      expect(await loop.resume(loop.resultCursor)).toEqual({ status: 405, replayed: false });
      // A periodic snapshot after the proof: the section names it.
      const proven = `"p":"${GuardProof.CURSOR}"`;
      await vi.waitFor(
        async () => expect((await readFile(file).catch(() => Buffer.alloc(0))).includes(proven)).toBe(true),
        {
          timeout: 20_000,
          interval: 50,
        },
      );
      // SIGKILL: no shutdown snapshot, the periodic one is what the next process reads.
      first.kill();
      const second = await start(['--enforce', '--state-file', file]);
      expect(second.stderr()).toContain('resumewatch: restored 1 sessions and 0 requests of the wire observer');
      target.url = second.url;
      expect(await loop.resume()).toEqual({ status: 405, replayed: false });
      await second.stop();
      expect(second.findings()).toEqual([]);
    },
  );

  it(
    "a wire observer's section it cannot read: one line, the observer starts empty, the detector's part is restored",
    { timeout: TIMEOUT },
    async () => {
      const file = join(dir, 'section.state');
      const first = await start(['--enforce', '--state-file', file]);
      const target = { url: first.url };
      const loop = await seedLoop(through(target), 0);
      expect(await loop.resume(loop.resultCursor)).toEqual({ status: 405, replayed: false });
      expect(await first.stop()).toBe(0);
      // The section of a later version (the same bytes, one digit changed): not this gateway's to read.
      const bytes = await readFile(file);
      const at = bytes.indexOf('"wire-observer":{"v":2,');
      expect(at).toBeGreaterThan(0);
      bytes.write('9', at + '"wire-observer":{"v":'.length);
      await writeFile(file, bytes);
      const second = await start(['--enforce', '--state-file', file]);
      const notices = second
        .stderr()
        .split('\n')
        .filter((l) => !/gateway on|^$/.test(l));
      expect(notices).toEqual([
        `resumewatch: restored 2 tracked requests from ${file}`,
        `resumewatch: the wire-observer section of ${file} not loaded (version 9, this gateway reads 2); it starts empty`,
      ]);
      target.url = second.url;
      // Empty: the resume is forwarded (a duplicate passed, never a result withheld), and serving.
      expect(await loop.resume()).toEqual({ status: 200, replayed: true });
      await second.stop();
      // The next snapshot writes the section this gateway holds: the file is its own again.
      expect((await readFile(file)).includes('"wire-observer":{"v":2,')).toBe(true);
    },
  );

  it(
    'a corrupt, a foreign or an unreadable state file: one line, the gateway starts empty and serves; a bad file is set aside, not lost',
    { timeout: TIMEOUT },
    async () => {
      const corrupt = join(dir, 'corrupt.state');
      const garbage = Buffer.from('RWSTATE1 and then not a state at all');
      await writeFile(corrupt, garbage);
      const foreign = join(dir, 'foreign.state');
      const kept = await start(['--max-requests', '5000', '--state-file', foreign]);
      await seedLoop(through(kept), 1);
      expect(await kept.stop()).toBe(0);
      const unreadable = join(dir, 'a-directory.state');
      await mkdir(unreadable);
      const [a, b, c] = await Promise.all([
        start(['--state-file', corrupt]),
        start(['--max-requests', '6000', '--state-file', foreign]),
        start(['--state-file', unreadable]),
      ]);
      const notices = (g: Gateway) =>
        g
          .stderr()
          .split('\n')
          .filter((l) => !/gateway on|^$/.test(l));
      expect(notices(a)).toEqual([
        `resumewatch: state file ${corrupt} not loaded (truncated state file); starting empty`,
      ]);
      expect(notices(b)).toEqual([
        `resumewatch: state file ${foreign} not loaded (state was kept with maxRequests=5000, this detector has 6000); starting empty`,
      ]);
      expect(notices(c)).toEqual([
        expect.stringMatching(new RegExp(`^resumewatch: cannot read ${unreadable}: EISDIR`)),
      ]);
      // Set aside whole, where someone can look at it; the next snapshot does not overwrite it.
      expect(await readFile(`${corrupt}.rejected`)).toEqual(garbage);
      expect((await stat(`${foreign}.rejected`)).size).toBeGreaterThan(0);
      for (const g of [a, b, c]) {
        // Empty, and serving: the seed loop through it is seen from the start.
        const loop = await seedLoop(through(g), 1);
        expect(loop.statuses).toEqual([{ status: 200, replayed: true }]);
        await vi.waitFor(
          () =>
            expect(kinds(g.findings())).toEqual(
              [FindingKind.DUPLICATE_TERMINAL, FindingKind.RESUME_AFTER_TERMINAL].sort(),
            ),
          { timeout: 10_000 },
        );
        expect((await fetch(`http://127.0.0.1:${g.metricsPort}/healthz`)).status).toBe(200);
      }
      await Promise.all([a.stop(), b.stop()]);
      // The snapshot that cannot be written is one line too, and the gateway still exits cleanly.
      expect(await c.stop()).toBe(0);
      expect(c.stderr()).toMatch(new RegExp(`resumewatch: snapshot to ${unreadable} failed: `));
    },
  );
});
