import { runCursorEvicted } from './cursor-evicted.js';
import { runHealthy } from './healthy.js';
import { runNetworkCut } from './network-cut.js';
import type { ScenarioOptions } from './options.js';
import { runPerStreamDedup } from './per-stream-dedup.js';
import { runSdkErrorResume } from './sdk-error-resume.js';
import { runSeedLoop } from './seed-loop.js';
import { runServerRestart } from './server-restart.js';
import type { ScenarioName, ScenarioSummary } from './summary.js';

const SCENARIOS: Record<ScenarioName, (options: ScenarioOptions) => Promise<ScenarioSummary>> = {
  'seed-loop': runSeedLoop,
  'per-stream-dedup': runPerStreamDedup,
  'network-cut': runNetworkCut,
  'server-restart': runServerRestart,
  'cursor-evicted': runCursorEvicted,
  'sdk-error-resume': runSdkErrorResume,
  healthy: runHealthy,
};

/** Runs one scenario against a lab server and returns what it observed. */
export function runScenario(name: ScenarioName, options: ScenarioOptions): Promise<ScenarioSummary> {
  return SCENARIOS[name](options);
}
