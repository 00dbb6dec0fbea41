import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_RESUMED_FROM_ID,
  SPAN_STREAM_RESUME,
  ErrorType,
} from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { instrumentEventStore, instrumentServerTransport } from '../src/index.js';
import { connectSdkClient } from './helpers/sdk-client.js';
import type { SdkClient } from './helpers/sdk-client.js';
import { MemoryEventStore, sdkServerPerTest } from './helpers/sdk-server.js';
import type { SdkServer, SdkServerOptions } from './helpers/sdk-server.js';
import { PROTOCOL_VERSION, RawClient } from './helpers/raw-client.js';
import { attr as a, captureSpans, firstSpan, WAIT } from './helpers/spans.js';
import type { SpanCapture } from './helpers/spans.js';

const sdkServer = sdkServerPerTest();

async function instrumentedServer(
  options: SdkServerOptions = {},
): Promise<{ server: SdkServer; capture: SpanCapture }> {
  const capture = captureSpans();
  const server = await sdkServer({
    ...options,
    onTransport: (transport) => void instrumentServerTransport(transport, { tracerProvider: capture.provider }),
  });
  instrumentEventStore(server.store, { tracerProvider: capture.provider });
  return { server, capture };
}

/**
 * A tool call whose handler runs on for a second and a half, on an instrumented server with a
 * cancellationWaitMs of 100 ms; `close` runs after its first progress update. Returns the request's
 * server span.
 */
async function slowCallClosedBy(
  close: (transport: { close(): Promise<void> }, client: SdkClient) => Promise<void>,
): Promise<ReadableSpan> {
  const capture = captureSpans();
  let serverTransport: { close(): Promise<void> } | undefined;
  const server = await sdkServer({
    onTransport: (transport) =>
      void (serverTransport = instrumentServerTransport(transport, {
        tracerProvider: capture.provider,
        cancellationWaitMs: 100,
      })),
  });
  const c = await connectSdkClient(server.url);
  let progressed!: () => void;
  const firstProgress = new Promise<void>((resolve) => (progressed = resolve));
  const call = c.client
    .callTool({ name: 'stream_progress', arguments: { count: 2, delay: 1500 } }, undefined, {
      onprogress: () => progressed(),
    })
    .catch(() => undefined);
  await firstProgress;
  await close(serverTransport!, c);
  const span = await vi.waitFor(() => firstSpan(capture, 'tools/call stream_progress'), WAIT);
  await c.close();
  await call;
  return span;
}

