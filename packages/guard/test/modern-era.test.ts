// The guard in the 2026-07-28 era, on the real v2 SDK (client and server 2.4, `versionNegotiation:
// { mode: 'auto' }`), through the lab's modern scenarios and the lab's v2 server behind its fault proxy.
import { connectSdkSession, runScenario, startFaultProxy, startModernLabServer } from '@resumewatch/lab';
import type { ScenarioName, ToolExecution } from '@resumewatch/lab';
import { GuardAction, META_IDEMPOTENCY_KEY } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { guardedFetch } from '../src/index.js';
import type { BrokenAttempt, GuardOptions, ReissueReport } from '../src/index.js';
import { recordGuard } from './helpers/record-guard.js';

/** The modern scenarios start their own v2 server: this URL is never called. */
const UNUSED_LAB_URL = 'http://127.0.0.1:9/mcp';

function recordModern(extra: GuardOptions = {}) {
  const broken: BrokenAttempt[] = [];
  const reissues: ReissueReport[] = [];
  const seen = recordGuard({
    ...extra,
    onStreamBroken: (attempt) => void broken.push(attempt),
    onReissue: (report) => void reissues.push(report),
  });
  return { broken, reissues, seen };
}

async function scenarioWithGuard(name: ScenarioName, extra: GuardOptions = {}) {
  const record = recordModern(extra);
  const fetch = guardedFetch(record.seen.options);
  const summary = await runScenario(name, { serverUrl: UNUSED_LAB_URL, fetch });
  fetch.listener.dispose();
  return { summary, ...record, fetch };
}

/** Nothing of the session era's guard fired. */
function expectNoSessionEraAction(seen: ReturnType<typeof recordGuard>): void {
  expect([seen.refused, seen.dropped, seen.conflicts, seen.decisions, seen.failed]).toEqual([[], [], [], [], []]);
}

describe('the guard in the 2026-07-28 era, on the real v2 SDK', () => {
  it('modern-healthy: nothing is reported and nothing is held', async () => {
    const { summary, broken, reissues, seen, fetch } = await scenarioWithGuard('modern-healthy');
    expect(summary.details.protocolVersion).toBe('2026-07-28');
    expect(summary.resultsPerRequest).toEqual({ '0': 1 });
    expect(summary.sideEffectCount).toBe(1);
    expect(broken).toEqual([]);
    expect(reissues).toEqual([]);
    expectNoSessionEraAction(seen);
    expect(fetch.listener.stats().brokenRequests).toBe(0);
  });

  it('modern-broken-reissue: the broken stream is told at once, the re-issue is reported before it leaves, and neither is held back', async () => {
    const { summary, broken, reissues, seen } = await scenarioWithGuard('modern-broken-reissue');
    // The first attempt's stream broke (the proxy cut it): told when it broke, long before the SDK's timeout.
    expect(broken.map((b) => [b.requestId, b.method, b.name, b.streamEnd, b.attempt])).toEqual([
      ['0', 'tools/call', 'charge', 'error', 1],
    ]);
    expect(reissues).toHaveLength(1);
    const report = reissues[0]!;
    expect(report.action).toBe(GuardAction.REISSUE_REPORTED);
    expect([report.method, report.name]).toEqual(['tools/call', 'charge']);
    expect(report.firstAttempt).toBe(broken[0]);
    expect([report.reissue.requestId, report.reissue.attempt]).toEqual(['1', 2]);
    // On the re-issue's request, for the spans; the first attempt's request decided nothing.
    expect(report.reissue.request.guardAction).toBe(GuardAction.REISSUE_REPORTED);
    expect(report.firstAttempt.request.guardAction).toBeUndefined();
    // A keyed digest, never the arguments.
    expect(report.argumentsDigest).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.stringify(report.argumentsDigest)).not.toContain('modern-broken-reissue');
    // The re-issue went out and its result reached the application: the guard blocks nothing, and
    // cannot stop the first attempt, which the server ran to its side effect.
    expect(summary.details.reissueOutcome).toBe('resolved');
    expect(summary.resultsPerRequest).toEqual({ '1': 1 });
    expect(summary.sideEffectCount).toBe(2);
    expectNoSessionEraAction(seen);
  });

  it('modern-broken-reissue with idempotencyKey: the re-issue carries the first attempt’s key', async () => {
    const { summary, reissues } = await scenarioWithGuard('modern-broken-reissue', { idempotencyKey: true });
    const report = reissues[0]!;
    expect(report.firstAttempt.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(report.reissue.idempotencyKey).toBe(report.firstAttempt.idempotencyKey);
    // `charge` checks no key: the key protects only a server that checks it.
    expect(summary.sideEffectCount).toBe(2);
  });

  it('modern-broken-reissue with reissues: false (a proxy of many clients): nothing tracked, nothing reported', async () => {
    const { summary, broken, reissues, fetch } = await scenarioWithGuard('modern-broken-reissue', { reissues: false });
    expect(summary.details.reissues).toBe(1);
    expect([broken, reissues]).toEqual([[], []]);
    expect(fetch.listener.stats().brokenRequests).toBe(0);
  });

  it('modern-honours-cancel: the re-issue is reported all the same (the client cannot know the server stopped); one side effect', async () => {
    const { summary, broken, reissues } = await scenarioWithGuard('modern-honours-cancel');
    expect(broken.map((b) => [b.requestId, b.name, b.streamEnd])).toEqual([['0', 'charge_cancellable', 'error']]);
    expect(reissues.map((r) => [r.firstAttempt.requestId, r.reissue.requestId])).toEqual([['0', '1']]);
    expect(summary.sideEffectCount).toBe(1);
    expect(summary.resultsPerRequest).toEqual({ '1': 1 });
  });

  it('modern-input-round: a Multi Round-Trip round is never a re-issue, with or without idempotency keys', async () => {
    for (const extra of [{}, { idempotencyKey: true }] satisfies GuardOptions[]) {
      const { summary, broken, reissues, seen } = await scenarioWithGuard('modern-input-round', extra);
      expect(summary.details.carriesInputResponses).toEqual([false, true]);
      expect(summary.sideEffectCount).toBe(1);
      expect(broken).toEqual([]);
      expect(reissues).toEqual([]);
      expectNoSessionEraAction(seen);
    }
  });
});

