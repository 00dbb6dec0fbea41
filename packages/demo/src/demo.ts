import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ResumewatchSpanProcessor } from '@resumewatch/detector';
import type { Finding } from '@resumewatch/detector';
import { instrumentFetch } from '@resumewatch/instrumentation';
import { runScenario, startLabServer } from '@resumewatch/lab';
import type { ScenarioSummary } from '@resumewatch/lab';
import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';

/** One run of the seed scenario: what the client saw, and what the detector found in its spans. */
export interface DemoRun {
  guarded: boolean;
  summary: ScenarioSummary;
  findings: Finding[];
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
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: guarded ? 'demo-client-guarded' : 'demo-client' }),
    spanProcessors: [detector],
  });
  const fetch = instrumentFetch({ tracerProvider: provider, guard: guarded, replayWindowMs: 500 });
  const summary = await runScenario('seed-loop', { serverUrl, fetch });
  await provider.forceFlush();
  await provider.shutdown();
  return { guarded, summary, findings };
}
