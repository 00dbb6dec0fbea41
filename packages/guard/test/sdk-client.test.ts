import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFixture } from './fixtures/run.js';
import { startSdkServer } from './sdk-server.js';
import type { SdkServer } from './sdk-server.js';

interface ClientReport {
  callError: string;
  sent: string[];
  refused: { requestIds: string[]; lastEventId: string; error: string; reason: string }[];
  dropped: number;
  errors: string[];
}

/** The SDK client runs in a plain Node process: see the fixture for why. */
function runClient(url: string, mode: 'plain' | 'guarded'): Promise<ClientReport> {
  return runFixture<ClientReport>('sdk-error-client.ts', [url, mode]);
}

let server: SdkServer;
beforeAll(async () => {
  server = await startSdkServer();
});
afterAll(async () => {
  await server.close();
});

describe('the unmodified MCP SDK client, against a tool that answers with a JSON-RPC error', () => {
  it('without the guard, resumes the stream of the error response it already has', async () => {
    const before = server.lastEventIds.length;
    const report = await runClient(server.url, 'plain');
    expect(report.callError).toMatch(/always fails/);
    expect(report.sent.length).toBeGreaterThan(0);
    expect(server.lastEventIds.length).toBeGreaterThan(before);
  }, 90_000);

  it('with guardedFetch, no Last-Event-ID request leaves the process after the error response', async () => {
    const before = server.lastEventIds.length;
    const report = await runClient(server.url, 'guarded');
    expect(report.callError).toMatch(/always fails/);
    expect(report.sent).toEqual([]);
    expect(server.lastEventIds.length).toBe(before);
    expect(report.refused.length).toBeGreaterThan(0);
    expect(report.refused[0]).toMatchObject({ error: 'InvalidResumptionError', reason: 'terminal' });
    expect(report.refused[0]!.requestIds).toHaveLength(1);
    expect(report.dropped).toBe(0);
  }, 90_000);
});
