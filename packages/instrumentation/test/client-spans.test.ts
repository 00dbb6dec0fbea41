import { setTimeout as delay } from 'node:timers/promises';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_EVENT_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REATTACH_TRIGGER,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_PREVIOUS_ID,
  ATTR_MCP_STREAM_RESUMED_FROM_ID,
  ATTR_MCP_TERMINAL_DELIVERY,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_OUTCOME,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
  TRACER_SCOPE,
} from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { connectSdkClient } from './helpers/sdk-client.js';
import { sdkServerPerTest } from './helpers/sdk-server.js';
import { PROTOCOL_VERSION, RawClient } from './helpers/raw-client.js';
import { attr as a, capturedFetch, firstSpan, IDLE, ms, WAIT } from './helpers/spans.js';

const server = sdkServerPerTest();

function setup(options: { requestTimeoutMs?: number } = {}) {
  return capturedFetch(options);
}

const byRequest = (spans: ReadableSpan[], id: string) => spans.filter((s) => a(s, ATTR_JSONRPC_REQUEST_ID) === id);

function expectOneTrace(spans: ReadableSpan[], root: ReadableSpan): void {
  for (const span of spans) {
    expect(span.spanContext().traceId).toBe(root.spanContext().traceId);
    if (span !== root) expect(span.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
  }
}

describe('instrumentFetch with the SDK v1 client on the real SDK server', () => {
  it('healthy: a request span per request, one live terminal each, no reattach or resume', async () => {
    const s = await server();
    const { capture, fetch } = setup();
    const c = await connectSdkClient(s.url, fetch);
    await c.client.callTool({ name: 'stream_progress', arguments: { count: 3 } }, undefined, { onprogress: () => {} });
    await c.close();

    const call = capture.spans('tools/call stream_progress');
    expect(call).toHaveLength(1);
    const span = call[0]!;
    const sessionId = c.transport.sessionId;
    expect(span.kind).toBe(SpanKind.CLIENT);
    expect(span.instrumentationScope.name).toBe(TRACER_SCOPE);
    expect(span.attributes).toMatchObject({
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_GEN_AI_TOOL_NAME]: 'stream_progress',
      [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
      [ATTR_MCP_SESSION_ID]: sessionId,
      [ATTR_MCP_PROTOCOL_VERSION]: PROTOCOL_VERSION,
      [ATTR_SERVER_ADDRESS]: '127.0.0.1',
      [ATTR_SERVER_PORT]: Number(new URL(s.url).port),
    });
    expect(a(span, ATTR_ERROR_TYPE)).toBeUndefined();

    const init = capture.spans('initialize')[0]!;
    expect(a(init, ATTR_MCP_SESSION_ID)).toBe(sessionId);
    expect(a(init, ATTR_MCP_PROTOCOL_VERSION)).toBe(PROTOCOL_VERSION);

    const terminals = capture.spans(SPAN_REQUEST_TERMINAL);
    expect(terminals.map((t) => a(t, ATTR_MCP_METHOD_NAME)).sort()).toEqual(['initialize', 'tools/call']);
    const terminal = byRequest(terminals, String(a(span, ATTR_JSONRPC_REQUEST_ID)))[0]!;
    expect(terminal.kind).toBe(SpanKind.INTERNAL);
    expect(terminal.attributes).toMatchObject({
      [ATTR_MCP_TERMINAL_OUTCOME]: 'result',
      [ATTR_MCP_TERMINAL_DUPLICATE]: false,
      [ATTR_MCP_TERMINAL_DELIVERY]: 'live',
      [ATTR_MCP_SESSION_ID]: sessionId,
    });
    expect(a(terminal, ATTR_MCP_EVENT_ID)).toEqual(expect.any(String));
    expect(a(terminal, ATTR_MCP_STREAM_ID)).toMatch(/^[0-9a-f]{12}-\d+$/);
    expectOneTrace([span, terminal], span);
    expect(capture.spans(SPAN_STREAM_RESUME)).toHaveLength(0);
    expect(capture.spans(SPAN_SESSION_REATTACH)).toHaveLength(0);
    expect(fetch.stats()).toEqual(IDLE);
  });

  it('sdk-error-resume: after the JSON-RPC error the SDK resumes from the error event; the resume span says the terminal was seen', async () => {
    const s = await server();
    const { capture, fetch } = setup();
    const c = await connectSdkClient(s.url, fetch);
    await expect(c.client.callTool({ name: 'fail' })).rejects.toThrow(/fail/);
    // The SDK server replays nothing after the error event and holds the stream open: no verdict
    // while it is open and silent; the client's close ends it.
    await vi.waitFor(() => expect(fetch.stats().openResumes, 'the resumed stream').toBe(1), WAIT);
    // Real time with the stream open and silent: silence alone must give no verdict.
    await delay(300);
    expect(capture.spans(SPAN_STREAM_RESUME)).toEqual([]);
    await c.close();
    const resume = await vi.waitFor(() => firstSpan(capture, SPAN_STREAM_RESUME), WAIT);

    const request = capture.spans('tools/call fail')[0]!;
    const id = String(a(request, ATTR_JSONRPC_REQUEST_ID));
    expect(request.attributes).toMatchObject({
      [ATTR_ERROR_TYPE]: '-32603',
      [ATTR_RPC_RESPONSE_STATUS_CODE]: '-32603',
    });
    const terminal = byRequest(capture.spans(SPAN_REQUEST_TERMINAL), id);
    expect(terminal).toHaveLength(1);
    expect(terminal[0]!.attributes).toMatchObject({
      [ATTR_MCP_TERMINAL_OUTCOME]: 'error',
      [ATTR_RPC_RESPONSE_STATUS_CODE]: '-32603',
    });

    expect(resume.kind).toBe(SpanKind.CLIENT);
    expect(resume.attributes).toMatchObject({
      [ATTR_JSONRPC_REQUEST_ID]: id,
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: true,
      [ATTR_MCP_RESUME_LAST_EVENT_ID]: a(terminal[0]!, ATTR_MCP_EVENT_ID),
      [ATTR_MCP_STREAM_RESUMED_FROM_ID]: a(terminal[0]!, ATTR_MCP_STREAM_ID),
      [ATTR_HTTP_REQUEST_METHOD]: 'GET',
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
      [ATTR_MCP_RESUME_OUTCOME]: 'error',
      [ATTR_MCP_RESUME_EVIDENCE]: 'body_end',
      [ATTR_ERROR_TYPE]: 'aborted',
      [ATTR_MCP_STREAM_KIND]: 'request',
      [ATTR_MCP_RESUME_REPLAYED_EVENTS]: 0,
      [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: false,
      [ATTR_MCP_SESSION_ID]: c.transport.sessionId,
    });
    const reattach = capture.spans(SPAN_SESSION_REATTACH).find((r) => a(r, ATTR_JSONRPC_REQUEST_ID) === id)!;
    expect(reattach.attributes).toMatchObject({
      [ATTR_MCP_REATTACH_TRIGGER]: 'stream_closed',
      [ATTR_MCP_STREAM_PREVIOUS_ID]: a(terminal[0]!, ATTR_MCP_STREAM_ID),
      [ATTR_MCP_REATTACH_ACCEPTED]: true,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
      [ATTR_MCP_STREAM_ID]: a(resume, ATTR_MCP_STREAM_ID),
    });
    expectOneTrace([request, terminal[0]!, resume, reattach], request);
  });

  it('network-cut: one resume that continues the stream, the result arrives once, on the resumed stream', async () => {
    const s = await server();
    const { capture, fetch } = setup();
    const c = await connectSdkClient(s.url, fetch);
    s.cutNextCallAfter = 2;
    const result = await c.client.callTool({ name: 'stream_progress', arguments: { count: 4, delay: 60 } }, undefined, {
      onprogress: () => {},
    });
    expect(result.content).toEqual([{ type: 'text', text: 'streamed 4' }]);
    const resume = await vi.waitFor(() => firstSpan(capture, SPAN_STREAM_RESUME), WAIT);
    await c.close();

    const request = capture.spans('tools/call stream_progress')[0]!;
    const id = String(a(request, ATTR_JSONRPC_REQUEST_ID));
    expect(capture.spans(SPAN_STREAM_RESUME)).toHaveLength(1);
    expect(resume.attributes).toMatchObject({
      [ATTR_JSONRPC_REQUEST_ID]: id,
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
      [ATTR_MCP_RESUME_OUTCOME]: 'continuation',
      [ATTR_MCP_RESUME_EVIDENCE]: 'message',
      [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: true,
    });
    expect(a(resume, ATTR_MCP_RESUME_REPLAYED_EVENTS)).toBeGreaterThanOrEqual(1);
    const terminals = byRequest(capture.spans(SPAN_REQUEST_TERMINAL), id);
    expect(terminals).toHaveLength(1);
    expect(terminals[0]!.attributes).toMatchObject({
      [ATTR_MCP_TERMINAL_DUPLICATE]: false,
      [ATTR_MCP_TERMINAL_DELIVERY]: 'replay',
      [ATTR_MCP_STREAM_ID]: a(resume, ATTR_MCP_STREAM_ID),
    });
    const reattach = capture.spans(SPAN_SESSION_REATTACH).find((r) => a(r, ATTR_JSONRPC_REQUEST_ID) === id)!;
    expect(a(reattach, ATTR_MCP_REATTACH_TRIGGER)).toBe('stream_error');
    expect(a(request, ATTR_ERROR_TYPE)).toBeUndefined();
    expectOneTrace([request, resume, reattach, terminals[0]!], request);
  });

  it('seed-loop: a client that resumes a finished stream gets the result again on every new stream', async () => {
    const s = await server({ closeReplays: true });
    const { capture, fetch } = setup();
    const client = new RawClient(s.url, fetch);
    await client.initialize();
    const call = await client.callTool('stream_progress', { count: 2 });
    const cursor = call.eventIds[0]!;
    for (let i = 0; i < 3; i++) {
      const replay = await client.resume(cursor);
      expect(replay.status).toBe(200);
    }

    const id = String(call.id);
    const request = capture.spans('tools/call stream_progress')[0]!;
    const terminals = byRequest(capture.spans(SPAN_REQUEST_TERMINAL), id);
    expect(terminals).toHaveLength(4);
    expect(new Set(terminals.map((t) => a(t, ATTR_MCP_STREAM_ID))).size).toBe(4);
    expect(terminals.map((t) => [a(t, ATTR_MCP_TERMINAL_DUPLICATE), a(t, ATTR_MCP_TERMINAL_DELIVERY)])).toEqual([
      [false, 'live'],
      [true, 'replay'],
      [true, 'replay'],
      [true, 'replay'],
    ]);
    const resumes = capture.spans(SPAN_STREAM_RESUME);
    expect(resumes).toHaveLength(3);
    for (const resume of resumes) {
      expect(resume.attributes).toMatchObject({
        [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: true,
        [ATTR_MCP_RESUME_OUTCOME]: 'continuation',
        [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: true,
        [ATTR_MCP_RESUME_LAST_EVENT_ID]: cursor,
      });
    }
    expect(new Set(resumes.map((r) => a(r, ATTR_MCP_STREAM_ID))).size).toBe(3);
    const reattaches = capture.spans(SPAN_SESSION_REATTACH);
    expect(reattaches.map((r) => a(r, ATTR_MCP_STREAM_ID)).sort()).toEqual(
      resumes.map((r) => a(r, ATTR_MCP_STREAM_ID)).sort(),
    );
    expectOneTrace([request, ...terminals, ...resumes, ...reattaches], request);
    expect(fetch.stats()).toEqual(IDLE);
  });

  it('server-restart: the buffer is gone but the session is accepted; the resumed stream stays silent, then carries the result', async () => {
    const s = await server();
    const { capture, fetch } = setup();
    const c = await connectSdkClient(s.url, fetch);
    s.cutNextCallAfter = 2;
    s.onCut = () => s.store.clear();
    const result = await c.client.callTool(
      { name: 'stream_progress', arguments: { count: 1, delay: 1_500 } },
      undefined,
      { onprogress: () => {} },
    );
    expect(result.content).toEqual([{ type: 'text', text: 'streamed 1' }]);
    await c.close();
    // Silent for about 1.5 s (longer than any replay window this package had): never an empty replay.
    const resumes = capture.spans(SPAN_STREAM_RESUME);
    expect(
      resumes.map((r) => [
        a(r, ATTR_MCP_RESUME_OUTCOME),
        a(r, ATTR_MCP_RESUME_EVIDENCE),
        a(r, ATTR_MCP_RESUME_REPLAYED_TERMINAL),
      ]),
    ).toEqual([['continuation', 'message', true]]);
    expect(resumes[0]!.attributes).toMatchObject({
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
    });
  });

  it('cursor-evicted: 400 is cursor_rejected, 404 is session_not_found, no HTTP status is error', async () => {
    const s = await server({ rejectUnknownCursors: true });
    const { capture, fetch } = setup();
    const client = new RawClient(s.url, fetch);
    await client.initialize();
    const call = await client.callTool('stream_progress', { count: 1 });
    s.store.clear();
    expect((await client.resume(call.eventIds.at(-1)!)).status).toBe(400);
    s.dropSessions();
    expect((await client.resume(call.eventIds.at(-1)!)).status).toBe(404);
    const offline = new RawClient('http://127.0.0.1:1/mcp', fetch);
    offline.sessionId = client.sessionId;
    await expect(offline.resume('x')).rejects.toThrow();

    const resumes = capture.spans(SPAN_STREAM_RESUME);
    expect(resumes.map((r) => [a(r, ATTR_HTTP_RESPONSE_STATUS_CODE), a(r, ATTR_MCP_RESUME_OUTCOME)])).toEqual([
      [400, 'cursor_rejected'],
      [404, 'session_not_found'],
      [undefined, 'error'],
    ]);
    expect(resumes.map((r) => a(r, ATTR_ERROR_TYPE))).toEqual(['400', '404', 'TypeError']);
    const reattaches = capture.spans(SPAN_SESSION_REATTACH);
    expect(reattaches.map((r) => a(r, ATTR_MCP_REATTACH_ACCEPTED))).toEqual([false, false, false]);
    expect(reattaches.map((r) => a(r, ATTR_MCP_REATTACH_TRIGGER))).toEqual([
      'stream_closed',
      'stream_closed',
      'stream_closed',
    ]);
    expect(fetch.stats()).toEqual(IDLE);
  });

  it('ends a request span that gets no response at requestTimeoutMs, and still parents its late terminal to it', async () => {
    const s = await server();
    const { capture, fetch } = setup({ requestTimeoutMs: 200 });
    const c = await connectSdkClient(s.url, fetch);
    await c.client.callTool({ name: 'stream_progress', arguments: { count: 1, delay: 800 } }, undefined, {
      onprogress: () => {},
    });
    await c.close();
    const request = capture.spans('tools/call stream_progress')[0]!;
    expect(a(request, ATTR_ERROR_TYPE)).toBe('timeout');
    const terminal = byRequest(capture.spans(SPAN_REQUEST_TERMINAL), String(a(request, ATTR_JSONRPC_REQUEST_ID)))[0]!;
    expect(ms(terminal.startTime)).toBeGreaterThanOrEqual(ms(request.endTime));
    expectOneTrace([request, terminal], request);
  });

  it('marks a tool result with isError as error.type tool_error', async () => {
    const s = await server();
    const { capture, fetch } = setup();
    const c = await connectSdkClient(s.url, fetch);
    await c.client.callTool({ name: 'tool_error' });
    await c.close();
    expect(a(capture.spans('tools/call tool_error')[0]!, ATTR_ERROR_TYPE)).toBe('tool_error');
  });
});
