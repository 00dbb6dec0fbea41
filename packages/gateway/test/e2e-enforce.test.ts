import { setTimeout as sleep } from 'node:timers/promises';
import { connectSdkSession, resumesIn, runScenario, startLabServer, storeVariantUrl } from '@resumewatch/lab';
import type { LabServer, ScenarioClient } from '@resumewatch/lab';
import { FindingKind, GuardAction, GuardProof } from '@resumewatch/semconv';
import { afterEach, describe, expect, it } from 'vitest';
import { startSdkServer } from '../../instrumentation/test/helpers/sdk-server.js';
import type { RunningGateway } from '../src/index.js';
import { gatewayMcpUrl, kindsOf, settleGateway, startTestGateway, waitFor } from './helpers/e2e-rig.js';

// The seed loop through `enforce: true`, whichever client runs it: the lab's raw seed client, the
// unmodified SDK 1.x client (its resume after a JSON-RPC error response, against the lab and against a
// server built from SDK parts that ends each replay, as the seed's server did), and the unmodified v2
// client. The gateway acts only on the client's proof that it holds the result: its cursor at or past
// the result's event (the SDK 1.x client resumes from the error event itself: refused at once), or its
// next request on the connection that carried the result (--trust-connection-reuse, which these direct
// clients' gateway runs with; without it that client is observed). The raw seed client's cursor is stale (before
// the result) and Node's fetch sends its resume on whichever pooled connection is free: its first resume
// may go on another connection, prove nothing and pass (the result once more); the next one, on a
// connection that carried the result, is refused. The loop stops either way, and the gateway counts each
// refusal with its proof. Replays of delivered results (the listening-replay server defect) are dropped.

const TIMEOUT = 40_000;

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function labThrough(
  enforce: boolean,
  connectionProof = true,
): Promise<{ lab: LabServer; gateway: RunningGateway; url: string }> {
  const lab = await startLabServer({ retryIntervalMs: 50 });
  closers.push(() => lab.close());
  // The lab's clients connect directly: a connection's next request may prove receipt (--trust-connection-reuse).
  const gateway = await startTestGateway(lab.url, { enforce, connectionProof, requestTimeoutMs: 10_000 });
  closers.push(() => gateway.close());
  return { lab, gateway, url: gatewayMcpUrl(gateway, lab.url) };
}

/** GETs with Last-Event-ID that reached the lab server for a session. */
const resumesAtLab = (lab: LabServer, sessionId: string | undefined) =>
  lab.requestLog(sessionId!).filter((e) => e.method === 'GET' && e.lastEventId !== undefined && !e.restore);

type SeedSummary = Awaited<ReturnType<typeof runScenario>>;

/**
 * The raw seed client stopped on proof: at most one resume passed unproven (delivering the result once
 * more), then a resume was refused with 405 on the proof of the connection that carried the result.
 */
function expectStoppedOnProof(summary: SeedSummary, lab: LabServer): void {
  const statuses = summary.resumeStatuses;
  expect(statuses.at(-1)).toBe(405);
  expect(statuses.length).toBeLessThanOrEqual(2);
  expect(summary.details.stoppedBecause).toBe('error-status');
  // Each resume that passed brought the result again; the refused one never reached the server.
  expect(summary.terminalDeliveries).toBe(statuses.length);
  expect(resumesAtLab(lab, summary.sessionId)).toHaveLength(statuses.length - 1);
}

