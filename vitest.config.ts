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
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
