import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { LabControlClient, McpHttpSession, runScenario, startLabServer } from '@resumewatch/lab';
import type { LabServer, ScenarioName, ScenarioSummary } from '@resumewatch/lab';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_TERMINAL_DELIVERY,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_OUTCOME,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { releaseHeldPolls } from '../src/index.js';
import type { InstrumentedFetch } from '../src/index.js';
import { attr as a, capturedFetch, IDLE, ms, WAIT } from './helpers/spans.js';
import type { SpanCapture } from './helpers/spans.js';

let lab: LabServer;
beforeAll(async () => {
  lab = await startLabServer({ retryIntervalMs: 50 });
});
afterAll(async () => {
  await lab.close();
});

interface Run {
  summary: ScenarioSummary;
  capture: SpanCapture;
  fetch: InstrumentedFetch;
  /** Every span of the scenario's main request: its request span and the spans parented to it. */
  story(): { request: ReadableSpan; children: ReadableSpan[] };
}

async function run(
  name: ScenarioName,
  options: { requestTimeoutMs?: number; resultWaitMs?: number } = {},
): Promise<Run> {
  const { capture, fetch } = capturedFetch({ requestTimeoutMs: options.requestTimeoutMs ?? 60_000 });
  const summary = await runScenario(name, {
    serverUrl: lab.url,
    fetch,
    maxReconnects: 10,
    resultWaitMs: options.resultWaitMs ?? 0,
  });
  // Every scenario closes its session: the last resumed stream ends, and with it its resume span.
  await vi.waitFor(
    () => expect([fetch.stats().openResumes, fetch.stats().pendingHttp], 'the last resume span').toEqual([0, 0]),
    WAIT,
  );
  const story = () => {
    const id = String(summary.details.requestId);
    const request = capture
      .spans()
      .find(
        (s) =>
          s.attributes[ATTR_MCP_METHOD_NAME] === 'tools/call' &&
          s.attributes[ATTR_JSONRPC_REQUEST_ID] === id &&
          s.name.startsWith('tools/call'),
      )!;
    expect(request).toBeDefined();
    const children = capture.spans().filter((s) => s.parentSpanContext?.spanId === request.spanContext().spanId);
    for (const child of children) expect(child.spanContext().traceId).toBe(request.spanContext().traceId);
    return { request, children };
  };
  return { summary, capture, fetch, story };
}

const named = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);

