import { createGuardListener } from '@resumewatch/guard';
import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_REQUEST_RECOVERY,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_TERMINAL_DELIVERY,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_OUTCOME,
  ErrorType,
  GuardAction,
  RequestRecovery,
  ResumeEvidence,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
  TerminalDelivery,
  TerminalOutcome,
} from '@resumewatch/semconv';
import { WireObserver } from '@resumewatch/wire';
import type { FetchLike } from '@resumewatch/wire';
import { describe, expect, it, vi } from 'vitest';
import { tracerSource } from '../src/instrument-fetch.js';
import { SpanRecorder } from '../src/span-recorder.js';
import { WAIT, attr as a, captureSpans, firstSpan } from './helpers/spans.js';
import type { SpanCapture } from './helpers/spans.js';
import {
  SCRIPTED_SESSION,
  progress,
  result,
  scriptedServerPerFile,
  sse,
} from '../../wire/test/helpers/scripted-server.js';

// The span recorder (span-recorder.ts) on a real observer over loopback: the spans it makes of the
// wire's events, and the guard's decisions it reads off the request or event, added before the guard.

const scripted = scriptedServerPerFile();
const { call, get } = scripted;

function setup(
  guarded: boolean,
  requestTimeoutMs = 60_000,
): { observer: WireObserver; recorder: SpanRecorder; capture: SpanCapture } {
  const capture = captureSpans();
  const observer = new WireObserver();
  const recorder = new SpanRecorder({ tracer: tracerSource(capture.provider), observer, requestTimeoutMs });
  observer.addListener(recorder);
  if (guarded) observer.addListener(createGuardListener(), { filters: true });
  return { observer, recorder, capture };
}

describe('SpanRecorder', () => {
  it('ends the request span at its terminal and records the terminal', async () => {
    const { observer, capture } = setup(false);
    await call(observer.wrap(), 1, [sse({ id: 'a1', data: progress(1) }), sse({ id: 'a2', data: result(1, 'one') })]);
    expect(capture.spans('tools/call slow')).toHaveLength(1);
    const terminal = capture.spans(SPAN_REQUEST_TERMINAL)[0]!;
    expect(terminal.attributes).toMatchObject({
      [ATTR_JSONRPC_REQUEST_ID]: '1',
      [ATTR_MCP_TERMINAL_OUTCOME]: TerminalOutcome.RESULT,
      [ATTR_MCP_TERMINAL_DUPLICATE]: false,
      [ATTR_MCP_TERMINAL_DELIVERY]: TerminalDelivery.LIVE,
    });
    expect(a(terminal, ATTR_MCP_GUARD_ACTION)).toBeUndefined();
    expect(terminal.parentSpanContext?.spanId).toBe(capture.spans('tools/call slow')[0]!.spanContext().spanId);
  });

  it('records a replayed terminal as a duplicate, with the action of a guard added after it', async () => {
    const { observer, capture } = setup(true);
    const fetch = observer.wrap();
    await call(fetch, 2, [sse({ id: 'b1', data: result(2, 'two') })]);
    await get(fetch, [sse({ id: 'b2', data: result(2, 'two') })]);
    expect(
      capture.spans(SPAN_REQUEST_TERMINAL).map((t) => [a(t, ATTR_MCP_TERMINAL_DUPLICATE), a(t, ATTR_MCP_GUARD_ACTION)]),
    ).toEqual([
      [false, undefined],
      [true, GuardAction.DUPLICATE_TERMINAL_DROPPED],
    ]);
  });

  it('records a refused resume with the action of a guard added after it', async () => {
    const { observer, capture } = setup(true);
    const fetch = observer.wrap();
    await call(fetch, 3, [sse({ id: 'c1', data: progress(1) }), sse({ id: 'c2', data: result(3, 'three') })]);
    await expect(get(fetch, [], 'c1')).rejects.toThrow(/terminal; refusing to resume/);
    const resume = capture.spans(SPAN_STREAM_RESUME)[0]!;
    expect(resume.attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.ERROR,
      [ATTR_MCP_GUARD_ACTION]: GuardAction.RESUME_REFUSED,
      [ATTR_ERROR_TYPE]: 'InvalidResumptionError',
    });
  });

  it('records an empty replay at the end of the resumed body, and the failure the guard reported', async () => {
    for (const guarded of [false, true]) {
      const { observer, recorder, capture } = setup(guarded);
      const fetch = observer.wrap();
      await call(fetch, 4, [sse({ id: 'd1', data: progress(1) })]);
      await get(fetch, [], 'd1');
      const resume = capture.spans(SPAN_STREAM_RESUME)[0]!;
      expect(resume.attributes).toMatchObject({
        [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.EMPTY_REPLAY,
        [ATTR_MCP_RESUME_EVIDENCE]: ResumeEvidence.BODY_END,
        [ATTR_JSONRPC_REQUEST_ID]: '4',
      });
      expect(a(resume, ATTR_MCP_GUARD_ACTION)).toBe(guarded ? GuardAction.RESUMPTION_FAILED_REPORTED : undefined);
      expect(recorder.stats()).toMatchObject({ openResumes: 0, pendingHttp: 0 });
      expect(observer.getSession(SCRIPTED_SESSION)).toBeDefined();
    }
  });
});

