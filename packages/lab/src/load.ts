import { runScenario } from './scenarios/index.js';
import type { ScenarioOptions } from './scenarios/options.js';
import type { ScenarioName } from './scenarios/summary.js';

export interface LoadOptions extends ScenarioOptions {
  /** Concurrent clients, each running the scenario in a loop. */
  clients: number;
  durationMs: number;
  /** Called every `progressIntervalMs` with the totals so far (durationMs: elapsed), e.g. to print progress. */
  onProgress?: (report: Readonly<LoadReport>) => void;
  /** Default 5000. */
  progressIntervalMs?: number;
}

export interface LoadReport {
  scenario: ScenarioName;
  clients: number;
  durationMs: number;
  runs: number;
  failures: number;
  /** The first few failure messages. */
  errors: string[];
  terminalDeliveries: number;
  distinctTerminalStreams: number;
  reconnects: number;
  /** Resume status -> how many times it was answered. */
  resumeStatuses: Record<string, number>;
  sideEffectCount: number;
}

/** Steady load: `clients` loops each running the scenario back to back until the duration is up. */
export async function runLoad(name: ScenarioName, options: LoadOptions): Promise<LoadReport> {
  const started = Date.now();
  const deadline = started + options.durationMs;
  const report: LoadReport = {
    scenario: name,
    clients: options.clients,
    durationMs: 0,
    runs: 0,
    failures: 0,
    errors: [],
    terminalDeliveries: 0,
    distinctTerminalStreams: 0,
    reconnects: 0,
    resumeStatuses: {},
    sideEffectCount: 0,
  };
  async function worker(): Promise<void> {
    while (Date.now() < deadline) {
      try {
        const summary = await runScenario(name, options);
        report.runs++;
        report.terminalDeliveries += summary.terminalDeliveries;
        report.distinctTerminalStreams += summary.distinctTerminalStreams;
        report.reconnects += summary.reconnects;
        report.sideEffectCount += summary.sideEffectCount ?? 0;
        for (const status of summary.resumeStatuses)
          report.resumeStatuses[status] = (report.resumeStatuses[status] ?? 0) + 1;
      } catch (error) {
        report.failures++;
        if (report.errors.length < 10) report.errors.push(error instanceof Error ? error.message : String(error));
        // A failing server should not be hammered in a tight loop.
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }
  const progress = options.onProgress;
  const timer =
    progress &&
    setInterval(() => {
      report.durationMs = Date.now() - started;
      progress(report);
    }, options.progressIntervalMs ?? 5000);
  try {
    await Promise.all(Array.from({ length: Math.max(1, options.clients) }, () => worker()));
  } finally {
    if (timer) clearInterval(timer);
  }
  report.durationMs = Date.now() - started;
  return report;
}
