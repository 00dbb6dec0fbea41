import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources through the "source" export condition,
// so tests never run against a stale build. Spawned CLIs use the built dist/.
export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'dashboards/test/**/*.test.ts', 'alerts/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
