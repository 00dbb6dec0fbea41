import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FindingKind, FindingRecord, ProtocolEra, StormEnd } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import type { DemoRun } from '../src/index.js';

const cli = join(import.meta.dirname, '../dist/cli.js');
const run = promisify(execFile);

describe('resumewatch-demo (the built CLI that `pnpm start` runs)', () => {
  it('shows the failure found by the detector, then prevented by the guard', async () => {
    const { stdout } = await run(process.execPath, [cli, '--json'], { timeout: 60_000 });
    const [bare, guarded] = JSON.parse(stdout) as DemoRun[];

    expect(bare!.guarded).toBe(false);
    // As the README tells it: the final result on 4 responses, resumes answered 200, 200, 200, then the eviction's 404.
    expect(bare!.summary.distinctTerminalStreams).toBe(4);
    expect(bare!.summary.resumeStatuses).toEqual([200, 200, 200, 404]);
    expect(
      bare!.findings
        .filter((f) => f.record === undefined)
        .map((f) => f.kind)
        .sort(),
    ).toEqual(
      [
        FindingKind.DUPLICATE_TERMINAL,
        FindingKind.RESUME_AFTER_TERMINAL,
        FindingKind.RECONNECT_STORM,
        FindingKind.SIGNATURE,
      ].sort(),
    );
    // The signature comes as soon as it is complete (its counts are those known then); how the storm
    // ended is a record of its own: the whole storm, ended by the eviction's 404.
    expect(bare!.findings.find((f) => f.kind === FindingKind.SIGNATURE)!.duplicates).toBeGreaterThanOrEqual(1);
    expect(bare!.findings.filter((f) => f.record !== undefined)).toMatchObject([
      { kind: FindingKind.RECONNECT_STORM, record: FindingRecord.STORM_ENDED, attempts: 4, ended_by: StormEnd.EVICTED },
    ]);
    expect(bare!.findings.every((f) => f.session_id === bare!.summary.sessionId)).toBe(true);

    expect(guarded!.guarded).toBe(true);
    expect(guarded!.summary.terminalDeliveries).toBe(1);
    expect(guarded!.summary.resumeStatuses).toEqual([]);
    // The one stale resume was refused before it left the process: nothing for the detector to report.
    expect(guarded!.findings).toEqual([]);

    // The wire timeline of the request that went wrong agrees with the detector: 4 deliveries = 1 + 3 duplicates, 4 resumes after it.
    expect(bare!.timelines).toHaveLength(1);
    expect(bare!.timelines[0]).toMatchObject({ rpcId: '1', terminalDeliveries: 4, resumesAfterTerminal: 4 });
    expect(bare!.timelines[0]!.exchanges.map((x) => x.status)).toEqual([200, 200, 200, 200, 404]);
    // Guarded: the request is shown with its one resume, refused in the process (no status: it was never sent).
    expect(guarded!.timelines).toHaveLength(1);
    expect(guarded!.timelines[0]).toMatchObject({ rpcId: '1', terminalDeliveries: 1, resumesAfterTerminal: 1 });
    expect(guarded!.summary.finding).toMatch(
      /the client attempted 1 resume\(s\) with the stale cursor; 0 left the process, the last was refused in the process/,
    );
    const refused = guarded!.timelines[0]!.exchanges.at(-1)!;
    expect(refused.status).toBeUndefined();
    expect(refused.rejected).toMatch(/^InvalidResumptionError: request "1" is terminal/);
  });

  it('its third act, 2026-07-28: the re-issue of a call the server finished is a duplicate_execution, and the idempotency key runs its side effect once', async () => {
    const { stdout } = await run(process.execPath, [cli, '--json'], { timeout: 60_000 });
    const runs = JSON.parse(stdout) as DemoRun[];
    // The seed loop's two runs stay first, as before; the act is added after them.
    expect(runs.map((r) => r.era)).toEqual([ProtocolEra.SESSIONS, ProtocolEra.SESSIONS, ProtocolEra.STATELESS]);
    const modern = runs[2]!;
    expect(modern.summary.scenario).toBe('modern-broken-reissue');
    expect(modern.summary.details.protocolVersion).toBe('2026-07-28');
    expect(modern.summary.sessionId).toBeUndefined();
    // The server ran the first attempt after its stream closed; the re-issue carried its key and did not charge again.
    expect(modern.summary.details.firstAttempt).toMatchObject({
      serverOutcome: 'charged',
      completedAfterCancellation: true,
    });
    expect(modern.summary.details.reissues).toBe(1);
    expect((modern.summary.details.serverExecutions as Array<{ outcome: string }>).map((e) => e.outcome)).toEqual([
      'charged',
      'already_charged',
    ]);
    expect(modern.summary.sideEffectCount).toBe(1);
    // Both sides' spans told the detector: the first attempt completed after cancellation, and was re-issued.
    // The first attempt's broken stream was a lost result until its re-issue came, which retracted it.
    expect(modern.findings.map((f) => (f.record === undefined ? f.kind : `${f.kind}:${f.record}`))).toEqual([
      FindingKind.LOST_RESULT,
      `${FindingKind.LOST_RESULT}:${FindingRecord.RETRACTION}`,
      FindingKind.DUPLICATE_EXECUTION,
    ]);
    expect(modern.findings[2]).toMatchObject({ service: 'demo-client-2026-07-28', request_id: '1' });
  });

  it('prints one count per request, the timeline of the loop, and says the guarded resume was refused', async () => {
    const { stdout, stderr } = await run(process.execPath, [cli], { timeout: 60_000 });
    expect(stderr).toBe(
      'resumewatch-demo: running seed-loop twice against a lab server on loopback, then modern-broken-reissue (2026-07-28)...\n',
    );
    const [bare, guarded, modern] = stdout.split(/^== /m).slice(1);
    // One count for the request, not "(1 duplicate(s))" on duplicate_terminal and "(3 duplicate(s))" on signature.
    expect(bare).toMatch(
      /^ {2}service=demo-client session=\S+ request=1 trace=[0-9a-f]{32}: 3 duplicate terminal deliveries, 4 resume\/reattach attempts$/m,
    );
    expect(bare).not.toMatch(/\(1 duplicate\(s\)\)|duplicates=/);
    expect(bare).toContain('  terminal deliveries    4 on 4 distinct HTTP response(s) (3 duplicate(s))');
    expect(bare).toContain('  resumes                4 sent with the stale cursor, answered 200, 200, 200, 404');
    // The timeline: the request, its terminal, each reconnect with its cursor, each replay, the end.
    expect(bare).toMatch(/^ +\d+ ms {2}POST tools\/call stream_progress {2}-> {2}200, 5 event\(s\), clean close$/m);
    expect(bare).toMatch(/^ +\d+ ms {4}terminal: the result \(event \S+\)$/m);
    for (const n of [1, 2, 3, 4])
      expect(bare).toMatch(
        new RegExp(`^ +\\d+ ms {2}reconnect ${n} with Last-Event-ID \\S+ \\(after the terminal\\)  ->  `, 'm'),
      );
    for (const n of [2, 3, 4])
      expect(bare).toMatch(new RegExp(`^ +\\d+ ms {4}replay: the result again, delivery ${n} \\(event \\S+\\)$`, 'm'));
    expect(bare).toContain(
      '  end: the terminal response arrived 4 time(s) on 4 HTTP response(s) (3 duplicate(s)); 4 resume attempt(s) after it; the last resume was answered 404.',
    );

    expect(guarded).not.toMatch(/reconnected 1 time\(s\) with the stale cursor/);
    expect(guarded).toContain(
      '  resumes                1 attempted with the stale cursor: 0 sent, 1 refused in the process by the guard',
    );
    expect(guarded).toMatch(
      /reconnect 1 with Last-Event-ID \S+ \(after the terminal\) {2}-> {2}refused in the process, never sent \(InvalidResumptionError: request "1" is terminal\)$/m,
    );
    expect(guarded).toContain('  none: the stale resume never left the process, so nothing was replayed');

    expect(modern).toMatch(/^modern-broken-reissue \(MCP 2026-07-28\)/);
    expect(modern).toContain('  protocol version       2026-07-28 (no session, nothing to resume)');
    expect(modern).toContain('  first attempt          its stream broke mid-call; the server finished it anyway');
    expect(modern).toContain('  server executions      request 0: charged, request 1: already_charged');
    expect(modern).toContain('  side effects           1');
    expect(modern).toMatch(/^ {4}duplicate_execution +first_trace_id=[0-9a-f]{32}$/m);
  });

  it('`pnpm start` says it is building before the silent first tsc -b', () => {
    const root = JSON.parse(readFileSync(join(import.meta.dirname, '../../../package.json'), 'utf8')) as {
      scripts: { start: string };
    };
    const [announce, build] = root.scripts.start.split(' && ');
    expect(announce).toMatch(/building the workspace/);
    expect(build).toBe('tsc -b');
  });

  it('prints a readable report by default and rejects unknown flags with exit code 2', async () => {
    const { stdout } = await run(process.execPath, [cli], { timeout: 60_000 });
    expect(stdout).toContain('== seed-loop with instrumentFetch()');
    expect(stdout).toContain('signature');
    const failure = await run(process.execPath, [cli, '--nope']).catch((e: { code: number; stderr: string }) => e);
    expect(failure).toMatchObject({
      code: 2,
      stderr: 'resumewatch-demo: unknown flag --nope (resumewatch-demo --help lists the options)\n',
    });
  });
});