describe('spans on the lab scenarios (real SDK server, real HTTP)', () => {
  it('healthy: request spans with live terminals, nothing resumed', async () => {
    const { capture, summary, fetch } = await run('healthy');
    expect(named(capture.spans(), SPAN_STREAM_RESUME)).toHaveLength(0);
    expect(named(capture.spans(), SPAN_SESSION_REATTACH)).toHaveLength(0);
    const terminals = named(capture.spans(), SPAN_REQUEST_TERMINAL);
    expect(terminals.length).toBeGreaterThanOrEqual(3);
    for (const t of terminals) {
      expect(t.attributes).toMatchObject({
        [ATTR_MCP_TERMINAL_DUPLICATE]: false,
        [ATTR_MCP_TERMINAL_DELIVERY]: 'live',
      });
    }
    for (const span of capture.spans()) {
      if (a(span, ATTR_MCP_METHOD_NAME) !== 'initialize') expect(a(span, ATTR_MCP_SESSION_ID)).toBe(summary.sessionId);
    }
    expect(fetch.stats()).toEqual(IDLE);
  });

  it('seed-loop: the result again on every new stream, each resume after the terminal was seen, one trace', async () => {
    const { summary, story, fetch } = await run('seed-loop');
    expect(summary.terminalDeliveries).toBeGreaterThanOrEqual(2);
    const { children } = story();
    const terminals = named(children, SPAN_REQUEST_TERMINAL);
    expect(terminals.length).toBe(summary.terminalDeliveries);
    expect(new Set(terminals.map((t) => a(t, ATTR_MCP_STREAM_ID))).size).toBe(terminals.length);
    expect(terminals[0]!.attributes).toMatchObject({
      [ATTR_MCP_TERMINAL_DUPLICATE]: false,
      [ATTR_MCP_TERMINAL_DELIVERY]: 'live',
    });
    for (const t of terminals.slice(1)) {
      expect(t.attributes).toMatchObject({
        [ATTR_MCP_TERMINAL_DUPLICATE]: true,
        [ATTR_MCP_TERMINAL_DELIVERY]: 'replay',
      });
    }
    const resumes = named(children, SPAN_STREAM_RESUME);
    expect(resumes).toHaveLength(summary.reconnects);
    for (const resume of resumes) expect(a(resume, ATTR_MCP_REQUEST_TERMINAL_OBSERVED)).toBe(true);
    const replaying = resumes.filter((r) => a(r, ATTR_MCP_RESUME_REPLAYED_TERMINAL) === true);
    expect(replaying).toHaveLength(summary.terminalDeliveries - 1);
    for (const r of replaying) expect(a(r, ATTR_MCP_RESUME_OUTCOME)).toBe('continuation');
    // Each resume's new stream is the stream its replayed terminal arrived on.
    expect(replaying.map((r) => a(r, ATTR_MCP_STREAM_ID)).sort()).toEqual(
      terminals
        .slice(1)
        .map((t) => a(t, ATTR_MCP_STREAM_ID))
        .sort(),
    );
    const last = resumes.at(-1)!;
    expect(['empty_replay', 'cursor_rejected', 'session_not_found']).toContain(a(last, ATTR_MCP_RESUME_OUTCOME));
    const reattaches = named(children, SPAN_SESSION_REATTACH);
    expect(reattaches.map((r) => a(r, ATTR_MCP_STREAM_ID)).sort()).toEqual(
      resumes.map((r) => a(r, ATTR_MCP_STREAM_ID)).sort(),
    );
    expect(fetch.stats()).toEqual(IDLE);
  });

  it('per-stream-dedup: the same duplicate terminals as the seed loop', async () => {
    const { summary, story } = await run('per-stream-dedup');
    const terminals = named(story().children, SPAN_REQUEST_TERMINAL);
    expect(terminals.length).toBe(summary.terminalDeliveries);
    expect(terminals.filter((t) => a(t, ATTR_MCP_TERMINAL_DUPLICATE) === true)).toHaveLength(
      summary.terminalDeliveries - 1,
    );
  });

  it('network-cut: one resume, a continuation, and no duplicate terminal', async () => {
    const { summary, story } = await run('network-cut');
    const { request, children } = story();
    const resumes = named(children, SPAN_STREAM_RESUME).filter((r) => a(r, ATTR_HTTP_RESPONSE_STATUS_CODE) === 200);
    expect(resumes).toHaveLength(1);
    expect(resumes[0]!.attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: 'continuation',
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
      [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: true,
    });
    const terminals = named(children, SPAN_REQUEST_TERMINAL);
    expect(terminals).toHaveLength(1);
    expect(terminals[0]!.attributes).toMatchObject({
      [ATTR_MCP_TERMINAL_DUPLICATE]: false,
      [ATTR_MCP_TERMINAL_DELIVERY]: 'replay',
    });
    expect(summary.terminalDeliveries).toBe(1);
    expect(request.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('server-restart: the clean empty replay after a priming event is held as a poll; the session delete gives the request up', async () => {
    const { summary, story, fetch } = await run('server-restart');
    expect(summary.resumeStatuses).toEqual([200]);
    // The request never finishes (the restart killed its work); the scenario deletes its session at once.
    expect(story().request.attributes[ATTR_ERROR_TYPE]).toBe('aborted');
    const resumes = named(story().children, SPAN_STREAM_RESUME);
    expect(resumes).toHaveLength(1);
    expect(resumes[0]!.attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: 'error',
      [ATTR_MCP_RESUME_EVIDENCE]: 'request_end',
      [ATTR_ERROR_TYPE]: 'aborted',
      [ATTR_MCP_RESUME_REPLAYED_EVENTS]: 0,
      [ATTR_MCP_STREAM_KIND]: 'request',
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
    });
    expect(named(story().children, SPAN_REQUEST_TERMINAL)).toHaveLength(0);
    expect(fetch.stats()).toMatchObject({ heldPolls: 0, heldPollsEvicted: 0 });
  });

  it('server-restart: the request deadline passes after the poll without the result: empty_replay, evidence deadline', async () => {
    const { summary, story, fetch } = await run('server-restart', { requestTimeoutMs: 1_500, resultWaitMs: 2_500 });
    expect(summary.resumeStatuses).toEqual([200]);
    expect(story().request.attributes[ATTR_ERROR_TYPE]).toBe('timeout');
    const resumes = named(story().children, SPAN_STREAM_RESUME);
    expect(resumes).toHaveLength(1);
    expect(resumes[0]!.attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: 'empty_replay',
      [ATTR_MCP_RESUME_EVIDENCE]: 'deadline',
      [ATTR_MCP_RESUME_REPLAYED_EVENTS]: 0,
      [ATTR_MCP_STREAM_KIND]: 'request',
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
    });
    expect(resumes[0]!.status.code).toBe(SpanStatusCode.UNSET);
    // Its recorded times: it ended when the body did, before the deadline ended the request.
    expect(ms(resumes[0]!.endTime)).toBeLessThan(ms(story().request.endTime));
    expect(fetch.stats()).toMatchObject({ heldPolls: 0, heldPollsEvicted: 0 });
  });

  it('after a restart: each poll of the unfinished request is a poll once the next starts; a cancel gives the last one up', async () => {
    // server-restart's steps, by hand: the restarted server accepts the session and each resume ends
    // clean and empty after its priming event. Two resumes, then notifications/cancelled.
    const { capture, fetch } = capturedFetch({ requestTimeoutMs: 60_000 });
    const session = await McpHttpSession.open(lab.url, fetch, 'held-polls');
    const call = session.toolCall('stream_progress', { count: 100, delay: 50 });
    const control = new LabControlClient(lab.controlUrl);
    let restart: Promise<unknown> | undefined;
    let progress = 0;
    const first = await session.post(call.message, {
      onEvent: (event) => {
        if (
          event.message &&
          'method' in event.message &&
          event.message.method === 'notifications/progress' &&
          ++progress === 2
        )
          restart ??= control.restart();
      },
    });
    await restart;
    const cursor = first.events.filter((event) => event.id !== undefined).at(-1)!.id!;
    const polls = [await session.get(cursor), await session.get(cursor)];
    expect(polls.map((p) => [p.status, p.end])).toEqual([
      [200, 'clean'],
      [200, 'clean'],
    ]);
    expect(fetch.stats()).toMatchObject({ heldPolls: 1 });
    await session.post({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: call.id, reason: 'test' },
    });
    await session.close();
    const id = String(call.id);
    const resumes = named(capture.spans(), SPAN_STREAM_RESUME).filter(
      (r) => r.attributes[ATTR_JSONRPC_REQUEST_ID] === id,
    );
    expect(
      resumes.map((r) => [a(r, ATTR_MCP_RESUME_OUTCOME), a(r, ATTR_MCP_RESUME_EVIDENCE), a(r, ATTR_ERROR_TYPE)]),
    ).toEqual([
      ['poll', 'body_end', undefined],
      ['error', 'request_end', 'cancelled'],
    ]);
    expect(fetch.stats()).toEqual(IDLE);
  });

  it('a poll still held at shutdown is emitted as a poll (releaseHeldPolls), not lost', async () => {
    // SEP-1699: poll_task closes the stream every 400 ms; the client polls once, and stops there.
    const { capture, fetch } = capturedFetch({ requestTimeoutMs: 60_000 });
    const session = await McpHttpSession.open(lab.url, fetch, 'held-at-shutdown');
    const call = session.toolCall('poll_task', { closes: 3, intervalMs: 400 });
    const first = await session.post(call.message);
    const cursor = first.events.filter((event) => event.id !== undefined).at(-1)!.id!;
    const poll = await session.get(cursor);
    expect([poll.status, poll.end, poll.events.filter((e) => e.message !== undefined).length]).toEqual([
      200,
      'clean',
      0,
    ]);
    expect(fetch.stats()).toMatchObject({ heldPolls: 1 });
    const id = String(call.id);
    const resumes = () =>
      named(capture.spans(), SPAN_STREAM_RESUME).filter((r) => r.attributes[ATTR_JSONRPC_REQUEST_ID] === id);
    expect(resumes()).toEqual([]);
    expect(releaseHeldPolls()).toBe(1);
    expect(
      resumes().map((r) => [a(r, ATTR_MCP_RESUME_OUTCOME), a(r, ATTR_MCP_RESUME_EVIDENCE), a(r, ATTR_ERROR_TYPE)]),
    ).toEqual([['poll', 'body_end', undefined]]);
    expect(fetch.stats()).toMatchObject({ heldPolls: 0, heldPollsEvicted: 0 });
    await session.close();
    expect(resumes()).toHaveLength(1);
  });

  it('cursor-evicted: the resume is rejected per its status and the reattach is not accepted', async () => {
    const { summary, story } = await run('cursor-evicted');
    const status = summary.resumeStatuses[0]!;
    const resumes = named(story().children, SPAN_STREAM_RESUME);
    expect(resumes).toHaveLength(1);
    const expected =
      status === 404 ? 'session_not_found' : status === 409 || status === 400 ? 'cursor_rejected' : 'empty_replay';
    expect(resumes[0]!.attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: expected,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: status,
    });
    const reattach = named(story().children, SPAN_SESSION_REATTACH)[0]!;
    expect(a(reattach, ATTR_MCP_REATTACH_ACCEPTED)).toBe(status >= 200 && status < 300);
  });

  it('sdk-error-resume: after the error terminal the SDK resumes, and the resume span says the terminal was seen', async () => {
    const { summary, capture } = await run('sdk-error-resume');
    expect(summary.details.resumedWithErrorEventId).toBe(true);
    const request = capture.spans('tools/call fail')[0]!;
    const children = capture.spans().filter((s) => s.parentSpanContext?.spanId === request.spanContext().spanId);
    const terminal = named(children, SPAN_REQUEST_TERMINAL);
    expect(terminal[0]!.attributes).toMatchObject({
      [ATTR_MCP_TERMINAL_OUTCOME]: 'error',
      [ATTR_MCP_TERMINAL_DUPLICATE]: false,
    });
    const resumes = named(children, SPAN_STREAM_RESUME);
    expect(resumes.length).toBeGreaterThanOrEqual(1);
    for (const resume of resumes) expect(a(resume, ATTR_MCP_REQUEST_TERMINAL_OBSERVED)).toBe(true);
    expect(ms(resumes[0]!.startTime)).toBeGreaterThanOrEqual(ms(terminal[0]!.startTime));
  });
});
