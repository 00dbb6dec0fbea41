import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources through the "@resumewatch/source" export
// condition, so tests never run against a stale build; spawned CLIs use the built dist/. The condition
// is scoped to this project because a bare "source" also matches dependencies that publish
// TypeScript under it (eventsource-parser), which Node cannot load.
export default defineConfig({
  resolve: { conditions: ['@resumewatch/source'] },
  ssr: { resolve: { conditions: ['@resumewatch/source'] } },
  test: {
    include: [
      'packages/*/test/**/*.test.ts',
      'dashboards/test/**/*.test.ts',
      'alerts/test/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    // Most files wait on loopback servers, SDK clients and child processes rather than compute: on 2
    // cores vitest's default (cores - 1 = one worker) runs them one after another. Four workers overlap
    // the waits; the CPU-bound files are few. RESUMEWATCH_TEST_WORKERS overrides it (1 to debug a flake).
    maxWorkers: Number(process.env.RESUMEWATCH_TEST_WORKERS) || 4,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
