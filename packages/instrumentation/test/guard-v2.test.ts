import { setTimeout as delay } from 'node:timers/promises';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { ResumeDecision, guardedFetch } from '@resumewatch/guard';
import type { FetchLike } from '@resumewatch/wire';
import { describe, expect, it } from 'vitest';
import { sdkServerPerTest } from './helpers/sdk-server.js';
import type { SdkServer } from './helpers/sdk-server.js';

// The guard under the v2 client (@modelcontextprotocol/client), for the version matrix's v2 cell: the
// guard package itself does not depend on the v2 client, this one does.
const server = sdkServerPerTest();

/** Records the Last-Event-ID of every request that leaves the process. */
function recordingFetch(): { fetch: FetchLike; cursors: string[] } {
  const cursors: string[] = [];
  const fetch: FetchLike = (input, init) => {
    const cursor = new Headers(init?.headers).get('last-event-id');
    if (cursor !== null) cursors.push(cursor);
    return globalThis.fetch(input, init);
  };
  return { fetch, cursors };
}

/** A result, a JSON-RPC error, then a result whose stream is cut after 2 events and resumed. */
async function story(s: SdkServer, fetch: FetchLike): Promise<string[]> {
  const out: string[] = [];
  const client = new ClientV2({ name: 'v2', version: '1.0.0' });
  const reconnectionOptions = {
    initialReconnectionDelay: 20,
    maxReconnectionDelay: 100,
    reconnectionDelayGrowFactor: 1.5,
    maxRetries: 3,
  };
  await client.connect(new TransportV2(new URL(s.url), { fetch, reconnectionOptions }));
  out.push(JSON.stringify(await client.callTool({ name: 'stream_progress', arguments: { count: 2 } })));
  out.push(await client.callTool({ name: 'fail' }).then(JSON.stringify, (e: Error) => `error ${e.message}`));
  s.cutNextCallAfter = 2;
  out.push(JSON.stringify(await client.callTool({ name: 'stream_progress', arguments: { count: 3, delay: 40 } })));
  // Real time for a resume after the error response, which a 1.32 SDK v1 client would send: the test
  // checks that none leaves, so there is no condition to wait for.
  await delay(300);
  await client.close();
  return out;
}

describe('guardedFetch under the SDK v2 client', () => {
  it('same results and errors as without it; the resume after a network cut passes as a valid continuation', async () => {
    const s = await server();
    const bare = recordingFetch();
    const expected = await story(s, bare.fetch);
    expect(expected[1]).toMatch(/^error .*fail/);
    expect(expected[2]).toContain('streamed 3');

    const beneath = recordingFetch();
    const decisions: string[] = [];
    const refused: unknown[] = [];
    const dropped: unknown[] = [];
    const fetch = guardedFetch(beneath.fetch, {
      onResumeDecision: (r) => decisions.push(`${r.requestId} ${r.decision}`),
      onResumeRefused: (r) => refused.push(r),
      onDuplicateTerminalDropped: (r) => dropped.push(r),
    });
    expect(await story(s, fetch)).toEqual(expected);
    // One resume each, the cut stream's (request 3: after initialize 0, the call 1 and the error 2);
    // the v2 client does not resume after the error response, so there is nothing to refuse.
    expect(bare.cursors).toHaveLength(1);
    expect(beneath.cursors).toHaveLength(1);
    expect(decisions).toEqual([`3 ${ResumeDecision.CONTINUATION_VALID}`]);
    expect(refused).toEqual([]);
    expect(dropped).toEqual([]);
  });
});
