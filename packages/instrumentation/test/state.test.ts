import { ATTR_ERROR_TYPE } from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { connectSdkClient } from './helpers/sdk-client.js';
import { sdkServerPerTest } from './helpers/sdk-server.js';
import { RawClient } from './helpers/raw-client.js';
import { capturedFetch, firstSpan, IDLE, WAIT } from './helpers/spans.js';

const sdkServer = sdkServerPerTest();
const server = () => sdkServer({ closeReplays: true });

describe('state the instrumentation holds', () => {
  it('holds nothing per stream or request once the streams ended, however many requests a client makes', async () => {
    const s = await server();
    const { capture, fetch } = capturedFetch({ observer: { maxRequests: 25 } });
    const client = new RawClient(s.url, fetch);
    await client.initialize();
    const samples: number[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 50; i++) {
        const call = await client.callTool('stream_progress', { count: 1, delay: 0 });
        if (i % 10 === 0) await client.resume(call.eventIds[0]!);
      }
      expect(fetch.stats()).toEqual(IDLE);
      samples.push(fetch.observer.stats().requests);
    }
    // A request whose stream ended after its terminal leaves the observer's request map (nothing for
    // the cap to push out); the recorder's own maps are empty after every round.
    expect(samples).toEqual([0, 0, 0, 0]);
    // initialize and 200 calls are requests (resumes carry none): all released, none evicted.
    expect(fetch.observer.stats()).toMatchObject({ requests: 0, evictions: 0, releasedRequests: 201 });
    expect(capture.spans('tools/call stream_progress')).toHaveLength(200);
  });

  it('ends the spans of requests whose streams the client cancels', async () => {
    const s = await server();
    const { capture, fetch } = capturedFetch();
    const c = await connectSdkClient(s.url, fetch);
    const call = c.client.callTool({ name: 'stream_progress', arguments: { count: 1, delay: 5_000 } }, undefined, {
      onprogress: () => {},
    });
    await vi.waitFor(() => expect(fetch.stats().openRequests, 'the call to start').toBe(1), WAIT);
    await c.close();
    await call.catch(() => undefined);
    await vi.waitFor(() => firstSpan(capture, 'tools/call stream_progress'), WAIT);
    expect(capture.spans('tools/call stream_progress')[0]!.attributes[ATTR_ERROR_TYPE]).toBe('aborted');
    expect(fetch.stats()).toEqual(IDLE);
  });
});
