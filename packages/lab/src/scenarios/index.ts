import { runCancellation } from './cancellation.js';
import { runCancellationSdk } from './cancellation-sdk.js';
import { runCrossSessionStore } from './cross-session-store.js';
import { runCrossSessionStoreSdk } from './cross-session-store-sdk.js';
import { runCursorEvicted } from './cursor-evicted.js';
import { runDualEra } from './dual-era.js';
import { runEndlessLoop } from './endless-loop.js';
import { runHealthy } from './healthy.js';
import {
  runDeadSessionLoop,
  runDeadSessionLoop400,
  runDeadSessionReinit,
  runListeningStreamLoop,
  runListeningStreamLoopClosed,
  runListeningStreamRetryPace,
  runListeningStreamStops,
} from './loops.js';
import { runListeningReplay } from './listening-replay.js';
import { runListeningReplaySdk } from './listening-replay-sdk.js';
import { runModernHealthy } from './modern-healthy.js';
import { runModernInputRound } from './modern-input-round.js';
import { runModernReissue } from './modern-reissue.js';
import { runNetworkCut } from './network-cut.js';
import type { ResolvedScenarioOptions, ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import { runPerStreamDedup } from './per-stream-dedup.js';
import { runPolling } from './polling.js';
import { runPollingSdk } from './polling-sdk.js';
import { runQuietResume } from './quiet-resume.js';
import { runQuietResumeSdk } from './quiet-resume-sdk.js';
import { runResumeLosesResult } from './resume-loses-result.js';
import { runResumeLosesResultSdk } from './resume-loses-result-sdk.js';
import type { ScenarioClient, SdkClientKind } from './sdk-clients.js';
import { runSdkErrorResume } from './sdk-error-resume.js';
import { runSeedLoop } from './seed-loop.js';
import { runServerRestart } from './server-restart.js';
import { runSessionClientModernServer } from './session-client-modern-server.js';
import type { ScenarioName, ScenarioSummary } from './summary.js';
import {
  runModernTaskDuplicate,
  runModernTaskHealthy,
  runModernTaskLost,
  runModernTaskPollStorm,
  runTaskLegacyClientExtensionServer,
} from './tasks-extension.js';
import {
  runTaskCancelled,
  runTaskHealthy,
  runTaskPollStorm,
  runTaskReissueAfterLostReply,
  runTaskRereads,
  runTaskResultAfterExpiry,
} from './tasks-sdk.js';

/**
 * The 2026-07-28 scenarios: each starts its own server on the v2 SDK (in-process, loopback; `serverUrl`
 * and the control endpoint are not used) and runs the real SDK clients it names.
 */
const MODERN: Partial<Record<ScenarioName, (options: ScenarioOptions) => Promise<ScenarioSummary>>> = {
  'modern-healthy': runModernHealthy,
  'modern-broken-reissue': (options) => runModernReissue('modern-broken-reissue', 'charge', resolveOptions(options)),
  'modern-honours-cancel': (options) =>
    runModernReissue('modern-honours-cancel', 'charge_cancellable', resolveOptions(options)),
  'modern-input-round': runModernInputRound,
  'dual-era': runDualEra,
  'session-client-modern-server': runSessionClientModernServer,
};

/**
 * The task scenarios: each starts its own server (in-process, loopback) and runs the one client it
 * names: the SDK 1.x client's task API (`sdk`), or a plain fetch client for the 2026-07-28 extension,
 * which no SDK implements (`raw`).
 */
const TASKS: Partial<
  Record<ScenarioName, { client: ScenarioClient; run: (options: ScenarioOptions) => Promise<ScenarioSummary> }>
> = {
  'task-healthy': { client: 'sdk', run: runTaskHealthy },
  'task-reissue-after-lost-reply': { client: 'sdk', run: runTaskReissueAfterLostReply },
  'task-result-after-expiry': { client: 'sdk', run: runTaskResultAfterExpiry },
  'task-poll-storm': { client: 'sdk', run: runTaskPollStorm },
  'task-rereads': { client: 'sdk', run: runTaskRereads },
  'task-cancelled': { client: 'sdk', run: runTaskCancelled },
  'modern-task-healthy': { client: 'raw', run: runModernTaskHealthy },
  'modern-task-duplicate': { client: 'raw', run: runModernTaskDuplicate },
  'modern-task-lost': { client: 'raw', run: runModernTaskLost },
  'modern-task-poll-storm': { client: 'raw', run: runModernTaskPollStorm },
  'task-legacy-client-extension-server': { client: 'sdk', run: runTaskLegacyClientExtensionServer },
};

/** The loop scenarios (issue 39): each starts its own server and runs the SDK 1.x client. */
const LOOPS: Partial<Record<ScenarioName, (options: ScenarioOptions) => Promise<ScenarioSummary>>> = {
  'dead-session-loop': runDeadSessionLoop,
  'dead-session-reinit': runDeadSessionReinit,
  'dead-session-loop-400': runDeadSessionLoop400,
  'listening-stream-loop': runListeningStreamLoop,
  'listening-stream-loop-closed': runListeningStreamLoopClosed,
  'listening-stream-stops': runListeningStreamStops,
  'listening-stream-retry-pace': runListeningStreamRetryPace,
};

/** The scenario registry: every scenario of the session era with its raw-client run. */
const SCENARIOS: Partial<Record<ScenarioName, (options: ScenarioOptions) => Promise<ScenarioSummary>>> = {
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
  'resume-loses-result': runResumeLosesResult,
};

/** Scenarios that also run with the unmodified SDK clients (1.x and v2). */
const SDK_RUNS: Partial<
  Record<ScenarioName, (kind: SdkClientKind, options: ResolvedScenarioOptions) => Promise<ScenarioSummary>>
> = {
  'quiet-resume': runQuietResumeSdk,
  polling: runPollingSdk,
  'listening-replay': runListeningReplaySdk,
  cancellation: runCancellationSdk,
  'cross-session-store': runCrossSessionStoreSdk,
  'resume-loses-result': runResumeLosesResultSdk,
};

/** The clients a scenario runs with. */
export function scenarioClients(name: ScenarioName): ScenarioClient[] {
  if (MODERN[name]) return ['sdk-v2'];
  const task = TASKS[name];
  if (task) return [task.client];
  if (LOOPS[name]) return ['sdk'];
  return SDK_RUNS[name] ? ['raw', 'sdk', 'sdk-v2'] : ['raw'];
}

/** Runs one scenario against a lab server and returns what it observed. */
export async function runScenario(name: ScenarioName, options: ScenarioOptions): Promise<ScenarioSummary> {
  const modern = MODERN[name];
  if (modern) {
    if (options.client !== undefined && options.client !== 'sdk-v2')
      throw new Error(`scenario ${name} runs with the real v2 SDK clients only (clients: sdk-v2)`);
    return modern(options);
  }
  const task = TASKS[name];
  if (task) {
    if (options.client !== undefined && options.client !== task.client)
      throw new Error(`scenario ${name} runs with one client only (clients: ${task.client})`);
    return task.run(options);
  }
  const loop = LOOPS[name];
  if (loop) {
    if (options.client !== undefined && options.client !== 'sdk')
      throw new Error(`scenario ${name} runs with one client only (clients: sdk)`);
    return loop(options);
  }
  const client = options.client ?? 'raw';
  if (client === 'raw') return SCENARIOS[name]!(options);
  const sdkRun = SDK_RUNS[name];
  if (!sdkRun)
    throw new Error(`scenario ${name} runs with the raw client only (clients: ${scenarioClients(name).join(', ')})`);
  return sdkRun(client, resolveOptions(options));
}
