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
import {
  ATTR_MCP_CLIENT_INSTANCE_ID,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_RETRY_MS,
  FindingKind,
  SPAN_LISTENING_REFUSED,
} from '@resumewatch/semconv';
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
 * The lab's two listening-stream loops run against a server without sessions (the SDK's stateless shape,
 * as in cline/cline#12119): their GETs carry no Mcp-Session-Id. The instrumented client's spans of them
 * (mcp.stream.listening_refused: a 405, or a stream the server ended at once with no message) carry its
 * instance id (mcp.client.instance_id), by which serve's detector keys the re-opens. The twins run
 * against the same server: one client that stops after one 405, one that re-opens at the server's
 * `retry:` pace, both silent.
 */
const expectedAt = (name: LoopScenarioName): string[] => [...LOOP_SCENARIO_EXPECTED_FINDINGS[name]].sort();

describe('the lab loop scenarios through the instrumentation to resumewatch serve', () => {
  for (const name of LOOP_SCENARIO_NAMES) {
    it(`${name}: the expected findings`, { timeout: TIMEOUT }, async () => {
      const { summary, findings, spans } = await runInstrumented(name);
      expect(spans.length, 'spans exported').toBeGreaterThan(0);
      expect(kinds(findings), JSON.stringify(findings)).toEqual(expectedAt(name));
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
      if (name === 'listening-stream-retry-pace') {
        // More re-opens of streams closed with no message than the threshold (5) allows, each span saying the
        // pace the server asked for: only that pace, kept, makes them no loop.
        const listening = spans.filter((s) => s.attributes[ATTR_MCP_STREAM_RETRY_MS] !== undefined);
        expect(listening.length).toBeGreaterThanOrEqual(7);
        for (const s of listening) expect(s.attributes[ATTR_MCP_STREAM_RETRY_MS]).toBe(summary.details.retryMs);
      }
      if (name === 'listening-stream-loop' || name === 'listening-stream-loop-closed') {
        // No session: the loop is the instrumented client's, named by its instance id on every refused span.
        const refused = spans.filter((s) => s.name === SPAN_LISTENING_REFUSED);
        expect(refused.every((s) => s.attributes[ATTR_MCP_SESSION_ID] === undefined)).toBe(true);
        const instance = refused[0]?.attributes[ATTR_MCP_CLIENT_INSTANCE_ID];
        expect(typeof instance).toBe('string');
        const [loop] = findings.filter((f) => f.kind === FindingKind.LISTENING_STREAM_LOOP);
        expect(loop).toMatchObject({ session_id: '', client: instance });
        expect(loop!.status_code).toBe(name === 'listening-stream-loop' ? 405 : 200);
      }
    });
  }
});
