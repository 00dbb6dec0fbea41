import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_TERMINAL_DUPLICATE,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { connectSdkClient } from './helpers/sdk-client.js';
import { sdkServerPerTest } from './helpers/sdk-server.js';
import { RawClient } from './helpers/raw-client.js';
import { attr as a, capturedFetch, firstSpan, IDLE, WAIT } from './helpers/spans.js';

const server = sdkServerPerTest();

describe('guard: true', () => {
  it('refuses a resume of a finished request before it leaves: resume span error, resume_refused, no HTTP status', async () => {
    const s = await server({ closeReplays: true });
    const refused: string[] = [];
    const { capture, fetch } = capturedFetch({ guard: { onResumeRefused: (r) => void refused.push(r.lastEventId) } });
    const client = new RawClient(s.url, fetch);
    await client.initialize();
    const call = await client.callTool('stream_progress', { count: 1 });
    const cursor = call.eventIds.at(-1)!;
    await expect(client.resume(cursor)).rejects.toThrow(/terminal; refusing to resume/);
    expect(refused).toEqual([cursor]);

    const resume = capture.spans(SPAN_STREAM_RESUME)[0]!;
    expect(resume.attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: 'error',
      [ATTR_MCP_GUARD_ACTION]: 'resume_refused',
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: true,
      [ATTR_JSONRPC_REQUEST_ID]: String(call.id),
      [ATTR_ERROR_TYPE]: 'InvalidResumptionError',
    });
    expect(a(resume, ATTR_HTTP_RESPONSE_STATUS_CODE)).toBeUndefined();
    const request = capture.spans('tools/call stream_progress')[0]!;
    expect(resume.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(a(capture.spans(SPAN_SESSION_REATTACH)[0]!, ATTR_MCP_GUARD_ACTION)).toBe('resume_refused');
    expect(fetch.stats()).toEqual(IDLE);
  });

  it('drops a replayed duplicate terminal: the client does not read it, its terminal span says so', async () => {
    const s = await server({ closeReplays: true });
    // Remembering one cursor per session, the observer cannot place a cursor from before the stream's end.
    const { capture, fetch } = capturedFetch({ guard: true, observer: { cursorsPerSession: 1 } });
    const client = new RawClient(s.url, fetch);
    await client.initialize();
    const call = await client.callTool('stream_progress', { count: 2 });
    const replay = await client.resume(call.eventIds[0]!);
    expect(replay.status).toBe(200);
    expect(replay.text).toContain('notifications/progress');
    expect(replay.text).not.toContain('streamed 2');

    const terminals = capture
      .spans(SPAN_REQUEST_TERMINAL)
      .filter((t) => a(t, ATTR_JSONRPC_REQUEST_ID) === String(call.id));
    expect(terminals.map((t) => [a(t, ATTR_MCP_TERMINAL_DUPLICATE), a(t, ATTR_MCP_GUARD_ACTION)])).toEqual([
      [false, undefined],
      [true, 'duplicate_terminal_dropped'],
    ]);
  });

  it('the SDK v1 resume after a JSON-RPC error is refused and recorded', async () => {
    const s = await server();
    const { capture, fetch } = capturedFetch({ guard: true });
    const c = await connectSdkClient(s.url, fetch);
    await expect(c.client.callTool({ name: 'fail' })).rejects.toThrow(/fail/);
    const resume = await vi.waitFor(() => firstSpan(capture, SPAN_STREAM_RESUME), WAIT);
    await c.close();
    expect(resume.attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: 'error',
      [ATTR_MCP_GUARD_ACTION]: 'resume_refused',
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: true,
      [ATTR_JSONRPC_REQUEST_ID]: a(capture.spans('tools/call fail')[0]!, ATTR_JSONRPC_REQUEST_ID),
      [ATTR_ERROR_TYPE]: 'InvalidResumptionError',
    });
  });
});
