import { runCancellation } from './cancellation.js';
import { runCrossSessionStore } from './cross-session-store.js';
import { runCursorEvicted } from './cursor-evicted.js';
import { runEndlessLoop } from './endless-loop.js';
import { runHealthy } from './healthy.js';
import { runListeningReplay } from './listening-replay.js';
import { runNetworkCut } from './network-cut.js';
import type { ScenarioOptions } from './options.js';
import { runPerStreamDedup } from './per-stream-dedup.js';
import { runPolling } from './polling.js';
import { runQuietResume } from './quiet-resume.js';
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
  'quiet-resume': runQuietResume,
  polling: runPolling,
  'listening-replay': runListeningReplay,
  'endless-loop': runEndlessLoop,
  cancellation: runCancellation,
  'cross-session-store': runCrossSessionStore,
};

/** Runs one scenario against a lab server and returns what it observed. */
export function runScenario(name: ScenarioName, options: ScenarioOptions): Promise<ScenarioSummary> {
  return SCENARIOS[name](options);
}