describe('enforce: the raw seed client', () => {
  it(
    'seed-loop: the result once, the first resume refused with 405, the loop stops',
    { timeout: TIMEOUT },
    async () => {
      const { lab, gateway, url } = await labThrough(true);
      const summary = await runScenario('seed-loop', { serverUrl: url, fetch: globalThis.fetch, maxReconnects: 10 });
      expectStoppedOnProof(summary, lab);
      await settleGateway(gateway);
      expect(gateway.counts().proofs).toEqual({ [GuardAction.RESUME_REFUSED]: { [GuardProof.NEXT_REQUEST]: 1 } });
      // An enforced action, not a refusal of the proxy's own (those are its limits and upstream failures).
      expect(gateway.counts().refusals).toEqual({});
      // No loop: at most the one duplicate of an unproven resume, never a storm.
      const kinds = kindsOf(gateway.detector!.findings());
      expect(kinds).not.toContain(FindingKind.RECONNECT_STORM);
      expect(kinds).not.toContain(FindingKind.SIGNATURE);
      if (summary.resumeStatuses.length === 1) expect(kinds).toEqual([]);
    },
  );

  it(
    'endless-loop (a store that never evicts): stopped at the first resume, not by the client cap',
    { timeout: TIMEOUT },
    async () => {
      const { lab, gateway, url } = await labThrough(true);
      const summary = await runScenario('endless-loop', { serverUrl: url, fetch: globalThis.fetch, maxReconnects: 5 });
      expectStoppedOnProof(summary, lab);
      await settleGateway(gateway);
      expect(gateway.counts().proofs).toEqual({ [GuardAction.RESUME_REFUSED]: { [GuardProof.NEXT_REQUEST]: 1 } });
      expect(kindsOf(gateway.detector!.findings())).not.toContain(FindingKind.RECONNECT_STORM);
    },
  );
});

describe('enforce without --trust-connection-reuse (the default): the raw seed client is observed, not stopped', () => {
  it(
    'seed-loop: its stale cursor proves nothing, so every resume reaches the server and the loop is reported',
    { timeout: TIMEOUT },
    async () => {
      const { lab, gateway, url } = await labThrough(true, false);
      const summary = await runScenario('seed-loop', { serverUrl: url, fetch: globalThis.fetch, maxReconnects: 10 });
      expect(summary.resumeStatuses).not.toContain(405);
      expect(summary.resumeStatuses.length).toBeGreaterThan(1);
      expect(resumesAtLab(lab, summary.sessionId)).toHaveLength(summary.resumeStatuses.length);
      await settleGateway(gateway);
      // Nothing withheld (the empty replay at the end, once the store evicted the stream, is only reported).
      expect(gateway.counts().actions[GuardAction.RESUME_REFUSED]).toBeUndefined();
      expect(gateway.counts().actions[GuardAction.DUPLICATE_TERMINAL_DROPPED]).toBeUndefined();
      await waitFor(
        () => gateway.detector!.findings().some((f) => f.kind === FindingKind.SIGNATURE),
        'the seed loop signature',
      );
    },
  );
});

describe('enforce: the unmodified SDK 1.x client', () => {
  it(
    'sdk-error-resume (lab): its resume of the error response is refused with 405 and it stops',
    { timeout: TIMEOUT },
    async () => {
      const { lab, gateway, url } = await labThrough(true);
      const summary = await runScenario('sdk-error-resume', { serverUrl: url, fetch: globalThis.fetch });
      expect(summary.details.resumedWithErrorEventId).toBe(true);
      expect(summary.terminalDeliveries).toBe(1);
      // The one resume, refused; the SDK takes 405 as "no SSE stream here" and sends no other GET.
      expect(summary.resumeStatuses).toEqual([405]);
      expect(summary.reconnects).toBe(1);
      expect(resumesAtLab(lab, summary.sessionId)).toEqual([]);
      await settleGateway(gateway);
      expect(gateway.counts().proofs).toEqual({ [GuardAction.RESUME_REFUSED]: { [GuardProof.CURSOR]: 1 } });
      expect(kindsOf(gateway.detector!.findings())).toEqual([]);
    },
  );

  it(
    'sdk-error-resume (lab), observe only: the same run is found (resume_after_terminal)',
    { timeout: TIMEOUT },
    async () => {
      const { gateway, url } = await labThrough(false);
      const summary = await runScenario('sdk-error-resume', { serverUrl: url, fetch: globalThis.fetch });
      expect(summary.resumeStatuses[0]).toBe(200);
      await settleGateway(gateway);
      expect(kindsOf(gateway.detector!.findings())).toEqual([FindingKind.RESUME_AFTER_TERMINAL]);
      expect(gateway.counts().actions).toEqual({});
    },
  );
});

