import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import type { FetchLike } from '@resumewatch/wire';
import { describe, expect, it } from 'vitest';
import { instrumentFetch } from '../src/index.js';
import { connectSdkClient } from './helpers/sdk-client.js';
import { sdkServerPerTest } from './helpers/sdk-server.js';
import type { SdkServer } from './helpers/sdk-server.js';
import { RawClient } from './helpers/raw-client.js';
import { captureSpans, capturedFetch } from './helpers/spans.js';

const server = sdkServerPerTest();

/** A fetch that keeps a copy of every body the network gave it. */
function teeFetch(): { fetch: FetchLike; bodies: Promise<string>[] } {
  const bodies: Promise<string>[] = [];
  const fetch: FetchLike = async (input, init) => {
    const response = await globalThis.fetch(input, init);
    if (!response.body) return response;
    const [mine, theirs] = response.body.tee();
    bodies.push(new Response(mine).text());
    return new Response(theirs, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
  return { fetch, bodies };
}

/** What an application sees from one session: results, progress, errors, in order. */
async function sdkV1Story(url: string, fetch: FetchLike | undefined, s: SdkServer): Promise<string[]> {
  const story: string[] = [];
  const c = await connectSdkClient(url, fetch);
  const progress = (p: { progress: number }) => void story.push(`progress ${p.progress}`);
  story.push(JSON.stringify(await c.client.listTools()));
  story.push(
    JSON.stringify(
      await c.client.callTool({ name: 'stream_progress', arguments: { count: 3 } }, undefined, {
        onprogress: progress,
      }),
    ),
  );
  story.push(await c.client.callTool({ name: 'fail' }).then(JSON.stringify, (e: Error) => `error ${e.message}`));
  story.push(JSON.stringify(await c.client.callTool({ name: 'tool_error' })));
  s.cutNextCallAfter = 2;
  story.push(
    JSON.stringify(
      await c.client.callTool({ name: 'stream_progress', arguments: { count: 3, delay: 40 } }, undefined, {
        onprogress: progress,
      }),
    ),
  );
  await c.close();
  return story;
}

async function sdkV2Story(url: string, fetch: FetchLike | undefined): Promise<string[]> {
  const story: string[] = [];
  const client = new ClientV2({ name: 'v2', version: '1.0.0' });
  await client.connect(new TransportV2(new URL(url), fetch ? { fetch } : {}));
  story.push(JSON.stringify(await client.callTool({ name: 'stream_progress', arguments: { count: 2 } })));
  story.push(await client.callTool({ name: 'fail' }).then(JSON.stringify, (e: Error) => `error ${e.message}`));
  await client.close();
  return story;
}

describe('what the client observes is unchanged', () => {
  it('gives the client every body byte for byte (SSE and JSON responses)', async () => {
    for (const jsonResponse of [false, true]) {
      const s = await server({ jsonResponse });
      const tee = teeFetch();
      const capture = captureSpans();
      const client = new RawClient(s.url, instrumentFetch(tee.fetch, { tracerProvider: capture.provider }));
      await client.initialize();
      const read = [
        (await client.callTool('stream_progress', { count: 5 })).text,
        (await client.callTool('fail')).text,
      ];
      const received = await Promise.all(tee.bodies);
      for (const text of read) expect(received).toContain(text);
      expect(read[0]).toMatch(/streamed 5/);
      expect(capture.spans('tools/call stream_progress')).toHaveLength(1);
    }
  });

  it('SDK v1: same messages, order and errors with and without instrumentFetch', async () => {
    const s = await server();
    const bare = await sdkV1Story(s.url, undefined, s);
    const { capture, fetch } = capturedFetch();
    const instrumented = await sdkV1Story(s.url, fetch, s);
    expect(instrumented).toEqual(bare);
    expect(bare).toContain('progress 3');
    expect(capture.spans('tools/list')).toHaveLength(1);
    expect(capture.spans('tools/call stream_progress')).toHaveLength(2);
    expect(capture.spans('tools/call fail')).toHaveLength(1);
    expect(capture.spans('tools/call tool_error')).toHaveLength(1);
  });

  it('SDK v2 (@modelcontextprotocol/client): same messages, order and errors with and without instrumentFetch', async () => {
    const s = await server();
    const bare = await sdkV2Story(s.url, undefined);
    const { capture, fetch } = capturedFetch();
    const instrumented = await sdkV2Story(s.url, fetch);
    expect(instrumented).toEqual(bare);
    expect(bare[1]).toMatch(/^error .*fail/);
    expect(capture.spans('tools/call fail')).toHaveLength(1);
  });
});
