import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, rmdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingKind, FindingRecord, ResumeOutcome, StormEnd } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { Detector, type Finding, type SpanRecord } from '@resumewatch/detector';
import { decodeState, encodeState } from '../src/doors/state-file.js';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { healthz, postHead, rawConnect } from './helpers/raw-client.js';
import { essence, reattach, resume, seedScenario } from '../../detector/test/helpers/spans.js';
import { waitFor } from '../../detector/test/helpers/wait.js';

const CLI = join(import.meta.dirname, '../dist/cli.js');
const QUIET = { port: 0, grpcPort: false as const, metricsPort: 0, output: null, log: () => undefined };

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'resumewatch-state-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function send(server: RunningServer, spans: SpanRecord[]): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${server.httpPort}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(otlpJson(spans, 'svc-state')),
  });
  expect(res.status).toBe(200);
}

/** The seed failure split in two: the live terminal and the first replay (duplicate, resume after terminal), then the storm. */
function splitSeed(session: string): { all: SpanRecord[]; before: SpanRecord[]; after: SpanRecord[] } {
  const all = seedScenario({ session, request: 1, service: 'svc-state' }, 3, Date.now() - 10_000);
  return { all, before: all.slice(0, 4), after: all.slice(4) };
}

function reference(spans: SpanRecord[]): string[] {
  const out: Finding[] = [];
  const d = new Detector({ onFinding: (f) => out.push(f) });
  for (const s of spans) d.ingest(s);
  return out.map(essence).sort();
}

