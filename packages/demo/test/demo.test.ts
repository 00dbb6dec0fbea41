import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FindingKind, FindingRecord, StormEnd } from '@resumewatch/semconv';
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
    expect(bare!.findings.filter((f) => f.record === undefined).map((f) => f.kind).sort()).toEqual(
      [FindingKind.DUPLICATE_TERMINAL, FindingKind.RESUME_AFTER_TERMINAL, FindingKind.RECONNECT_STORM, FindingKind.SIGNATURE].sort(),
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
  });

  it('prints a readable report by default and rejects unknown flags with exit code 2', async () => {
    const { stdout } = await run(process.execPath, [cli], { timeout: 60_000 });
    expect(stdout).toContain('== seed-loop with instrumentFetch()');
    expect(stdout).toContain('signature');
    const failure = await run(process.execPath, [cli, '--nope']).catch((e: { code: number; stderr: string }) => e);
    expect(failure).toMatchObject({ code: 2 });
    expect((failure as { stderr: string }).stderr).toContain('usage: resumewatch-demo');
  });
});
