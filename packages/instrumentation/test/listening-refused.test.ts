import {
  ATTR_CLIENT_ADDRESS,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_CLIENT_INSTANCE_ID,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_STREAM_RETRY_MS,
  SPAN_LISTENING_REFUSED,
  SPAN_STREAM_RESUME,
  StreamKind,
} from '@resumewatch/semconv';
import { startLabServer } from '@resumewatch/lab';
import { WireObserver } from '@resumewatch/wire';
import { describe, expect, it } from 'vitest';
import { tracerSource } from '../src/instrument-fetch.js';
import { SpanRecorder } from '../src/span-recorder.js';
import { PROTOCOL_VERSION, RawClient } from './helpers/raw-client.js';
import { captureSpans, ms, type SpanCapture } from './helpers/spans.js';
import { SCRIPTED_SESSION, progress, scriptedServerPerFile, sse } from '../../wire/test/helpers/scripted-server.js';

// The listening stream's refusals (issue 39), on a real observer over loopback: a plain GET answered other
// than 2xx, or with an event stream the server ended at once with no message, is one
// mcp.stream.listening_refused span, a stateless server's (no session) too, named by who opened it.

const scripted = scriptedServerPerFile();

function setup(): { fetch: ReturnType<WireObserver['wrap']>; capture: SpanCapture } {
  const capture = captureSpans();
  const observer = new WireObserver();
  observer.addListener(
    new SpanRecorder({ tracer: tracerSource(capture.provider), observer, requestTimeoutMs: 60_000 }),
  );
  return { fetch: observer.wrap(), capture };
}

/** A GET of the listening stream (a stateless server's when `session` is undefined), answered as scripted. */
async function listen(
  fetch: ReturnType<WireObserver['wrap']>,
  answer: { status?: number; chunks?: string[] },
  options: { session?: string; lastEventId?: string } = {},
): Promise<void> {
  // A stateless server names no session in its answers either.
  scripted.server.script.push({ ...answer, headers: options.session ? {} : { 'mcp-session-id': '' } });
  const headers: Record<string, string> = { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  if (options.session) headers['mcp-session-id'] = options.session;
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  await (await fetch(scripted.server.url, { headers })).text();
}

describe('mcp.stream.listening_refused', () => {
  it("a stateless server's GET answered 405: the span names the client (its recorder), no session", async () => {
    const { fetch, capture } = setup();
    await listen(fetch, { status: 405 });
    const [span] = capture.spans(SPAN_LISTENING_REFUSED);
    expect(span?.attributes).toMatchObject({
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 405,
      [ATTR_MCP_STREAM_KIND]: StreamKind.LISTENING,
    });
    expect(span!.attributes[ATTR_MCP_SESSION_ID]).toBeUndefined();
    expect(span!.attributes[ATTR_CLIENT_ADDRESS]).toBeUndefined();
    expect(span!.attributes[ATTR_MCP_CLIENT_INSTANCE_ID]).toMatch(/^[0-9a-f]{12}$/);
  });

  it('a GET answered 200 whose stream ended at once with no message: a refusal, from the GET to the end', async () => {
    const { fetch, capture } = setup();
    await listen(fetch, { chunks: [] });
    await listen(fetch, { chunks: [] }, { session: SCRIPTED_SESSION });
    const spans = capture.spans(SPAN_LISTENING_REFUSED);
    expect(spans.map((s) => s.attributes[ATTR_HTTP_RESPONSE_STATUS_CODE])).toEqual([200, 200]);
    for (const s of spans) expect(ms(s.endTime)).toBeGreaterThanOrEqual(ms(s.startTime));
    // The session's names its session, not a client.
    expect(spans[1]!.attributes[ATTR_MCP_SESSION_ID]).toBe(SCRIPTED_SESSION);
    expect(spans[1]!.attributes[ATTR_MCP_CLIENT_INSTANCE_ID]).toBeUndefined();
  });

  it('a stream that carried a message was offered: no span', async () => {
    const { fetch, capture } = setup();
    await listen(fetch, { chunks: [sse({ id: 'n1', data: progress(1) })] });
    expect(capture.spans(SPAN_LISTENING_REFUSED)).toEqual([]);
  });

  it("says the retry: the stream announced; a stateless server's resume from its priming event is of the listening stream", async () => {
    const { fetch, capture } = setup();
    await listen(fetch, { chunks: [sse({ id: 'priming-1', retry: 300, data: '' })] });
    await listen(fetch, { chunks: [sse({ id: 'priming-2', retry: 300, data: '' })] }, { lastEventId: 'priming-1' });
    const [refused] = capture.spans(SPAN_LISTENING_REFUSED);
    expect(refused?.attributes[ATTR_MCP_STREAM_RETRY_MS]).toBe(300);
    const [resume] = capture.spans(SPAN_STREAM_RESUME);
    expect(resume?.attributes).toMatchObject({
      [ATTR_MCP_STREAM_KIND]: StreamKind.LISTENING,
      [ATTR_MCP_STREAM_RETRY_MS]: 300,
      [ATTR_MCP_CLIENT_INSTANCE_ID]: refused!.attributes[ATTR_MCP_CLIENT_INSTANCE_ID],
    });
  });

  it("a stream the server ended because the client deleted its session (the real SDK's server): no span", async () => {
    const lab = await startLabServer();
    try {
      const { fetch, capture } = setup();
      const client = new RawClient(lab.url, fetch);
      await client.initialize();
      const headers = {
        accept: 'text/event-stream',
        'mcp-protocol-version': PROTOCOL_VERSION,
        'mcp-session-id': client.sessionId!,
      };
      const listening = await fetch(lab.url, { headers });
      expect(listening.status).toBe(200);
      // At once, with no message on it: the server ends the stream because of the DELETE, and only then.
      await fetch(lab.url, { method: 'DELETE', headers });
      expect(await listening.text()).not.toContain('data:');
      expect(capture.spans(SPAN_LISTENING_REFUSED)).toEqual([]);
    } finally {
      await lab.close();
    }
  });
});
