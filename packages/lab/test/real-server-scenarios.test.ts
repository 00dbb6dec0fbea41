import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenario, startLabServer } from '../src/index.js';
import type { LabServer } from '../src/index.js';

let lab: LabServer;

beforeAll(async () => {
  lab = await startLabServer();
});

afterAll(async () => {
  await lab.close();
});

describe('probe', () => {
  for (const name of ['quiet-resume', 'polling', 'listening-replay', 'endless-loop', 'cancellation', 'cross-session-store'] as const) {
    it(name, async () => {
      const summary = await runScenario(name, { serverUrl: lab.url });
      console.log(JSON.stringify(summary, null, 1));
    });
  }
});