describe('state across restarts (--state-file)', () => {
  it('7. a graceful restart loses no finding: the split failure is reported as if nothing had stopped', async () => {
    const file = join(dir, 'rolling.state');
    const { all, before, after } = splitSeed('rolling');
    const a = await startServer({ ...QUIET, stateFile: file });
    await send(a, before);
    expect(
      a
        .findings()
        .map((f) => f.kind)
        .sort(),
    ).toEqual([FindingKind.DUPLICATE_TERMINAL, FindingKind.RESUME_AFTER_TERMINAL].sort());
    await a.close();
    expect((await stat(file)).size).toBeGreaterThan(0);
    const b = await startServer({ ...QUIET, stateFile: file });
    expect(b.restored).toEqual({ tracked: 1 });
    await send(b, after);
    expect(
      b
        .findings()
        .filter((f) => f.record === undefined)
        .map((f) => f.kind)
        .sort(),
    ).toEqual([FindingKind.RECONNECT_STORM, FindingKind.SIGNATURE].sort());
    expect([...a.findings(), ...b.findings()].map(essence).sort()).toEqual(reference(all));
    expect(b.findings().find((f) => f.record === FindingRecord.STORM_ENDED)).toMatchObject({
      attempts: 4,
      duplicates: 3,
      ended_by: StormEnd.EVICTED,
    });
    await b.close();
  });

  it('7. without the state file the same restart splits the failure (the loss the file prevents)', async () => {
    const { all, before, after } = splitSeed('amnesia');
    const a = await startServer(QUIET);
    await send(a, before);
    await a.close();
    const b = await startServer(QUIET);
    await send(b, after);
    expect([...a.findings(), ...b.findings()].map(essence).sort()).not.toEqual(reference(all));
    await b.close();
  });

  it('7. periodic snapshots: a crash loses only what came after the last one', async () => {
    const file = join(dir, 'crash.state');
    const { all, before, after } = splitSeed('crash');
    const a = await startServer({ ...QUIET, stateFile: file, snapshotIntervalMs: 100 });
    await send(a, before);
    await new Promise((r) => setTimeout(r, 350));
    // The process "dies" here: what is on disk is the periodic snapshot, not a shutdown one.
    const crashed = join(dir, 'crash-copy.state');
    await copyFile(file, crashed);
    const b = await startServer({ ...QUIET, stateFile: crashed });
    expect(b.restored).toEqual({ tracked: 1 });
    await send(b, after);
    expect([...a.findings(), ...b.findings()].map(essence).sort()).toEqual(reference(all));
    await Promise.all([a.close(), b.close()]);
  });

  it('7. a body still uploading at shutdown is answered within --grace, and its spans are in the state written', async () => {
    const file = join(dir, 'grace.state');
    const server = await startServer({ ...QUIET, stateFile: file, graceMs: 3000 });
    const body = Buffer.from(JSON.stringify(otlpJson(splitSeed('grace').before, 'svc-state')));
    const c = await rawConnect(server.httpPort);
    c.socket.write(postHead({ 'content-type': 'application/json', 'content-length': body.length }));
    c.socket.write(body.subarray(0, 100));
    await new Promise((r) => setTimeout(r, 50));
    let closed = false;
    const closing = server.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(closed).toBe(false);
    // New connections are refused while the old one finishes.
    await expect(
      fetch(`http://127.0.0.1:${server.httpPort}/v1/traces`, { method: 'POST', body: '{}' }),
    ).rejects.toThrow();
    c.socket.write(body.subarray(100));
    expect(await c.until(/^HTTP\/1\.1 200 /)).toBeTruthy();
    await closing;
    const state = decodeState(await readFile(file));
    expect(state.requests.sessionIds.filter((s) => s === 'grace')).toHaveLength(1);
  });

  it('7. a state file kept with other options is set aside, and serve starts empty', async () => {
    const file = join(dir, 'other.state');
    const a = await startServer({ ...QUIET, stateFile: file, maxRequests: 5000 });
    await send(a, splitSeed('other').before);
    await a.close();
    const lines: string[] = [];
    const b = await startServer({ ...QUIET, stateFile: file, maxRequests: 6000, log: (l) => lines.push(l) });
    expect(b.restored).toEqual({
      error: `state file ${file} not loaded (state was kept with maxRequests=5000, this detector has 6000); starting empty`,
    });
    expect(lines).toEqual([(b.restored as { error: string }).error]);
    expect(b.detector.stats().tracked).toBe(0);
    expect((await stat(`${file}.rejected`)).size).toBeGreaterThan(0);
    expect(await healthz(b.metricsPort)).toBe(200);
    await b.close();
  });

  it('7. a snapshot that cannot be written is one line, never a crash, and the next one is still tried', async () => {
    const file = join(dir, 'not-yet-writable.state');
    await mkdir(file);
    const lines: string[] = [];
    const server = await startServer({ ...QUIET, stateFile: file, log: (l) => lines.push(l) });
    expect(server.restored).toEqual({ error: expect.stringMatching(`^cannot read ${file}: EISDIR`) });
    await send(server, splitSeed('unwritable').before);
    // Two at once: they share one write after the other, and each failure is told once (no unhandled rejection).
    await Promise.all([server.snapshot(), server.snapshot()]);
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(`^snapshot to ${file} failed: EISDIR`),
      expect.stringMatching(`^snapshot to ${file} failed: EISDIR`),
    ]);
    // The path becomes writable: the next snapshot does not inherit the failure.
    await rmdir(file);
    await server.snapshot();
    expect(decodeState(await readFile(file)).requests.sessionIds).toContain('unwritable');
    await server.close();
  });

  it('a restart between a poll and its reattach span: the reattach is still no attempt (no storm)', () => {
    // SEP-1699 polling: each poll is a GET with Last-Event-ID whose resume span (outcome poll) and
    // reattach span arrive apart; a restart between the two must not turn the polls into a storm.
    const r = { session: 'polled', request: 1, service: 'svc-state' };
    const t0 = Date.now() - 60_000;
    const polls = [1, 2, 3, 4, 5].map((i) => ({
      resume: resume(r, t0 + i * 100, `P${i}`, 'A', { outcome: ResumeOutcome.POLL, observed: false, replayed: 0 }),
      reattach: reattach(r, t0 + i * 100, `P${i}`, 'A'),
    }));
    const findings: Finding[] = [];
    const before = new Detector({ onFinding: (f) => findings.push(f) });
    for (const p of polls) before.ingest(p.resume);
    const after = new Detector({ onFinding: (f) => findings.push(f) });
    after.importState(decodeState(encodeState(before.exportState())));
    for (const p of polls) after.ingest(p.reattach);
    after.flush();
    expect(findings).toEqual([]);
    // The same spans without the restart: no finding either.
    expect(reference(polls.flatMap((p) => [p.resume, p.reattach]))).toEqual([]);
  });

  it('round-trips every field of the state, typed arrays, holes and non-finite numbers included', () => {
    const d = new Detector({ maxRequests: 16, dedupeCapacity: 64 });
    for (const s of seedScenario({ session: 'rt', request: 1 }, 3)) d.ingest(s);
    const state = d.exportState();
    const back = decodeState(encodeState(state));
    expect(back).toEqual(state);
    expect(new Detector().exportState().now).toBe(-Infinity);
    expect(decodeState(encodeState(new Detector().exportState())).now).toBe(-Infinity);
  });

  it("keeps other parts' sections beside the state: the detector's part reads as without them", () => {
    const d = new Detector({ maxRequests: 16, dedupeCapacity: 64 });
    for (const s of seedScenario({ session: 'sections', request: 1 }, 3)) d.ingest(s);
    const state = d.exportState();
    const file = encodeState(state, { 'wire-observer': { v: 1, rows: [[1, 'a', null]] } });
    expect(file.length).toBeGreaterThan(encodeState(state).length);
    expect(decodeState(file)).toEqual(state);
    const after = new Detector({ maxRequests: 16, dedupeCapacity: 64 });
    after.importState(decodeState(file));
    expect(after.stats().tracked).toBe(d.stats().tracked);
  });

  it('gives services back their numbers on import, and refuses a service list that does not fit them', () => {
    const d = new Detector();
    for (const service of ['svc-a', 'svc-b'])
      for (const s of seedScenario({ session: service, request: 1, service }, 3)) d.ingest(s);
    const state = d.exportState();
    expect(state.services).toEqual(['svc-a', 'svc-b']);
    const back = new Detector();
    back.importState(state);
    expect(back.exportState().services).toEqual(['svc-a', 'svc-b']);
    expect(() => new Detector().importState({ ...state, services: ['svc-a', 'svc-a'] })).toThrow(
      'state holds 2 services, 1 distinct within the cap',
    );
  });
});