describe('the idempotency key against a server that checks it (the lab’s charge_once)', () => {
  /** The broken-reissue steps of the lab's scenario, on `charge_once` behind the fault proxy. */
  async function brokenThenReissued(options: GuardOptions) {
    const server = await startModernLabServer({ eras: 'modern-only', idempotencyMetaKey: META_IDEMPOTENCY_KEY });
    const proxy = await startFaultProxy({ target: server.url });
    const record = recordModern(options);
    const fetch = guardedFetch(record.seen.options);
    try {
      const client = await connectSdkSession('sdk-v2', proxy.url, fetch, 'guard-idempotency', { negotiation: 'auto' });
      const args = { key: `guard-idempotency-${Date.now()}`, workMs: 1000 };
      proxy.armCut({ method: 'POST', afterEvents: 1 });
      const first = await client.callTool('charge_once', args, { timeout: 1500, onprogress: () => undefined }).then(
        () => 'resolved',
        () => 'rejected',
      );
      // The server finished the first attempt (it ignores the cancellation) before the re-issue leaves.
      const firstDone = server.executions().length;
      const reissue = await client.callTool('charge_once', args, { onprogress: () => undefined });
      await client.close();
      return {
        first,
        firstDone,
        reissueText: reissue.content?.[0]?.text,
        sideEffects: server.sideEffectCount(args.key),
        executions: server.executions().map((e: ToolExecution) => [e.requestId, e.outcome]),
        ...record,
      };
    } finally {
      fetch.listener.dispose();
      await proxy.close();
      await server.close();
    }
  }

  it('with idempotencyKey the side effect runs once across the re-issue; without it, twice', async () => {
    const keyed = await brokenThenReissued({ idempotencyKey: true });
    expect(keyed.first).toBe('rejected');
    expect(keyed.firstDone).toBe(1);
    expect(keyed.reissues).toHaveLength(1);
    expect(keyed.executions).toEqual([
      [0, 'charged'],
      [1, 'already_charged'],
    ]);
    expect(keyed.sideEffects).toBe(1);
    expect(keyed.reissueText).toMatch(/^already charged/);

    const plain = await brokenThenReissued({});
    expect(plain.reissues).toHaveLength(1);
    expect(plain.executions).toEqual([
      [0, 'charged'],
      [1, 'charged'],
    ]);
    expect(plain.sideEffects).toBe(2);
  });

  it('a key of the application’s own making is what the server sees, the same on the re-issue', async () => {
    const made: string[] = [];
    const keyed = await brokenThenReissued({
      idempotencyKey: (call) => {
        const key = `order-${String((call.arguments as { key: string }).key)}`;
        made.push(`${call.method} ${String(call.name)} ${String(call.requestId)}`);
        return key;
      },
    });
    // Made once, for the first attempt; the re-issue inherits it.
    expect(made).toEqual(['tools/call charge_once 0']);
    expect(keyed.reissues[0]!.reissue.idempotencyKey).toMatch(/^order-guard-idempotency-/);
    expect(keyed.sideEffects).toBe(1);
  });

  it('a call the application gave up (its timeout closed the stream) is not broken, and the same call again is no re-issue', async () => {
    const server = await startModernLabServer({ eras: 'modern-only' });
    const record = recordModern();
    const fetch = guardedFetch(record.seen.options);
    try {
      const client = await connectSdkSession('sdk-v2', server.url, fetch, 'guard-given-up', { negotiation: 'auto' });
      const args = { key: `guard-given-up-${Date.now()}`, workMs: 2000 };
      const first = await client
        .callTool('charge_cancellable', args, { timeout: 200, onprogress: () => undefined })
        .then(
          () => 'resolved',
          () => 'rejected',
        );
      await client.callTool('charge_cancellable', { ...args, workMs: 0 }, { onprogress: () => undefined });
      await client.callTool('charge_cancellable', { ...args, workMs: 0 }, { onprogress: () => undefined });
      await client.close();
      expect(first).toBe('rejected');
      expect(record.broken).toEqual([]);
      expect(record.reissues).toEqual([]);
    } finally {
      fetch.listener.dispose();
      await server.close();
    }
  });
});
