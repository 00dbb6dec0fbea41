import { ATTR_ERROR_TYPE } from '@resumewatch/semconv';
import { afterEach, describe, expect, it } from 'vitest';
import { instrumentFetch } from '../src/index.js';
import { connectSdkClient } from './helpers/sdk-client.js';
import { startSdkServer } from './helpers/sdk-server.js';
import type { SdkServer } from './helpers/sdk-server.js';
import { RawClient } from './helpers/raw-client.js';
import { captureSpans, waitFor } from './helpers/spans.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(): Promise<SdkServer> {
  const s = await startSdkServer({ closeReplays: true });
  cleanups.push(() => s.close());
  return s;
}

const idle = { openRequests: 0, openResumes: 0, pendingHttp: 0 };

describe('state the instrumentation holds', () => {
  it('holds nothing per stream or request once the streams ended, however many requests a client makes', async () => {
    const s = await server();
    const capture = captureSpans();
    const fetch = instrumentFetch({ tracerProvider: capture.provider, observer: { maxRequests: 25 } });
    const client = new RawClient(s.url, fetch);
    await client.initialize();
    const samples: number[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 50; i++) {
        const call = await client.callTool('stream_progress', { count: 1, delay: 0 });
        if (i % 10 === 0) await client.resume(call.eventIds[0]!);
      }
      expect(fetch.stats()).toEqual(idle);
      samples.push(fetch.observer.stats().requests);
    }
    // Held request records stay at the cap; the recorder's own maps are empty after every round.
    expect(Math.max(...samples)).toBeLessThanOrEqual(25);
    expect(fetch.observer.stats().evictions).toBeGreaterThan(0);
    expect(capture.spans('tools/call stream_progress')).toHaveLength(200);
  });

  it('ends the spans of requests whose streams the client cancels', async () => {
    const s = await server();
    const capture = captureSpans();
    const fetch = instrumentFetch({ tracerProvider: capture.provider });
    const c = await connectSdkClient(s.url, fetch);
    const call = c.client.callTool({ name: 'stream_progress', arguments: { count: 1, delay: 5_000 } }, undefined, { onprogress: () => {} });
    await waitFor(() => fetch.stats().openRequests === 1, 'the call to start');
    await c.close();
    await call.catch(() => undefined);
    await waitFor(() => capture.spans('tools/call stream_progress')[0], 'the request span');
    expect(capture.spans('tools/call stream_progress')[0]!.attributes[ATTR_ERROR_TYPE]).toBe('aborted');
    expect(fetch.stats()).toEqual(idle);
  });
});
