import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ResumewatchSpanProcessor, toSpanRecord } from '@resumewatch/detector';
import type { Finding, SpanRecord } from '@resumewatch/detector';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { instrumentFetch } from '@resumewatch/instrumentation';
import { RunTimeline, runScenario, startLabServer } from '@resumewatch/lab';
import type { RequestTimeline, ScenarioSummary } from '@resumewatch/lab';
import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';

/** One run of the seed scenario: what the client saw, and what the detector found in its spans. */
export interface DemoRun {
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
  try {
    const runs: DemoRun[] = [];
    for (const guarded of [false, true]) runs.push(await seedLoop(lab.url, guarded));
    return runs;
  } finally {
    await lab.close();
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
  return { guarded, summary, findings, timelines: timeline.wentWrong(), spans: kept.spans };
}