describe('server side', () => {
  it('server request spans follow the client conventions, kind SERVER', async () => {
    const { server, capture } = await instrumentedServer();
    const c = await connectSdkClient(server.url);
    await c.client.callTool({ name: 'stream_progress', arguments: { count: 1 } }, undefined, { onprogress: () => {} });
    await expect(c.client.callTool({ name: 'fail' })).rejects.toThrow();
    await c.client.callTool({ name: 'tool_error' });
    const sessionId = c.transport.sessionId;
    await c.close();

    expect(capture.spans('tools/call stream_progress')).toHaveLength(1);
    expect(capture.spans('tools/call fail')).toHaveLength(1);
    const call = capture.spans('tools/call stream_progress')[0]!;
    expect(call.kind).toBe(SpanKind.SERVER);
    expect(call.attributes).toMatchObject({
      [ATTR_GEN_AI_TOOL_NAME]: 'stream_progress',
      [ATTR_MCP_SESSION_ID]: sessionId,
      [ATTR_MCP_PROTOCOL_VERSION]: PROTOCOL_VERSION,
    });
    expect(a(call, ATTR_ERROR_TYPE)).toBeUndefined();
    expect(a(capture.spans('tools/call fail')[0]!, ATTR_ERROR_TYPE)).toBe('-32603');
    expect(a(capture.spans('tools/call tool_error')[0]!, ATTR_ERROR_TYPE)).toBe('tool_error');
    const init = capture.spans('initialize')[0]!;
    expect(init.attributes).toMatchObject({
      [ATTR_MCP_SESSION_ID]: sessionId,
      [ATTR_MCP_PROTOCOL_VERSION]: PROTOCOL_VERSION,
    });
    expect(capture.spans(SPAN_STREAM_RESUME)).toHaveLength(0);
  });

  it('a request whose transport closed, and whose handler is not seen to end within cancellationWaitMs, leaves its fate unknown', async () => {
    // As the v2 SDK's per-request transport closes when the client cancels.
    const span = await slowCallClosedBy((transport) => transport.close());
    // Silence is not evidence: the span says the stream closed early, not that the work stopped.
    expect(a(span, ATTR_ERROR_TYPE)).toBe(ErrorType.ABORTED);
    expect(a(span, ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION)).toBeUndefined();
  });

  it("a session's DELETE closes its open requests' streams: their spans end aborted, not at the request timeout", async () => {
    // The SDK 1.x server transport closes its inner web-standard transport on a DELETE, not itself.
    const span = await slowCallClosedBy((_, client) => client.transport.terminateSession());
    expect(a(span, ATTR_ERROR_TYPE)).toBe(ErrorType.ABORTED);
  });

  it('seed loop: every replay of the finished stream says the terminal had been delivered and was replayed', async () => {
    const { server, capture } = await instrumentedServer({ closeReplays: true });
    const client = new RawClient(server.url, globalThis.fetch);
    await client.initialize();
    const call = await client.callTool('stream_progress', { count: 2 });
    for (let i = 0; i < 3; i++) await client.resume(call.eventIds[0]!);

    const resumes = capture.spans(SPAN_STREAM_RESUME);
    expect(resumes).toHaveLength(3);
    for (const resume of resumes) {
      expect(resume.kind).toBe(SpanKind.SERVER);
      expect(resume.attributes).toMatchObject({
        [ATTR_JSONRPC_REQUEST_ID]: String(call.id),
        [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: true,
        [ATTR_MCP_RESUME_OUTCOME]: 'continuation',
        [ATTR_MCP_RESUME_REPLAYED_EVENTS]: 3,
        [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: true,
        [ATTR_MCP_RESUME_LAST_EVENT_ID]: call.eventIds[0],
        [ATTR_MCP_STREAM_RESUMED_FROM_ID]: call.eventIds[0]!.slice(0, call.eventIds[0]!.lastIndexOf('_')),
      });
    }
    expect(new Set(resumes.map((r) => a(r, ATTR_MCP_STREAM_ID))).size).toBe(3);
  });

  it('sdk-error-resume: the replay after the error event is empty and the terminal had been delivered', async () => {
    const { server, capture } = await instrumentedServer();
    const c = await connectSdkClient(server.url);
    await expect(c.client.callTool({ name: 'fail' })).rejects.toThrow();
    const resume = await vi.waitFor(() => firstSpan(capture, SPAN_STREAM_RESUME), WAIT);
    await c.close();
    const failed = capture.spans('tools/call fail')[0]!;
    expect(resume.attributes).toMatchObject({
      [ATTR_JSONRPC_REQUEST_ID]: a(failed, ATTR_JSONRPC_REQUEST_ID),
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: true,
      [ATTR_MCP_RESUME_OUTCOME]: 'empty_replay',
      [ATTR_MCP_RESUME_REPLAYED_EVENTS]: 0,
    });
  });

  it('network cut: the replay of an unfinished stream has not seen its terminal', async () => {
    const { server, capture } = await instrumentedServer();
    const c = await connectSdkClient(server.url);
    server.cutNextCallAfter = 2;
    await c.client.callTool({ name: 'stream_progress', arguments: { count: 4, delay: 60 } }, undefined, {
      onprogress: () => {},
    });
    await c.close();
    const resumes = capture.spans(SPAN_STREAM_RESUME);
    expect(resumes).toHaveLength(1);
    expect(a(resumes[0]!, ATTR_MCP_REQUEST_TERMINAL_OBSERVED)).toBe(false);
    expect(['continuation', 'empty_replay']).toContain(a(resumes[0]!, ATTR_MCP_RESUME_OUTCOME));
  });

  it('a cursor the store does not know is cursor_rejected; a store that throws is error', async () => {
    const { server, capture } = await instrumentedServer({ rejectUnknownCursors: true });
    const client = new RawClient(server.url, globalThis.fetch);
    await client.initialize();
    expect((await client.resume('unknown_1')).status).toBe(400);
    const rejected = capture.spans(SPAN_STREAM_RESUME)[0]!;
    expect(rejected.attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: 'cursor_rejected',
      [ATTR_MCP_RESUME_LAST_EVENT_ID]: 'unknown_1',
    });

    const failing = new MemoryEventStore();
    failing.replayEventsAfter = async () => {
      throw new RangeError('store offline');
    };
    instrumentEventStore(failing, { tracerProvider: capture.provider, sessionId: 'session-1' });
    await expect(failing.replayEventsAfter('s_1', { send: async () => {} })).rejects.toThrow('store offline');
    const errored = capture.spans(SPAN_STREAM_RESUME)[1]!;
    expect(errored.attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: 'error',
      [ATTR_ERROR_TYPE]: 'RangeError',
      [ATTR_MCP_SESSION_ID]: 'session-1',
    });
  });
});