/**
 * A request held open by the scripted server after `chunks` (a resumed stream that stays open, as the
 * SDK server keeps one): its body is read as it comes, until `close()` aborts it.
 */
async function openStream(
  fetch: FetchLike,
  init: { method: string; lastEventId?: string; body?: string },
  chunks: string[],
): Promise<{ close(): Promise<void> }> {
  scripted.server.script.push({ chunks, holdOpen: true });
  const controller = new AbortController();
  const headers: Record<string, string> = { 'mcp-session-id': SCRIPTED_SESSION, 'content-type': 'application/json' };
  if (init.lastEventId !== undefined) headers['last-event-id'] = init.lastEventId;
  const response = await fetch(scripted.server.url, {
    method: init.method,
    headers,
    body: init.body,
    signal: controller.signal,
  });
  const reading = (async () => {
    const reader = response.body!.getReader();
    for (;;) if ((await reader.read()).done) return;
  })().catch(() => undefined);
  return {
    close: async () => {
      controller.abort();
      await reading;
    },
  };
}

describe('SpanRecorder: a request that ends without its result after its stream did (issue 31)', () => {
  // Long enough for the resume to leave before it on a loaded machine; each case waits for it once.
  const DEADLINE = 1_500;
  const requestSpan = (capture: SpanCapture, id: number) =>
    capture.spans('tools/call slow').find((s) => a(s, ATTR_JSONRPC_REQUEST_ID) === String(id));
  const ended = (capture: SpanCapture, id: number) => {
    const span = requestSpan(capture, id);
    if (span === undefined) throw new Error(`request ${id} has not ended`);
    return span;
  };

  it('a resume that replayed progress, then nothing until the deadline: partial_replay, and the request says it was resumed', async () => {
    const { observer, capture } = setup(false, DEADLINE);
    const fetch = observer.wrap();
    // The stream ends after the first progress update; the resume replays the next one and stays open.
    await call(fetch, 5, [sse({ id: 'e1', data: progress(1) })]);
    const resumed = await openStream(fetch, { method: 'GET', lastEventId: 'e1' }, [
      sse({ id: 'e2', data: progress(2) }),
    ]);
    try {
      const request = await vi.waitFor(() => ended(capture, 5), WAIT);
      expect(request.attributes).toMatchObject({
        [ATTR_ERROR_TYPE]: ErrorType.TIMEOUT,
        [ATTR_MCP_REQUEST_RECOVERY]: RequestRecovery.RESUMED,
        [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.PARTIAL_REPLAY,
      });
      expect(firstSpan(capture, SPAN_STREAM_RESUME).attributes).toMatchObject({
        [ATTR_JSONRPC_REQUEST_ID]: '5',
        [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.PARTIAL_REPLAY,
        [ATTR_MCP_RESUME_EVIDENCE]: ResumeEvidence.DEADLINE,
      });
    } finally {
      await resumed.close();
    }
  });

  it('cancelled by the client, the resume stays a continuation and the request names no recovery', async () => {
    const { observer, capture } = setup(false, 60_000);
    const fetch = observer.wrap();
    await call(fetch, 6, [sse({ id: 'f1', data: progress(1) })]);
    const resumed = await openStream(fetch, { method: 'GET', lastEventId: 'f1' }, [
      sse({ id: 'f2', data: progress(2) }),
    ]);
    try {
      await vi.waitFor(
        () => expect(observer.getSession(SCRIPTED_SESSION)?.streams.at(-1)?.messageEvents).toBe(1),
        WAIT,
      );
      scripted.server.script.push({ status: 202, chunks: [] });
      const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 6 } };
      await (
        await fetch(scripted.server.url, {
          method: 'POST',
          headers: { 'mcp-session-id': SCRIPTED_SESSION, 'content-type': 'application/json' },
          body: JSON.stringify(cancel),
        })
      ).text();
      const request = await vi.waitFor(() => ended(capture, 6), WAIT);
      expect(a(request, ATTR_ERROR_TYPE)).toBe(ErrorType.CANCELLED);
      expect(a(request, ATTR_MCP_REQUEST_RECOVERY)).toBeUndefined();
      expect(firstSpan(capture, SPAN_STREAM_RESUME).attributes).toMatchObject({
        [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.CONTINUATION,
        [ATTR_MCP_RESUME_EVIDENCE]: ResumeEvidence.MESSAGE,
      });
    } finally {
      await resumed.close();
    }
  });

  it('a stream that ended without the result and without an event id, or with one the client never resumed from', async () => {
    const { observer, capture } = setup(false, DEADLINE);
    const fetch = observer.wrap();
    await call(fetch, 7, [sse({ data: progress(1) })]);
    await call(fetch, 8, [sse({ id: 'h1', data: progress(1) })]);
    await vi.waitFor(() => [ended(capture, 7), ended(capture, 8)], WAIT);
    expect(
      [7, 8].map((id) => [a(ended(capture, id), ATTR_ERROR_TYPE), a(ended(capture, id), ATTR_MCP_REQUEST_RECOVERY)]),
    ).toEqual([
      [ErrorType.TIMEOUT, RequestRecovery.NO_EVENT_ID],
      [ErrorType.TIMEOUT, RequestRecovery.NOT_RESUMED],
    ]);
    expect(capture.spans(SPAN_STREAM_RESUME)).toEqual([]);
  });

  it('a stream that broke before the result with no event id: no cursor exists, the request ends at the break', async () => {
    const { observer, capture } = setup(false, 60_000);
    const fetch = observer.wrap();
    const broken = async (id: number, event: string): Promise<void> => {
      scripted.server.script.push({ chunks: [event], cut: true });
      const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow' } });
      const headers = { 'mcp-session-id': SCRIPTED_SESSION, 'content-type': 'application/json' };
      await (await fetch(scripted.server.url, { method: 'POST', headers, body })).text().catch(() => undefined);
      await vi.waitFor(() => expect(observer.getSession(SCRIPTED_SESSION)?.streams.at(-1)?.ended).toBe('error'), WAIT);
    };
    await broken(13, sse({ data: progress(1) }));
    // Long before its deadline (60 s): the break is its end, and nothing can resume it.
    expect(ended(capture, 13).attributes).toMatchObject({
      [ATTR_ERROR_TYPE]: ErrorType.STREAM_BROKEN,
      [ATTR_MCP_REQUEST_RECOVERY]: RequestRecovery.NO_EVENT_ID,
    });
    // With an event id the client may still resume: the request goes on.
    await broken(14, sse({ id: 'n1', data: progress(1) }));
    expect(requestSpan(capture, 14)).toBeUndefined();
  });

  it("at a proxy, requests kept open after their client's connection dropped are capped: the oldest is given up", () => {
    const capture = captureSpans();
    // As the gateway runs it (gateway/src/observation.ts).
    const observer = new WireObserver({
      releaseOnTransportClose: false,
      sessionlessApart: true,
      confirmDelivery: true,
    });
    const recorder = new SpanRecorder({
      tracer: tracerSource(capture.provider),
      observer,
      requestTimeoutMs: 60_000,
      maxClientDropped: 2,
    });
    observer.addListener(recorder);
    const dropped = (id: number): void => {
      const request = observer.proxyRequest(
        scripted.server.url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'mcp-session-id': SCRIPTED_SESSION },
          // Each its own work: the same arguments again would be a re-issue, which gives the earlier one up.
          body: JSON.stringify({
            jsonrpc: '2.0',
            id,
            method: 'tools/call',
            params: { name: 'slow', arguments: { id } },
          }),
        },
        'client-a',
      );
      const body = observer.proxyResponse(request, 200, { 'content-type': 'text/event-stream' }, true)!;
      body.chunk(Buffer.from(sse({ id: `p${id}`, data: progress(1) })), { enqueue: () => undefined });
      // The client's connection is gone: the proxy aborts the exchange.
      body.fail(Object.assign(new Error('client_gone'), { name: 'AbortError' }));
    };
    for (const id of [21, 22]) dropped(id);
    // Both still open: the client may resume, cancel or delete its session.
    expect(recorder.stats().openRequests).toBe(2);
    dropped(23);
    // The third pushes the oldest out: it ends `aborted`, naming no recovery (no verdict).
    expect(recorder.stats().openRequests).toBe(2);
    expect(ended(capture, 21).attributes).toMatchObject({ [ATTR_ERROR_TYPE]: ErrorType.ABORTED });
    expect(a(ended(capture, 21), ATTR_MCP_REQUEST_RECOVERY)).toBeUndefined();
    expect(requestSpan(capture, 22)).toBeUndefined();
  });

  it("a held poll given up with the session's DELETE: the request span names it as its last resume's outcome", async () => {
    const { observer, capture } = setup(false, 60_000);
    const fetch = observer.wrap();
    await call(fetch, 11, [sse({ id: 'k1', data: progress(1) })]);
    // A priming event and a clean end: a poll, held until the request's fate decides it.
    await get(fetch, [sse({ id: 'k2', data: '' })], 'k1');
    expect(capture.spans(SPAN_STREAM_RESUME)).toEqual([]);
    scripted.server.script.push({ status: 200, chunks: [] });
    await (
      await fetch(scripted.server.url, { method: 'DELETE', headers: { 'mcp-session-id': SCRIPTED_SESSION } })
    ).text();
    const request = await vi.waitFor(() => ended(capture, 11), WAIT);
    expect(request.attributes).toMatchObject({
      [ATTR_ERROR_TYPE]: ErrorType.ABORTED,
      [ATTR_MCP_REQUEST_RECOVERY]: RequestRecovery.RESUMED,
      [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.ERROR,
    });
    expect(firstSpan(capture, SPAN_STREAM_RESUME).attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.ERROR,
      [ATTR_MCP_RESUME_EVIDENCE]: ResumeEvidence.REQUEST_END,
    });
  });

  it('a resume not answered by the deadline brought nothing by then: an empty replay, as the request span says', async () => {
    const { observer, capture } = setup(false, DEADLINE);
    // The resume's response comes only once the request's deadline has passed.
    const fetch = observer.wrap(async (input, init) => {
      if (new Headers(init?.headers).has('last-event-id')) await vi.waitFor(() => ended(capture, 12), WAIT);
      return globalThis.fetch(input, init);
    });
    await call(fetch, 12, [sse({ id: 'l1', data: progress(1) })]);
    // Answered with a priming event and a clean end: a poll, whose request's deadline has passed.
    await get(fetch, [sse({ id: 'l2', data: '' })], 'l1');
    // One resume span, emitted at the deadline (the detector's ambiguous_empty_replay tells the loss), and
    // none again for its late answer.
    expect(
      capture.spans(SPAN_STREAM_RESUME).map((r) => [a(r, ATTR_MCP_RESUME_OUTCOME), a(r, ATTR_MCP_RESUME_EVIDENCE)]),
    ).toEqual([[ResumeOutcome.EMPTY_REPLAY, ResumeEvidence.DEADLINE]]);
    expect(ended(capture, 12).attributes).toMatchObject({
      [ATTR_ERROR_TYPE]: ErrorType.TIMEOUT,
      [ATTR_MCP_REQUEST_RECOVERY]: RequestRecovery.RESUMED,
      [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.EMPTY_REPLAY,
    });
  });

  it('a request whose stream is still open at its deadline (a slow server) names no recovery: nothing ended without it', async () => {
    const { observer, capture } = setup(false, DEADLINE);
    const fetch = observer.wrap();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'slow' } });
    const open = await openStream(fetch, { method: 'POST', body }, [sse({ id: 'i1', data: progress(1) })]);
    try {
      const request = await vi.waitFor(() => ended(capture, 9), WAIT);
      expect(a(request, ATTR_ERROR_TYPE)).toBe(ErrorType.TIMEOUT);
      expect(a(request, ATTR_MCP_REQUEST_RECOVERY)).toBeUndefined();
    } finally {
      await open.close();
    }
  });

  it('a continuation of a request whose span already ended (a proxy whose client came back) is decided at the request deadline', async () => {
    const { observer, capture } = setup(false, DEADLINE);
    const fetch = observer.wrap();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'slow' } });
    // The first stream is closed by the client (at a proxy: its client went away): the request span ends aborted.
    const first = await openStream(fetch, { method: 'POST', body }, [sse({ id: 'j1', data: progress(1) })]);
    await vi.waitFor(() => expect(observer.getSession(SCRIPTED_SESSION)?.streams.at(-1)?.messageEvents).toBe(1), WAIT);
    await first.close();
    expect(a(ended(capture, 10), ATTR_ERROR_TYPE)).toBe(ErrorType.ABORTED);
    const resumed = await openStream(fetch, { method: 'GET', lastEventId: 'j1' }, [
      sse({ id: 'j2', data: progress(2) }),
    ]);
    try {
      const resume = await vi.waitFor(() => firstSpan(capture, SPAN_STREAM_RESUME), WAIT);
      expect(resume.attributes).toMatchObject({
        [ATTR_JSONRPC_REQUEST_ID]: '10',
        [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.PARTIAL_REPLAY,
        [ATTR_MCP_RESUME_EVIDENCE]: ResumeEvidence.DEADLINE,
      });
    } finally {
      await resumed.close();
    }
  });
});
