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
 * The lab's two listening-stream loops run against a server without sessions (the SDK's stateless shape,
 * as in cline/cline#12119): their GETs carry no Mcp-Session-Id. The gateway keys their re-opens by the
 * client's address (client.address on the spans, its ClientIdentities: the peer, or behind a trusted
 * proxy the forwarded address). The twins run against the same server: one client that stops after one
 * 405, one that re-opens at the server's `retry:` pace, both silent.
 */
const atGateway = (name: LoopScenarioName): string[] => [...LOOP_SCENARIO_EXPECTED_FINDINGS[name]].sort();

/** `METHOD status` counts the scenario's client saw (through the gateway). */
const clientStatuses = (summary: ScenarioSummary): Record<string, number> =>
  summary.details.clientStatuses as Record<string, number>;

describe('the lab loop scenarios through the gateway (observe)', { timeout: TIMEOUT }, () => {
  it.each(LOOP_SCENARIO_NAMES.map((name) => [name]))('%s', async (name) => {
    const { summary, gateway, findings } = await throughGateway(name);
    expect(gateway.detector!.detector.stats().spans.accepted, 'spans the gateway observed').toBeGreaterThan(0);
    expect(kindsOf(findings), JSON.stringify(findings)).toEqual(atGateway(name));
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
    if (name === 'listening-stream-loop-closed') expect(statuses['GET 200']).toBeGreaterThanOrEqual(4);
    // More re-opens of streams closed with no message than the threshold (5) allows: only the pace they keep
    // (the `retry:` the server announced) makes them no loop.
    if (name === 'listening-stream-retry-pace') expect(statuses['GET 200']).toBeGreaterThanOrEqual(7);
    if (name === 'listening-stream-loop' || name === 'listening-stream-loop-closed') {
      // No session: the loop is the client's, by its address (loopback here).
      const [loop] = findings.filter((f) => f.kind === LOOP_SCENARIO_EXPECTED_FINDINGS[name][0]);
      expect(loop).toMatchObject({ session_id: '', client: '127.0.0.1' });
      expect(loop!.status_code).toBe(name === 'listening-stream-loop' ? 405 : 200);
    }
    if (name.startsWith('dead-session')) {
      const dead = findings.filter((f) => f.kind === LOOP_SCENARIO_EXPECTED_FINDINGS['dead-session-loop'][0]);
      for (const f of dead) expect(f.session_id).toBe(summary.details.deadSessionId);
    }
  });
});
