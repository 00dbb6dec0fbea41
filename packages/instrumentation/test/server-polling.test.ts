import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { instrumentEventStore, instrumentServerTransport } from '../src/index.js';
import { McpServerInstrumentation } from '../src/server-instrumentation.js';
import { CLIENT_KINDS, connectClient } from './helpers/clients.js';
import { MemoryEventStore, sdkServerPerTest } from './helpers/sdk-server.js';
import type { SdkServerOptions } from './helpers/sdk-server.js';
import { attr as a, captureSpans, WAIT } from './helpers/spans.js';
import type { SpanCapture } from './helpers/spans.js';

// Server spans alone, on a server built only from MCP SDK 1.32 parts with `retryInterval` and
// `closeSSEStream` (SEP-1699), SDK 1.x and v2 clients through a plain fetch, real loopback HTTP.

const sdkServer = sdkServerPerTest();
const POLLS = 10;
/** Long enough that the tool's answer, after its last close, is stored before the client is back. */
const RETRY_MS = 100;

/** An SDK server whose each session's transport and store `instrument` gets, before the first request. */
const server = (instrument: (transport: StreamableHTTPServerTransport, store: MemoryEventStore) => void) => {
  let store: MemoryEventStore | undefined;
  const options: SdkServerOptions = {
    retryInterval: RETRY_MS,
    primeResumes: true,
    store: () => (store = new MemoryEventStore()),
    onTransport: (transport) => instrument(transport, store!),
  };
  return sdkServer(options);
};

/**
 * Each server resume span: outcome, evidence, replayed events, replayed terminal, terminal observed,
 * and the request it names (the store learns the request a stream serves from its stored response).
 */
const resumes = (capture: SpanCapture) =>
  capture
    .spans(SPAN_STREAM_RESUME)
    .map((s) => [
      a(s, ATTR_MCP_RESUME_OUTCOME),
      a(s, ATTR_MCP_RESUME_EVIDENCE),
      a(s, ATTR_MCP_RESUME_REPLAYED_EVENTS),
      a(s, ATTR_MCP_RESUME_REPLAYED_TERMINAL),
      a(s, ATTR_MCP_REQUEST_TERMINAL_OBSERVED),
      a(s, ATTR_JSONRPC_REQUEST_ID),
    ]);

/** Ten empty polls, then the replay that delivers the result for the first time: no duplicate, no resume after it. */
const polled = (id: string) => [
  ...Array(POLLS).fill(['poll', 'body_end', 0, false, false, undefined]),
  ['continuation', 'message', 1, true, false, id],
];

describe('SEP-1699 polling seen by the server: the result stored while the client is between polls', () => {
  it.each(CLIENT_KINDS)(
    '%s: ten polls, then its first delivery, on the last poll; never a replay of a delivered terminal',
    async (kind) => {
      const capture = captureSpans();
      const s = await server((transport, store) => {
        instrumentEventStore(store, { tracerProvider: capture.provider });
        instrumentServerTransport(transport, { tracerProvider: capture.provider });
      });
      const client = await connectClient(kind, s.url, globalThis.fetch);
      expect(await client.call('poll', { polls: POLLS, detached: true })).toBe(`polled ${POLLS}`);
      await client.close();
      const id = String(a(capture.spans('tools/call poll')[0]!, ATTR_JSONRPC_REQUEST_ID));
      await vi.waitFor(() => expect(resumes(capture).length, 'the server resume spans').toBe(POLLS + 1), WAIT);
      expect(resumes(capture)).toEqual(polled(id));
      expect(s.resumes).toBe(POLLS + 1);
    },
  );

  it('register (McpServerInstrumentation) gives the same spans', async () => {
    const capture = captureSpans();
    const instrumentation = new McpServerInstrumentation({ enabled: false });
    instrumentation.setTracerProvider(capture.provider);
    // What register's patch does at the transport's first request: its web-standard transport and that one's store.
    const s = await server((transport) =>
      instrumentation.instrumentTransport(
        (transport as unknown as { _webStandardTransport: object })._webStandardTransport,
      ),
    );
    const client = await connectClient('sdk-v1', s.url, globalThis.fetch);
    expect(await client.call('poll', { polls: POLLS, detached: true })).toBe(`polled ${POLLS}`);
    await client.close();
    const id = String(a(capture.spans('tools/call poll')[0]!, ATTR_JSONRPC_REQUEST_ID));
    await vi.waitFor(() => expect(resumes(capture).length, 'the server resume spans').toBe(POLLS + 1), WAIT);
    expect(resumes(capture)).toEqual(polled(id));
  });

  it('the result stored while the resumed stream is connected is delivered there: a replay of it after that saw it delivered', async () => {
    const capture = captureSpans();
    const s = await server((transport, store) => {
      instrumentEventStore(store, { tracerProvider: capture.provider });
      instrumentServerTransport(transport, { tracerProvider: capture.provider });
    });
    const client = await connectClient('sdk-v1', s.url, globalThis.fetch);
    expect(await client.call('poll', { polls: 3 })).toBe('polled 3');
    await client.close();
    const id = String(a(capture.spans('tools/call poll')[0]!, ATTR_JSONRPC_REQUEST_ID));
    await vi.waitFor(() => expect(resumes(capture).length, 'the server resume spans').toBe(3), WAIT);
    // The last poll's stream was connected when the result was stored: it carried it, live.
    expect(resumes(capture)).toEqual([
      ['poll', 'body_end', 0, false, false, undefined],
      ['poll', 'body_end', 0, false, false, undefined],
      ['continuation', 'message', 1, true, false, id],
    ]);
  });
});
