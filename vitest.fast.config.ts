import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

// `pnpm test:fast`, for the edit loop: the unit tests, without a build (under 30 s on 2 cores). Left
// out: what starts real peers or whole scenarios (e2e-*, real peers, lab scenarios, the stories below),
// the built CLIs, the packed tarballs, a real Prometheus or haproxy, the benchmarks' smoke and the long
// property runs. `pnpm test` runs all of them.
export default mergeConfig(
  base,
  defineConfig({
    test: {
      // Workers are threads: a forked process per file costs more than most of these tests.
      pool: 'threads',
      exclude: [
        '**/node_modules/**',
        'test/**',
        '**/e2e-*.test.ts',
        '**/real-peers.test.ts',
        '**/real-server-scenarios.test.ts',
        '**/lab-scenarios.test.ts',
        'packages/lab/test/scenarios.test.ts',
        '**/cli*.test.ts',
        '**/serve-state.test.ts',
        '**/serve-restart.test.ts',
        '**/otlp-decode-equivalence.test.ts',
        'alerts/test/**',
        'packages/gateway/test/**',
        // Whole stories over real HTTP, seconds each: pnpm test runs them.
        'packages/demo/test/**',
        'packages/lab/test/everything-server.test.ts',
        'packages/daemon/test/serve-hostile.test.ts',
        'packages/daemon/test/refused-body.test.ts',
        'packages/daemon/test/analyze.test.ts',
        'packages/instrumentation/test/instrumentation.test.ts',
        'packages/instrumentation/test/global-fetch.test.ts',
        'packages/instrumentation/test/server-polling.test.ts',
        'packages/instrumentation/test/id-policy.test.ts',
        'packages/instrumentation/test/tasks-peers.test.ts',
        'packages/guard/test/guarded-fetch.test.ts',
        // The task guard on the real SDK 1.x task API (polls spaced to the interval, a ttl waited out).
        'packages/guard/test/tasks-sdk.test.ts',
        'packages/instrumentation/test/guard-tasks.test.ts',
        // The 2026-07-28 era's scenarios on the real v2 SDK (their broken streams surface at timeouts),
        // the listener-order comparison over lab scenarios, and the page in chromium.
        'packages/guard/test/modern-era.test.ts',
        'packages/instrumentation/test/modern-era.test.ts',
        'packages/lab/test/modern-scenarios.test.ts',
        'packages/instrumentation/test/listener-order.test.ts',
        'packages/daemon/test/page-browser.test.ts',
        'packages/daemon/test/page-task-browser.test.ts',
        'packages/daemon/test/page-story-browser.test.ts',
      ],
    },
  }),
);
