import type { ScenarioName } from '@resumewatch/lab';
import { FindingKind } from '@resumewatch/semconv';

// The finding kinds each lab scenario gives when the instrumented client (`instrumentFetch`) observes
// it: the client-side expectations of packages/detector/test/e2e-lab.test.ts (seed-loop … healthy,
// also EXPECTED.client of e2e-id-policy.test.ts) and of e2e-scenarios.test.ts (quiet-resume …
// cross-session-store, endless-loop without the guard). Those tables live inside test files (importing
// one would run its tests), so they are restated here entry for entry; the parity test also runs the
// instrumented client next to the gateway, so a drift of either table shows as a mismatch.

const SEED = [
  FindingKind.DUPLICATE_TERMINAL,
  FindingKind.RESUME_AFTER_TERMINAL,
  FindingKind.RECONNECT_STORM,
  FindingKind.SIGNATURE,
];

/** Every scenario, with the finding kinds of the instrumented client's view of it. */
export const CLIENT_EXPECTED: Record<ScenarioName, readonly string[]> = {
  'seed-loop': SEED,
  'per-stream-dedup': SEED,
  'network-cut': [],
  // The instrumented client's request deadline is 2 s there (the scenario's client waits 3 s).
  'server-restart': [FindingKind.AMBIGUOUS_EMPTY_REPLAY],
  'cursor-evicted': [FindingKind.CURSOR_LOST],
  'sdk-error-resume': [FindingKind.RESUME_AFTER_TERMINAL],
  healthy: [],
  'quiet-resume': [],
  polling: [],
  'listening-replay': [FindingKind.FOREIGN_REPLAY],
  'endless-loop': SEED,
  cancellation: [],
  'cross-session-store': [FindingKind.CONFLICTING_TERMINAL],
};
