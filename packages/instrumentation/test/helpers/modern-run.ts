import { runScenario } from '@resumewatch/lab';
import type { ScenarioName, ScenarioSummary } from '@resumewatch/lab';
import { expect, vi } from 'vitest';
import { instrumentMcpServer } from '../../src/index.js';
import { IDLE, WAIT, captureSpans, capturedFetch } from './spans.js';
import type { SpanCapture } from './spans.js';

export interface ModernRun {
  summary: ScenarioSummary;
  /** The client's spans. */
  client: SpanCapture;
  /** The server's spans. */
  server: SpanCapture;
}

/**
 * A 2026-07-28 lab scenario on the real v2 SDK: the client through instrumentFetch, every server
 * instance of the v2 lab server through instrumentMcpServer; resolves once the client is idle.
 */
export async function runModern(name: ScenarioName): Promise<ModernRun> {
  const { capture: client, fetch } = capturedFetch({ requestTimeoutMs: 60_000 });
  const server = captureSpans();
  const summary = await runScenario(name, {
    serverUrl: 'http://127.0.0.1:1/mcp',
    fetch,
    client: 'sdk-v2',
    modernServer: {
      decorateServer: (s) => instrumentMcpServer(s, { tracerProvider: server.provider, cancellationWaitMs: 5_000 }),
    },
  });
  await vi.waitFor(() => expect(fetch.stats()).toEqual(IDLE), WAIT);
  return { summary, client, server };
}
