import { runLoad, runScenario, LAB_SERVER_SCENARIO_NAMES } from '@resumewatch/lab';
import type { LabServerScenarioName, ScenarioSummary } from '@resumewatch/lab';
import { FindingKind, FindingRecord, StormEnd } from '@resumewatch/semconv';
import { afterEach, describe, expect, it } from 'vitest';
import { CLIENT_EXPECTED } from './helpers/e2e-expected.js';
import { expectParity, settleBoth, startParityRig } from './helpers/e2e-rig.js';
import type { ParityRig, ParityRigOptions } from './helpers/e2e-rig.js';

// Every lab scenario through the gateway (observe mode), with the lab's raw clients (the unmodified SDK
// clients' runs: e2e-lab-parity-sdk.test.ts): the gateway's
// in-process detector must find exactly what the instrumented client finds. Both observe the same run:
// the scenario's fetch is `instrumentFetch` (passive, no guard, into a detector of its own) and its
// requests go to the gateway, which forwards them to the lab server. So each case checks the gateway
// against the expectation table of the detector's end-to-end tests and against the client's findings
// of that very run.
//
// network-cut starts the lab's fault proxy in front of the URL it is given (the gateway): the TCP cut
// is between the client and the gateway, which sees its client go away mid-stream and ends the
// upstream exchange. server-restart and cursor-evicted use the lab's control endpoint (lab.controlUrl,
// on the lab server itself): the restart drops the gateway's upstream connections like any client's.

const TIMEOUT = 40_000;

const rigs: ParityRig[] = [];
afterEach(async () => {
  await Promise.allSettled(rigs.splice(0).map((r) => r.close()));
});

async function rig(options?: ParityRigOptions): Promise<ParityRig> {
  const r = await startParityRig(options);
  rigs.push(r);
  return r;
}

async function runThrough(r: ParityRig, name: LabServerScenarioName): Promise<ScenarioSummary> {
  return runScenario(name, {
    serverUrl: r.url,
    controlUrl: r.lab.controlUrl,
    fetch: r.clientFetch,
    maxReconnects: name === 'endless-loop' ? 5 : 10,
  });
}

/**
 * The request deadline where it is the evidence (server-restart, resume-loses-result, as e2e-lab.test.ts
 * gives it). resume-loses-result's passes while the client waits on its resumed stream (3 s from the
 * resume, about 0.5 s into the call), late enough for the replayed progress to arrive on a loaded machine.
 */
const rigOptions = (name: LabServerScenarioName): ParityRigOptions =>
  name === 'server-restart'
    ? { requestTimeoutMs: 2_000 }
    : name === 'resume-loses-result'
      ? { requestTimeoutMs: 3_000 }
      : {};

describe('every lab scenario through the gateway: the same findings as the instrumented client', () => {
  it.each(LAB_SERVER_SCENARIO_NAMES.filter((name) => name !== 'healthy'))('%s', { timeout: TIMEOUT }, async (name) => {
    const r = await rig(rigOptions(name));
    const expected = CLIENT_EXPECTED[name];
    const summary = await runThrough(r, name);
    await settleBoth(r, name, expected);
    expectParity(r, name, expected);
    if (expected.length > 0 && name !== 'cancellation')
      expect(r.gatewayFindings().every((f) => f.session_id === summary.sessionId)).toBe(true);

    // What each run is known for, as the lab saw it through the proxy.
    if (name === 'seed-loop') {
      expect(summary.resumeStatuses.at(-1)).toBe(404);
      expect(r.gatewayFindings().filter((f) => f.kind === FindingKind.SIGNATURE)).toHaveLength(1);
      expect(r.gatewayFindings().filter((f) => f.record === FindingRecord.STORM_ENDED)).toMatchObject([
        { kind: FindingKind.RECONNECT_STORM, ended_by: StormEnd.EVICTED, ended_by_eviction: true },
      ]);
    }
    if (name === 'network-cut') expect(summary.details.everyEventExactlyOnce).toBe(true);
    if (name === 'server-restart') expect(summary.details.emptyReplayOnUnfinishedRequest).toBe(true);
    if (name === 'quiet-resume' || name === 'polling') expect(summary.resultsPerRequest).toEqual({ '1': 1 });
    if (name === 'cancellation') expect(summary.terminalDeliveries).toBe(0);
    if (name === 'endless-loop') expect(summary.details.stoppedBecause).toBe('max-reconnects');
    if (name === 'resume-loses-result') expect(summary.details.resultLost).toBe(true);
  });

  it('healthy: steady load of three clients, no finding', { timeout: TIMEOUT }, async () => {
    const r = await rig();
    const report = await runLoad('healthy', {
      serverUrl: r.url,
      controlUrl: r.lab.controlUrl,
      fetch: r.clientFetch,
      clients: 3,
      durationMs: 1_500,
    });
    expect(report.failures).toBe(0);
    expect(report.runs).toBeGreaterThanOrEqual(3);
    await settleBoth(r, 'healthy', CLIENT_EXPECTED.healthy);
    expectParity(r, 'healthy', CLIENT_EXPECTED.healthy);
  });
});