describe('resumewatch serve --state-file (built CLI)', () => {
  function run(file: string) {
    const child = spawn(process.execPath, [
      CLI,
      'serve',
      '--port',
      '0',
      '--grpc-port',
      'off',
      '--metrics-port',
      '0',
      '--state-file',
      file,
      '--grace',
      '2s',
    ]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return {
      child,
      exited,
      stdout: () => stdout,
      stderr: () => stderr,
      async port(): Promise<number> {
        await waitFor(() => /metrics on/.test(stderr), 'the CLI to listen', 10_000);
        return Number(/127\.0\.0\.1:(\d+)\/v1\/traces/.exec(stderr)![1]);
      },
    };
  }

  it('7. SIGTERM writes the state; the next process reads it back and completes the failure', async () => {
    const file = join(dir, 'cli.state');
    const { before, after } = splitSeed('cli-rolling');
    const post = async (port: number, spans: SpanRecord[]) =>
      expect(
        (
          await fetch(`http://127.0.0.1:${port}/v1/traces`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(otlpJson(spans, 'svc-state')),
          })
        ).status,
      ).toBe(200);
    const first = run(file);
    await post(await first.port(), before);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const second = run(file);
    await post(await second.port(), after);
    expect(second.stderr()).toMatch(/restored 1 tracked requests from/);
    await waitFor(() => /signature/.test(second.stdout()), 'the signature from the restored state', 5000);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    const kinds = second
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Finding)
      .filter((f) => f.record === undefined)
      .map((f) => f.kind)
      .sort();
    expect(kinds).toEqual([FindingKind.RECONNECT_STORM, FindingKind.SIGNATURE].sort());
  });
});
