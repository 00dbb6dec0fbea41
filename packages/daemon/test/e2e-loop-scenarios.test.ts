// Every loop scenario of the lab (issue 39) and its healthy twin, end to end: the lab's own servers (the
// loop server, server-everything for the 400 case) over loopback HTTP, the SDK 1.x client's fetch
// instrumented (instrumentFetch), the real OTLP/JSON exporter, and one `resumewatch serve` (in process)
// whose detector must report the lab's LOOP_SCENARIO_EXPECTED_FINDINGS, no other kind, except what this
// vantage point cannot see (UNSEEN, with the reason).
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Finding } from '@resumewatch/detector';
import { instrumentFetch } from '@resumewatch/instrumentation';
import { LOOP_SCENARIO_EXPECTED_FINDINGS, LOOP_SCENARIO_NAMES, runScenario } from '@resumewatch/lab';
import type { LoopScenarioName, ScenarioSummary } from '@resumewatch/lab';
import { ATTR_MCP_SESSION_ID, FindingKind, SPAN_LISTENING_REFUSED } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { providerWith } from '../../detector/test/helpers/otlp.js';
import { waitFor } from '../../detector/test/helpers/wait.js';
import { KeepingExporter } from './helpers/keeping-exporter.js';

const TIMEOUT = 60_000;
/** The loop scenarios start their own servers: this URL is never called. */
const UNUSED_LAB_URL = 'http://127.0.0.1:9/mcp';

interface LoopRun {
  summary: ScenarioSummary;
  findings: Finding[];
  spans: ReadableSpan[];
}

let serial = 0;

/** Runs one loop scenario with the client instrumented, exporting to a fresh serve; its findings once the spans are in. */
async function runInstrumented(name: LoopScenarioName): Promise<LoopRun> {
  const service = `e2e-loops-${name}-${++serial}`;
  const detector = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null });
  const exporter = new KeepingExporter(new JsonExporter({ url: `http://127.0.0.1:${detector.httpPort}/v1/traces` }));
  const provider = providerWith(exporter, `${service}/client`);
  const fetch = instrumentFetch({ tracerProvider: provider, requestTimeoutMs: 10_000 });
  try {
    const summary = await runScenario(name, { serverUrl: UNUSED_LAB_URL, fetch });
    await waitFor(() => {
      const s = fetch.stats();
      return s.openRequests === 0 && s.openResumes === 0 && s.pendingHttp === 0 && s.heldPolls === 0;
    }, `the client spans of ${name} to end`);
    await provider.forceFlush();
    await waitFor(() => received(detector) >= exporter.spans.length, `the spans of ${name} in serve`);
    const findings = detector.findings().filter((f) => f.service.startsWith(`${service}/`));
    return { summary, findings, spans: exporter.spans };
  } finally {
    await provider.shutdown().catch(() => undefined);
    await detector.close();
  }
}

/** Every span serve has taken in, whatever it made of it. */
function received(server: RunningServer): number {
  const spans = server.detector.stats().spans;
  return spans.accepted + spans.duplicate + spans.invalid + spans.ignored;
}

const kinds = (findings: readonly Finding[]): string[] =>
  [...new Set(findings.filter((f) => f.record === undefined).map((f) => f.kind))].sort();

/**
 * What the instrumented client cannot see, and why. The lab's two listening-stream loops run against a
 * server without sessions (the SDK's stateless shape, as in cline/cline#12119): their GETs carry no
 * Mcp-Session-Id. The instrumentation follows a plain GET only when it names a session (a refused one is
 * then its own span, SPAN_LISTENING_REFUSED), and the detector keys every loop by (service, session): a
 * sessionless GET answered 405 makes no span, and a GET answered 200 and closed at once with no event
 * makes none either (no event, so no Last-Event-ID: the re-open is a plain GET, not a resume). The same
 * holds at the gateway (packages/gateway/test/e2e-loop-scenarios.test.ts).
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

const expectedAt = (name: LoopScenarioName): string[] =>
  UNSEEN[name] ? [] : [...LOOP_SCENARIO_EXPECTED_FINDINGS[name]].sort();

describe('the lab loop scenarios through the instrumentation to resumewatch serve', () => {
  for (const name of LOOP_SCENARIO_NAMES) {
    it(`${name}: the expected findings`, { timeout: TIMEOUT }, async () => {
      const { summary, findings, spans } = await runInstrumented(name);
      expect(spans.length, 'spans exported').toBeGreaterThan(0);
      expect(kinds(findings), UNSEEN[name] ?? JSON.stringify(findings)).toEqual(expectedAt(name));
      const statuses = summary.details.clientStatuses as Record<string, number>;
      if (name === 'dead-session-loop') expect(statuses['POST 404']).toBeGreaterThanOrEqual(10);
      if (name === 'dead-session-loop-400') expect(statuses['POST 400']).toBeGreaterThanOrEqual(10);
      if (name === 'dead-session-reinit') expect(statuses['POST 404']).toBe(1);
      if (name === 'listening-stream-loop') expect(statuses['GET 405']).toBeGreaterThanOrEqual(11);
      if (name === 'listening-stream-stops') expect(statuses['GET 405']).toBe(1);
      if (name.startsWith('dead-session')) {
        for (const f of findings.filter((f) => f.kind === FindingKind.DEAD_SESSION_LOOP))
          expect(f.session_id).toBe(summary.details.deadSessionId);
      }
      if (UNSEEN[name]) {
        // What makes it unseen: no GET of the run named a session, so no refused-listening span was made.
        expect(spans.filter((s) => s.name === SPAN_LISTENING_REFUSED)).toEqual([]);
        expect(spans.every((s) => s.attributes[ATTR_MCP_SESSION_ID] === undefined)).toBe(true);
      }
    });
  }
});
