import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ResumewatchSpanProcessor, toSpanRecord } from '@resumewatch/detector';
import type { Finding, SpanRecord } from '@resumewatch/detector';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { instrumentFetch, instrumentMcpServer } from '@resumewatch/instrumentation';
import { RunTimeline, runScenario, startLabServer } from '@resumewatch/lab';
import type { RequestTimeline, ScenarioSummary } from '@resumewatch/lab';
import { ATTR_SERVICE_NAME, META_IDEMPOTENCY_KEY, ProtocolEra } from '@resumewatch/semconv';

/** One run of the demo: what the client saw, and what the detector found in its spans. */
export interface DemoRun {
  /** The protocol era of the run: the seed loop's two runs are `sessions`, the third act `stateless` (2026-07-28). */
  era: ProtocolEra;
  guarded: boolean;
  summary: ScenarioSummary;
  findings: Finding[];
  /** The wire timeline of each request that went wrong (terminal delivered again, or a resume after it, refused or not). */
  timelines: RequestTimeline[];
  /** Every span the client made, in the order they ended: what the HTML report draws. */
  spans: SpanRecord[];
}

/** Keeps the spans of a run (a demo's few dozen) for the report. */
class SpanKeeper implements SpanProcessor {
  readonly spans: SpanRecord[] = [];
  onStart(_span: Span): void {}
  onEnd(span: ReadableSpan): void {
    this.spans.push(toSpanRecord(span));
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Runs the seed scenario twice against a lab server on loopback: once with the instrumentation only,
 * so the detector (in-process, on the client's own spans) sees the failure; once with the guard
 * enforced in the same wrapper, so it does not happen.
 */
export async function runDemo(): Promise<DemoRun[]> {
  const lab = await startLabServer();
  const runs: DemoRun[] = [];
  try {
    for (const guarded of [false, true]) runs.push(await seedLoop(lab.url, guarded));
  } finally {
    await lab.close();
  }
  runs.push(await modernReissue());
  return runs;
}

/** The 2026-07-28 scenarios start their own v2 server: this URL is never called. */
const UNUSED_LAB_URL = 'http://127.0.0.1:9/mcp';

/**
 * The third act, MCP 2026-07-28: `modern-broken-reissue` on the real v2 SDK. The call's stream breaks,
 * the server finishes the first attempt anyway, the application re-issues it. The client's spans
 * (instrumentFetch) and the v2 server's (instrumentMcpServer) share the first attempt's trace, so the
 * detector reports duplicate_execution; the guard gives the re-issue the first attempt's idempotency
 * key and the server, which checks it (`charge_once`), does not charge again: one side effect.
 */
async function modernReissue(): Promise<DemoRun> {
  const findings: Finding[] = [];
  const detector = new ResumewatchSpanProcessor({ onFinding: (f) => findings.push(f), tickMs: 0 });
  const kept = new SpanKeeper();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'demo-client-2026-07-28' }),
    spanProcessors: [detector, kept],
  });
  // The client's request span goes to the server in `traceparent`, as the OpenTelemetry Node SDK's default propagator does.
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const timeline = new RunTimeline();
  const instrumented = instrumentFetch({ tracerProvider: provider, guard: { idempotencyKey: true } });
  try {
    const summary = await runScenario('modern-broken-reissue', {
      serverUrl: UNUSED_LAB_URL,
      client: 'sdk-v2',
      // The keys go into the body before the instrumentation reads it.
      fetch: timeline.wrap(instrumented.guard!.withIdempotencyKeys(instrumented)),
      modernServer: {
        idempotencyMetaKey: META_IDEMPOTENCY_KEY,
        decorateServer: (server) => instrumentMcpServer(server, { tracerProvider: provider }),
      },
    });
    await provider.forceFlush();
    await provider.shutdown();
    return {
      era: ProtocolEra.STATELESS,
      guarded: true,
      summary,
      findings,
      timelines: timeline.wentWrong(),
      spans: kept.spans,
    };
  } finally {
    instrumented.guard!.dispose();
    propagation.disable();
  }
}

async function seedLoop(serverUrl: string, guarded: boolean): Promise<DemoRun> {
  const findings: Finding[] = [];
  const detector = new ResumewatchSpanProcessor({ onFinding: (f) => findings.push(f), tickMs: 0 });
  const kept = new SpanKeeper();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: guarded ? 'demo-client-guarded' : 'demo-client' }),
    spanProcessors: [detector, kept],
  });
  // The timeline sits outside the instrumentation: it sees what the client asked for, including a resume the guard refused.
  const timeline = new RunTimeline();
  const fetch = timeline.wrap(instrumentFetch({ tracerProvider: provider, guard: guarded }));
  const summary = await runScenario('seed-loop', { serverUrl, fetch });
  await provider.forceFlush();
  await provider.shutdown();
  return { era: ProtocolEra.SESSIONS, guarded, summary, findings, timelines: timeline.wentWrong(), spans: kept.spans };
}
