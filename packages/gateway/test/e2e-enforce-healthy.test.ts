import { runLoad, runScenario, startLabServer } from '@resumewatch/lab';
import type { ScenarioClient } from '@resumewatch/lab';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../src/index.js';
import { gatewayMcpUrl, kindsOf, settleGateway, startTestGateway } from './helpers/e2e-rig.js';

// Healthy traffic through `enforce: true` is the traffic without it: valid continuations (a cut, a
// quiet resumed stream), SEP-1699 polls and cancellations pass with the same statuses and results,
// the gateway takes no action, and its detector finds nothing. The raw, SDK 1.x and v2 clients.

const TIMEOUT = 40_000;
const CLIENTS: readonly ScenarioClient[] = ['raw', 'sdk', 'sdk-v2'];

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function enforcing(): Promise<{ gateway: RunningGateway; url: string; controlUrl: string }> {
  const lab = await startLabServer({ retryIntervalMs: 50 });
  closers.push(() => lab.close());
  // Both proofs of receipt (the lab's clients connect directly): healthy traffic loses nothing to either.
  const gateway = await startTestGateway(lab.url, { enforce: true, connectionProof: true, requestTimeoutMs: 10_000 });
  closers.push(() => gateway.close());
  return { gateway, url: gatewayMcpUrl(gateway, lab.url), controlUrl: lab.controlUrl };
}

/** Nothing enforced, nothing refused, nothing found. */
async function untouched(gateway: RunningGateway): Promise<void> {
  await settleGateway(gateway);
  expect(gateway.detector!.detector.stats().spans.accepted).toBeGreaterThan(0);
  expect(gateway.counts().actions).toEqual({});
  expect(gateway.counts().refusals).toEqual({});
  expect(kindsOf(gateway.detector!.findings())).toEqual([]);
}

describe('enforce, healthy traffic: unchanged', () => {
  it('steady healthy load, three raw clients: no failure, no action, no finding', { timeout: TIMEOUT }, async () => {
    const { gateway, url, controlUrl } = await enforcing();
    const report = await runLoad('healthy', { serverUrl: url, controlUrl, clients: 3, durationMs: 1_500 });
    expect(report.failures).toBe(0);
    expect(report.runs).toBeGreaterThanOrEqual(3);
    await untouched(gateway);
  });

  it('network-cut, raw: the valid resume passes, every event exactly once', { timeout: TIMEOUT }, async () => {
    const { gateway, url, controlUrl } = await enforcing();
    const summary = await runScenario('network-cut', { serverUrl: url, controlUrl, maxReconnects: 10 });
    expect(summary.details.everyEventExactlyOnce).toBe(true);
    expect(summary.terminalDeliveries).toBe(1);
    await untouched(gateway);
  });

  it.each(CLIENTS)('quiet-resume, %s: one resume (200), the result once', { timeout: TIMEOUT }, async (client) => {
    const { gateway, url, controlUrl } = await enforcing();
    const summary = await runScenario('quiet-resume', { serverUrl: url, controlUrl, client });
    expect(summary.resumeStatuses).toEqual([200]);
    expect(summary.resultsPerRequest).toEqual({ '1': 1 });
    expect(summary.terminalDeliveries).toBe(1);
    await untouched(gateway);
  });

  it.each(CLIENTS)('polling, %s: twelve polls (200), the result once', { timeout: TIMEOUT }, async (client) => {
    const { gateway, url, controlUrl } = await enforcing();
    const summary = await runScenario('polling', { serverUrl: url, controlUrl, client });
    expect(summary.resumeStatuses).toEqual(Array<number>(12).fill(200));
    expect(summary.resultsPerRequest).toEqual({ '1': 1 });
    expect(summary.terminalDeliveries).toBe(1);
    await untouched(gateway);
  });

  it.each(CLIENTS)(
    'cancellation, %s: both calls end without a result, nothing refused',
    { timeout: TIMEOUT },
    async (client) => {
      const { gateway, url, controlUrl } = await enforcing();
      const summary = await runScenario('cancellation', { serverUrl: url, controlUrl, client });
      expect(summary.terminalDeliveries).toBe(0);
      expect(summary.details.notified).toMatchObject({ cancelStatus: 202, terminals: 0 });
      await untouched(gateway);
    },
  );
});