describe("a server built from SDK 1.32 parts (each replay ended, as the seed's server did): the resume after a JSON-RPC error", () => {
  /** The SDK-parts server behind a gateway; the SDK client calls `fail`, then whatever it resumes is let finish. */
  async function failThenResume(client: Exclude<ScenarioClient, 'raw'>, enforce: boolean) {
    const server = await startSdkServer({ closeReplays: true });
    closers.push(() => server.close());
    const gateway = await startTestGateway(server.url, { enforce, requestTimeoutMs: 10_000 });
    closers.push(() => gateway.close());
    const session = await connectSdkSession(client, gatewayMcpUrl(gateway, server.url), globalThis.fetch, 'fail');
    closers.push(() => session.close());
    await expect(session.callTool('fail', {})).rejects.toThrow(/fail/);
    // The 1.x client resumes at once (its retry is the server's 50 ms); v2 never does.
    if (client === 'sdk') await waitFor(() => resumesIn(session.log).some((e) => e.status !== undefined), 'the resume');
    // Whatever the client would send next has the time to leave (its listening stream stays open meanwhile).
    await sleep(400);
    const resumes = resumesIn(session.log).map((e) => e.status);
    const errors = session.log.flatMap((e) => e.errorResponses);
    await session.terminate().catch(() => undefined);
    await session.close();
    await settleGateway(gateway);
    return { server, gateway, resumes, errors, findings: kindsOf(gateway.detector!.findings()) };
  }

  it('SDK 1.x, observe only: the resume reaches the server (200) and is found', { timeout: TIMEOUT }, async () => {
    const run = await failThenResume('sdk', false);
    expect(run.resumes).toEqual([200]);
    expect(run.server.resumes).toBe(1);
    expect(run.findings).toEqual([FindingKind.RESUME_AFTER_TERMINAL]);
    expect(run.gateway.counts().actions).toEqual({});
  });

  it(
    'SDK 1.x, enforce: the resume is answered 405 by the gateway, the server sees none, the error arrives once',
    { timeout: TIMEOUT },
    async () => {
      const run = await failThenResume('sdk', true);
      expect(run.resumes).toEqual([405]);
      expect(run.server.resumes).toBe(0);
      expect(run.errors).toHaveLength(1);
      expect(run.gateway.counts().proofs).toEqual({ [GuardAction.RESUME_REFUSED]: { [GuardProof.CURSOR]: 1 } });
      expect(run.findings).toEqual([]);
    },
  );

  it(
    'SDK v2, enforce: it does not resume a finished request; nothing refused, the error once',
    { timeout: TIMEOUT },
    async () => {
      const run = await failThenResume('sdk-v2', true);
      expect(run.resumes).toEqual([]);
      expect(run.server.resumes).toBe(0);
      expect(run.errors).toHaveLength(1);
      expect(run.gateway.counts().actions).toEqual({});
      expect(run.findings).toEqual([]);
    },
  );
});

describe('enforce: replays of delivered results are dropped, whichever client', () => {
  it.each(['raw', 'sdk', 'sdk-v2'] as const)(
    'listening-replay, %s: each result once, both replays dropped',
    { timeout: TIMEOUT },
    async (client) => {
      const { gateway, url } = await labThrough(true);
      const summary = await runScenario('listening-replay', { serverUrl: url, fetch: globalThis.fetch, client });
      expect(summary.resultsPerRequest).toEqual({ '1': 1, '2': 1 });
      expect(summary.resumeStatuses).toEqual([200]);
      await settleGateway(gateway);
      expect(gateway.counts().actions).toEqual({ [GuardAction.DUPLICATE_TERMINAL_DROPPED]: 2 });
      // The server defect is still reported (as with the client's guard); never a client duplicate.
      await waitFor(() => gateway.detector!.findings().length > 0, 'the foreign_replay finding');
      expect(kindsOf(gateway.detector!.findings())).toEqual([FindingKind.FOREIGN_REPLAY]);
    },
  );

  it(
    'the seed loop at a store that replays its result, raw client, through a store variant URL',
    { timeout: TIMEOUT },
    async () => {
      // never-evict served under /mcp/never-evict on the same lab: the gateway forwards the client's path.
      const { lab, gateway } = await labThrough(true);
      const url = gatewayMcpUrl(gateway, storeVariantUrl(lab.url, 'never-evict'));
      const summary = await runScenario('seed-loop', { serverUrl: url, fetch: globalThis.fetch, maxReconnects: 5 });
      expectStoppedOnProof(summary, lab);
    },
  );
});
