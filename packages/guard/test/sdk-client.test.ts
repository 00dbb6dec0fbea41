import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InvalidResumptionError, guardedFetch } from '../src/index.js';
import { recordGuard } from './helpers/record-guard.js';
import { WAIT } from './helpers/wait.js';
import { startSdkServer } from '../../instrumentation/test/helpers/sdk-server.js';
import type { SdkServer } from '../../instrumentation/test/helpers/sdk-server.js';

let server: SdkServer;
beforeAll(async () => {
  // The SDK's example store, as deployed from its examples: no eviction, so a resume loop never ends by itself.
  server = await startSdkServer({ store: () => new InMemoryEventStore() });
});
afterAll(async () => {
  await server.close();
});

/** A fetch that records the Last-Event-ID of every request that leaves the process through it. */
function recordingFetch(): { fetch: typeof globalThis.fetch; lastEventIds: string[] } {
  const lastEventIds: string[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    const cursor = new Headers(init?.headers).get('last-event-id');
    if (cursor !== null) lastEventIds.push(cursor);
    return globalThis.fetch(input, init);
  };
  return { fetch, lastEventIds };
}

/** The unmodified SDK client calls the tool that answers with a JSON-RPC error. */
async function callFailingTool(fetch: typeof globalThis.fetch, onerror: (e: Error) => void): Promise<Client> {
  const client = new Client({ name: 'guard-test-client', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch });
  await client.connect(transport);
  transport.onerror = onerror;
  await expect(client.callTool({ name: 'fail', arguments: {} })).rejects.toThrow(/MCP error -32603: fail/);
  return client;
}

describe('the unmodified MCP SDK client, against a tool that answers with a JSON-RPC error', () => {
  it('without the guard, resumes the stream of the error response it already has', async () => {
    const beneath = recordingFetch();
    const before = server.resumes;
    const client = await callFailingTool(beneath.fetch, () => {});
    await vi.waitFor(() => expect(server.resumes).toBeGreaterThan(before), WAIT);
    await client.close();
    expect(beneath.lastEventIds.length).toBeGreaterThan(0);
  });

  it('with guardedFetch, no Last-Event-ID request leaves the process after the error response', async () => {
    const beneath = recordingFetch();
    const seen = recordGuard();
    const errors: Error[] = [];
    const before = server.resumes;
    const client = await callFailingTool(guardedFetch(beneath.fetch, seen.options), (e) => void errors.push(e));
    // The SDK tries to resume; the guard refuses every attempt before it leaves, until the SDK gives up.
    await vi.waitFor(
      () => expect(errors.map((e) => e.message)).toContainEqual(expect.stringMatching(/Maximum reconnection attempts/)),
      WAIT,
    );
    await client.close();
    expect(beneath.lastEventIds).toEqual([]);
    expect(server.resumes).toBe(before);
    expect(seen.refused.length).toBeGreaterThan(0);
    expect(seen.refused[0]!.error).toBeInstanceOf(InvalidResumptionError);
    expect(seen.refused[0]!.error.reason).toBe('terminal');
    expect(seen.refused[0]!.requestIds).toHaveLength(1);
    expect(seen.dropped).toEqual([]);
  });
});
