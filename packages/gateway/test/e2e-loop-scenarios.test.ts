// Every loop scenario of the lab (issue 39) and its healthy twin through the gateway, observing: each
// scenario starts its own server (the lab's loop server, or server-everything for the 400 case) and
// `loops.front` puts a gateway in front of it. The gateway's embedded detector must report exactly the
// lab's LOOP_SCENARIO_EXPECTED_FINDINGS for each, no other kind besides, and observing changes nothing
// on the wire (the client sees the server's own statuses).
import type { Finding } from '@resumewatch/detector';
import { LOOP_SCENARIO_EXPECTED_FINDINGS, LOOP_SCENARIO_NAMES, runScenario } from '@resumewatch/lab';
import type { LoopScenarioName, ScenarioSummary } from '@resumewatch/lab';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../src/index.js';
import { gatewayMcpUrl, kindsOf, settleGateway, startTestGateway } from './helpers/e2e-rig.js';

const TIMEOUT = 60_000;

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.allSettled(closers.splice(0).map((close) => close()));
});

interface Run {
  summary: ScenarioSummary;
  gateway: RunningGateway;
  findings: Finding[];
}

/** Runs one loop scenario with a gateway in front of its server; the gateway's findings once it is idle. */
async function throughGateway(name: LoopScenarioName): Promise<Run> {
  let gateway: RunningGateway | undefined;
  const summary = await runScenario(name, {
    // The loop scenarios start their own servers: this URL is never called.
    serverUrl: 'http://127.0.0.1:9/mcp',
    loops: {
      front: async (serverUrl) => {
        gateway = await startTestGateway(serverUrl);
        closers.push(() => gateway!.close());
        // The scenario closes its front before its server: the gateway stays, for its findings.
        return { url: gatewayMcpUrl(gateway, serverUrl), close: () => Promise.resolve() };
      },
    },
  });
  await settleGateway(gateway!);
  return { summary, gateway: gateway!, findings: gateway!.detector!.findings() };
}

/**
 * What the gateway cannot see, and why. The lab's two listening-stream loops run against a server without
 * sessions (the SDK's stateless shape, as in cline/cline#12119): their GETs carry no Mcp-Session-Id.
 * Every loop record of the detector is keyed by (service, session), and the observer follows a plain GET
 * only when it names a session (the instrumentation's span recorder, which the gateway runs too: a refused
 * GET of a session's listening stream is its own span, SPAN_LISTENING_REFUSED). So a sessionless GET
 * answered 405 makes no span, and a GET answered 200 and closed at once with no event makes none either
 * (no event, so no Last-Event-ID: the re-open is a plain GET, not a resume). The gateway passes them all
 * through and sees the statuses (asserted below), but no finding can come of them yet. The loops of a
 * server with sessions are found through the gateway: e2e-dead-session-loop.test.ts.
 */
const UNSEEN: Partial<Record<LoopScenarioName, string>> = {
  'listening-stream-loop': 'stateless server: sessionless GETs answered 405 make no span',
  'listening-stream-loop-closed': 'stateless server: sessionless GETs closed at once with no event make no span',
};
/**
 * The listening twins (`listening-stream-stops`, `listening-stream-retry-pace`) run against the same
 * stateless server: their "nothing" holds, but it cannot tell a healthy client from a looping one here,
 * since the loops themselves are unseen. A loop against a server with sessions, and its twin that stops,
 * are told apart in packages/gateway/test/e2e-dead-session-loop.test.ts.
 */

/** What the gateway's detector reports for a scenario: the lab's promise, less what it cannot see. */
const atGateway = (name: LoopScenarioName): string[] =>
  UNSEEN[name] ? [] : [...LOOP_SCENARIO_EXPECTED_FINDINGS[name]].sort();

/** `METHOD status` counts the scenario's client saw (through the gateway). */
const clientStatuses = (summary: ScenarioSummary): Record<string, number> =>
  summary.details.clientStatuses as Record<string, number>;

describe('the lab loop scenarios through the gateway (observe)', { timeout: TIMEOUT }, () => {
  it.each(LOOP_SCENARIO_NAMES.map((name) => [name]))('%s', async (name) => {
    const { summary, gateway, findings } = await throughGateway(name);
    expect(gateway.detector!.detector.stats().spans.accepted, 'spans the gateway observed').toBeGreaterThan(0);
    expect(kindsOf(findings), UNSEEN[name] ?? JSON.stringify(findings)).toEqual(atGateway(name));
    // Observing changes nothing on the wire.
    expect(gateway.counts().actions).toEqual({});
    expect(gateway.counts().refusals).toEqual({});

    // What the client saw: the traffic that is (or, for a twin, would have been) the loop.
    const statuses = clientStatuses(summary);
    if (name === 'dead-session-loop') expect(statuses['POST 404']).toBeGreaterThanOrEqual(10);
    if (name === 'dead-session-loop-400') expect(statuses['POST 400']).toBeGreaterThanOrEqual(10);
    if (name === 'dead-session-reinit') expect(statuses['POST 404']).toBe(1);
    if (name === 'listening-stream-loop') expect(statuses['GET 405']).toBeGreaterThanOrEqual(11);
    if (name === 'listening-stream-stops') expect(statuses['GET 405']).toBe(1);
    if (name === 'listening-stream-loop-closed' || name === 'listening-stream-retry-pace')
      expect(statuses['GET 200']).toBeGreaterThanOrEqual(4);
    if (name.startsWith('dead-session')) {
      const dead = findings.filter((f) => f.kind === LOOP_SCENARIO_EXPECTED_FINDINGS['dead-session-loop'][0]);
      for (const f of dead) expect(f.session_id).toBe(summary.details.deadSessionId);
    }
  });
});
