// The 2026-07-28 era on the real v2 SDK (client and server 2.4): each scenario starts its own v2 server
// on loopback, so no lab server is needed (the URL below is never called).
import { describe, expect, it } from 'vitest';
import { runScenario } from '../src/index.js';

const options = { serverUrl: 'http://127.0.0.1:9/mcp' };
const MODERN = '2026-07-28';
const SESSION_ERA = '2025-11-25';

interface Execution {
  tool: string;
  requestId: number;
  cancelledBeforeEnd: boolean;
  outcome: string;
}

describe('the 2026-07-28 era on the real v2 SDK', () => {
  it('modern-healthy: one call, one result, one side effect, no session, every exchange at 2026-07-28', async () => {
    const summary = await runScenario('modern-healthy', options);
    expect(summary.details.protocolVersion).toBe(MODERN);
    expect(summary.details.protocolVersions).toEqual([MODERN]);
    expect(summary.details.exchanges).toEqual([
      `POST server/discover -> 200 (${MODERN})`,
      `POST tools/call charge -> 200 (${MODERN})`,
    ]);
    expect(summary.sessionId).toBeUndefined();
    expect(summary.resultsPerRequest).toEqual({ '0': 1 });
    expect(summary.sideEffectCount).toBe(1);
    expect(summary.details.reissues).toBe(0);
  });

  it('modern-broken-reissue: the SDK does not re-issue; the application does; the first attempt ran on: two side effects', async () => {
    const summary = await runScenario('modern-broken-reissue', options);
    const first = summary.details.firstAttempt as Record<string, unknown>;
    // The v2 SDK reports the broken stream through onerror and fails the call only at its timeout.
    expect(summary.details.sdkReissues).toBe(0);
    expect(first.outcome).toMatch(/^rejected: REQUEST_TIMEOUT/);
    expect(first.streamEnd).toBe('error');
    expect(summary.details.sdkErrors).toContainEqual(expect.stringMatching(/^SSE stream disconnected/));
    expect(summary.details.reissues).toBe(1);
    expect(summary.details.requestIds).toEqual([0, 1]);
    expect(summary.details.reissueOutcome).toBe('resolved');
    // The server saw the stream close (the SDK aborted the handler's signal) and the tool charged anyway.
    expect(first.completedAfterCancellation).toBe(true);
    expect(
      (summary.details.serverExecutions as Execution[]).map((e) => [e.requestId, e.cancelledBeforeEnd, e.outcome]),
    ).toEqual([
      [0, true, 'charged'],
      [1, false, 'charged'],
    ]);
    expect(summary.sideEffectCount).toBe(2);
    expect(summary.resultsPerRequest).toEqual({ '1': 1 });
    expect(summary.details.protocolVersions).toEqual([MODERN]);
  });

  it('modern-honours-cancel: the same break and re-issue; the server stopped the first attempt: one side effect', async () => {
    const summary = await runScenario('modern-honours-cancel', options);
    const first = summary.details.firstAttempt as Record<string, unknown>;
    expect(summary.details.sdkReissues).toBe(0);
    expect(summary.details.reissues).toBe(1);
    expect(first.serverOutcome).toBe('stopped');
    expect(first.completedAfterCancellation).toBe(false);
    expect(summary.sideEffectCount).toBe(1);
    expect(summary.resultsPerRequest).toEqual({ '1': 1 });
  });

  it('modern-input-round: the SDK sends the call again with inputResponses under a new id; no stream broke, one side effect', async () => {
    const summary = await runScenario('modern-input-round', options);
    expect(summary.details.requestIds).toEqual([0, 1]);
    expect(summary.details.carriesInputResponses).toEqual([false, true]);
    expect(summary.details.inputRounds).toBe(1);
    expect(summary.details.reissues).toBe(0);
    expect((summary.details.serverExecutions as Execution[]).map((e) => e.outcome)).toEqual([
      'input_required',
      'charged',
    ]);
    expect(summary.sideEffectCount).toBe(1);
    expect(summary.details.protocolVersions).toEqual([MODERN]);
  });

  it('dual-era: one v2 server serves SDK 1.x in the session era and the v2 client at 2026-07-28 at once', async () => {
    const summary = await runScenario('dual-era', options);
    const sessionEra = summary.details.sessionEra as Record<string, unknown>;
    const modernEra = summary.details.modernEra as Record<string, unknown>;
    expect(sessionEra).toMatchObject({
      outcome: 'resolved',
      protocolVersion: SESSION_ERA,
      hasSession: true,
      sideEffects: 1,
    });
    expect(sessionEra.protocolVersions).toEqual([SESSION_ERA]);
    // Event ids on its call's stream: what it would resume from.
    expect(sessionEra.resumableEventIds as number).toBeGreaterThan(0);
    expect(modernEra).toMatchObject({
      outcome: 'resolved',
      protocolVersion: MODERN,
      hasSession: false,
      resumableEventIds: 0,
    });
    expect(modernEra.protocolVersions).toEqual([MODERN]);
    const legs = summary.details.serverExchanges as string[];
    expect(legs).toContain(`modern POST ${MODERN} 200`);
    expect(legs).toContain(`legacy POST ${SESSION_ERA} 200`);
    expect(legs.filter((leg) => leg.startsWith('modern')).every((leg) => leg.includes(MODERN))).toBe(true);
  });

  it('session-client-modern-server: a resume answered 405 leaves the call to its timeout; the session era is refused; v2 auto moves on', async () => {
    const summary = await runScenario('session-client-modern-server', options);
    const runs = summary.details.sessionClients as Array<Record<string, unknown>>;
    expect(runs.map((run) => run.client)).toEqual(['sdk', 'sdk-v2 legacy']);
    for (const run of runs) {
      expect(run.protocolVersion).toBe(SESSION_ERA);
      expect(run.resumeStatuses).toEqual([405]);
      expect(run.callOutcome).toMatch(/Request timed out/);
      expect(run.reconnect).toMatch(/^rejected: .*-32022/);
    }
    expect(summary.resumeStatuses).toEqual([405, 405]);
    expect(summary.details.v2Auto).toEqual({ client: 'sdk-v2 auto', protocolVersion: MODERN, callOutcome: 'resolved' });
  });
});
