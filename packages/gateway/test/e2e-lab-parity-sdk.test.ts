import { runScenario, LAB_SERVER_SCENARIO_NAMES, scenarioClients } from '@resumewatch/lab';
import { afterEach, describe, expect, it } from 'vitest';
import { CLIENT_EXPECTED } from './helpers/e2e-expected.js';
import { expectParity, settleBoth, startParityRig } from './helpers/e2e-rig.js';
import type { ParityRig } from './helpers/e2e-rig.js';

// The lab scenarios the unmodified SDK clients run (SDK 1.x and v2: quiet-resume, polling,
// listening-replay, cancellation, cross-session-store, resume-loses-result), through the gateway in observe mode, each
// observed at once by the instrumented client and by the gateway (as e2e-lab-parity.test.ts does for
// the raw clients): the same findings on both sides, and those of the detector's end-to-end tests.

const TIMEOUT = 40_000;

const rigs: ParityRig[] = [];
afterEach(async () => {
  await Promise.allSettled(rigs.splice(0).map((r) => r.close()));
});

const CASES = LAB_SERVER_SCENARIO_NAMES.flatMap((name) =>
  scenarioClients(name)
    .filter((client) => client !== 'raw')
    .map((client) => ({ name, client })),
);

describe('SDK clients through the gateway: the same findings as the instrumented client', () => {
  it('covers every scenario an SDK client runs', () => {
    expect(CASES.length).toBe(12);
  });

  it.each(CASES)('$name, $client', { timeout: TIMEOUT }, async ({ name, client }) => {
    // The request's deadline is resume-loses-result's evidence: after the replayed progress arrived (a
    // loaded machine may take seconds), before the SDK's own timeout (resultWaitMs), which cancels.
    const loses = name === 'resume-loses-result';
    const r = await startParityRig(loses ? { requestTimeoutMs: 3_000 } : {});
    rigs.push(r);
    const expected = CLIENT_EXPECTED[name];
    const summary = await runScenario(name, {
      serverUrl: r.url,
      controlUrl: r.lab.controlUrl,
      fetch: r.clientFetch,
      maxReconnects: 5,
      client,
      ...(loses ? { resultWaitMs: 5_000 } : {}),
    });
    await settleBoth(r, name, expected);
    expectParity(r, name, expected);
    if (name === 'quiet-resume' || name === 'polling') expect(summary.resultsPerRequest).toEqual({ '1': 1 });
    if (name === 'cancellation') expect(summary.terminalDeliveries).toBe(0);
    if (name === 'resume-loses-result') expect(summary.details.resultLost).toBe(true);
  });
});
