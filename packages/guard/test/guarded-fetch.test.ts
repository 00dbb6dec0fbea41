import { setTimeout as delay } from 'node:timers/promises';
import { inspect } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { InvalidResumptionError, ResumeDecision, guardedFetch } from '../src/index.js';
import type { GuardedFetch } from '../src/index.js';
import type { WireObserverOptions } from '@resumewatch/wire';
import { recordGuard } from './helpers/record-guard.js';
import type { GuardRecord } from './helpers/record-guard.js';
import { post, resumeInit } from '../../wire/test/helpers/requests.js';
import { WAIT } from './helpers/wait.js';
import { sseServerPerFile } from '../../wire/test/helpers/sse-server.js';

const sse = sseServerPerFile();

let nextId = 1;
async function setup(
  extra = {},
  wire?: WireObserverOptions,
): Promise<{ fetch: GuardedFetch; seen: GuardRecord; sessionId: string }> {
  const seen = recordGuard(extra);
  const fetch = guardedFetch({ ...seen.options, wire });
  const init = await fetch(sse.server.url, post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }));
  await init.text();
  return { fetch, seen, sessionId: init.headers.get('mcp-session-id')! };
}

async function call(fetch: GuardedFetch, sessionId: string): Promise<{ id: number; text: string }> {
  const id = nextId++;
  const response = await fetch(
    sse.server.url,
    post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 't' } }, sessionId),
  );
  return { id, text: await response.text() };
}

describe('guardedFetch', () => {
  it('refuses locally a resume of a request whose terminal event was seen', async () => {
    const { fetch, seen, sessionId } = await setup();
    const { id, text } = await call(fetch, sessionId);
    expect(text).toBe(sse.server.written.get(`POST ${id}`));

    const error = await fetch(sse.server.url, resumeInit(sessionId, `s${id}-2`)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResumptionError);
    expect((error as InvalidResumptionError).requestId).toBe(String(id));
    expect((error as InvalidResumptionError).sessionId).toBe(sessionId);
    // The session id (close to a credential) stays out of the message and of anything that prints the error.
    expect((error as Error).message).toBe(
      `request "${id}" is terminal; refusing to resume via Last-Event-ID. Open a new request with idempotency protection instead.`,
    );
    expect(inspect(error)).not.toContain(sessionId);
    expect(JSON.stringify(error)).not.toContain(sessionId);
    expect(sse.server.resumes).toEqual([]);
    expect(seen.refused.map((r) => [r.requestIds, r.lastEventId])).toEqual([[[String(id)], `s${id}-2`]]);
  });

  it('still refuses a stale mid-stream cursor after the finished request left the request map', async () => {
    sse.server.progress = 2;
    // One stream remembered per session: the finished call's stream is placed by the cursor memory only.
    const { fetch, seen, sessionId } = await setup({}, { streamsPerSession: 1 });
    const { id } = await call(fetch, sessionId);
    await (
      await fetch(sse.server.url, post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sessionId))
    ).text();
    const other = await call(fetch, sessionId);
    expect(fetch.observer.stats()).toMatchObject({ sessions: 1, requests: 0, releasedRequests: 3 });
    expect(fetch.observer.getSession(sessionId)!.streams.map((s) => s.requests.map((r) => r.id))).toEqual([
      [String(other.id)],
    ]);
    const error = await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResumptionError);
    expect((error as InvalidResumptionError).requestId).toBe(String(id));
    expect(sse.server.resumes).toEqual([]);
    expect(seen.refused.map((r) => r.lastEventId)).toEqual([`s${id}-1`]);
  });

  it('forgets a DELETEd session: the guard and the observer keep nothing of it', async () => {
    const seen = recordGuard({});
    const fetch = guardedFetch(
      (input, init) =>
        init?.method === 'DELETE'
          ? Promise.resolve(new Response(null, { status: 200 }))
          : globalThis.fetch(input, init),
      seen.options,
    );
    const init = await fetch(sse.server.url, post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }));
    await init.text();
    const sessionId = init.headers.get('mcp-session-id')!;
    const { id } = await call(fetch, sessionId);
    // The call is finished, and the initialize: sent before a session existed, it is keyed by no
    // session, one key for every initialize with id 0 (a later one replaces it).
    expect(fetch.observer.getRequest(sessionId, id)?.finished).toBe(true);
    expect(fetch.observer.getRequest(undefined, 0)?.finished).toBe(true);
    await fetch(sse.server.url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId } });
    expect(fetch.observer.stats()).toMatchObject({ sessions: 0, requests: 0, releasedSessions: 1 });
    expect(fetch.observer.getRequest(sessionId, id)).toBeUndefined();
    expect(fetch.observer.getRequest(undefined, 0)?.finished).toBe(true);
    expect(fetch.listener.stats()).toEqual({
      silentResumes: 0,
      unsettledRequests: 0,
      brokenRequests: 0,
      tasks: 0,
      taskHandles: 0,
      refusedSessions: 0,
      refusedListeningStreams: 0,
      deadSessionAnswers: 0,
      listeningRefusalAnswers: 0,
      evictions: 0,
    });
  });

  it('refuses a resume after a JSON-RPC error response too', async () => {
    const { fetch, sessionId } = await setup();
    const response = await fetch(
      sse.server.url,
      post({ jsonrpc: '2.0', id: 'e1', method: 'tools/call', params: {} }, sessionId),
    );
    await response.text();
    await expect(fetch(sse.server.url, resumeInit(sessionId, 'se1-2'))).rejects.toBeInstanceOf(InvalidResumptionError);
    expect(sse.server.resumes).toEqual([]);
  });

  it('refuses a cursor from the middle of a finished stream, sending nothing', async () => {
    sse.server.progress = 2;
    const { fetch, sessionId } = await setup();
    const { id } = await call(fetch, sessionId);
    await expect(fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`))).rejects.toBeInstanceOf(
      InvalidResumptionError,
    );
    expect(sse.server.resumes).toEqual([]);
  });

  it('removes a replayed terminal event the client already had, and then refuses the same cursor locally', async () => {
    sse.server.progress = 2;
    // Remembering one cursor per session, the observer forgets s<id>-1 once s<id>-3 arrives.
    const { fetch, seen, sessionId } = await setup({}, { cursorsPerSession: 1 });
    const { id } = await call(fetch, sessionId);

    // A cursor the guard cannot attribute before the replay: the request reaches the server, and
    // the replayed result is removed.
    const replay = await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`));
    const replayed = await replay.text();
    const written = sse.server.written.get(`GET s${id}-1`)!;
    expect(written).toContain('"result"');
    expect(replayed).toBe(written.slice(0, written.indexOf(`id: s${id}-3`)));
    expect(replayed).toContain('"progress":2');
    expect(seen.dropped.map((d) => [d.requestId, d.eventId, d.outcome])).toEqual([[String(id), `s${id}-3`, 'result']]);

    // The client still holds s<id>-2 (the last event it was given): resuming from it is refused.
    await expect(fetch(sse.server.url, resumeInit(sessionId, `s${id}-2`))).rejects.toBeInstanceOf(
      InvalidResumptionError,
    );
    expect(sse.server.resumes).toEqual([`s${id}-1`]);
  });

  it('passes a valid resumption through byte for byte and reports it as a continuation', async () => {
    const { fetch, seen, sessionId } = await setup();
    sse.server.cutNextStream = true;
    const id = nextId++;
    const cut = await fetch(sse.server.url, post({ jsonrpc: '2.0', id, method: 'tools/call', params: {} }, sessionId));
    await expect(cut.text()).rejects.toThrow();

    const resumed = await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`));
    const text = await resumed.text();
    expect(text).toBe(sse.server.written.get(`GET s${id}-1`));
    expect(text).toContain('"result"');
    expect(seen.dropped).toEqual([]);
    expect(seen.failed).toEqual([]);
    expect(seen.decisions.map((d) => [d.requestId, d.decision])).toEqual([
      [String(id), ResumeDecision.CONTINUATION_VALID],
    ]);
    // Now it is finished: a further resume is refused.
    await expect(fetch(sse.server.url, resumeInit(sessionId, `s${id}-2`))).rejects.toBeInstanceOf(
      InvalidResumptionError,
    );
  });

  async function cutCall(fetch: GuardedFetch, sessionId: string): Promise<number> {
    sse.server.cutNextStream = true;
    const id = nextId++;
    const cut = await fetch(sse.server.url, post({ jsonrpc: '2.0', id, method: 'tools/call', params: {} }, sessionId));
    await expect(cut.text()).rejects.toThrow();
    return id;
  }

  /** Resumes request `id` into a stream the server holds open and silent; `end()` aborts it from the client and waits for the read. */
  async function silentResume(fetch: GuardedFetch, sessionId: string, id: number): Promise<{ end(): Promise<void> }> {
    sse.server.resumeMode = 'empty-open';
    const controller = new AbortController();
    const resumed = await fetch(sse.server.url, { ...resumeInit(sessionId, `s${id}-1`), signal: controller.signal });
    const reading = resumed.text().catch(() => '');
    return {
      end: async () => {
        controller.abort();
        await reading;
      },
    };
  }

  it('reports an empty replay whose body ended clean on an unfinished request as a failed resumption, with its evidence', async () => {
    const { fetch, seen, sessionId } = await setup();
    const id = await cutCall(fetch, sessionId);
    sse.server.resumeMode = 'empty-close';
    await (await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`))).text();
    expect(
      seen.failed.map((f) => [f.sessionId, f.requestId, f.status, f.outcome, f.evidence, f.decision, f.action]),
    ).toEqual([
      [
        sessionId,
        String(id),
        200,
        'empty_replay',
        'body_end',
        ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY,
        'resumption_failed_reported',
      ],
    ]);
  });

  it('takes no verdict on a resumed stream that stays open and silent; ended by the client, it is an error, not a failure', async () => {
    const { fetch, seen, sessionId } = await setup();
    const id = await cutCall(fetch, sessionId);
    const silent = await silentResume(fetch, sessionId, id);
    // Real time, longer than the replay window this guard had (1 s): silence alone decides nothing.
    await delay(1200);
    expect(seen.decisions).toEqual([]);
    expect(fetch.listener.stats().silentResumes).toBe(1);
    await silent.end();
    expect(seen.decisions.map((d) => [d.requestId, d.outcome, d.evidence, d.decision])).toEqual([
      [String(id), 'error', 'body_end', ResumeDecision.RESUME_ERROR_NO_ACTION],
    ]);
    expect(seen.failed).toEqual([]);
    expect(fetch.listener.stats().silentResumes).toBe(0);
  });

  it('reports a resumed stream still silent at the request deadline as an empty replay (evidence deadline)', async () => {
    const { fetch, seen, sessionId } = await setup({ requestDeadlineMs: 600 });
    const id = await cutCall(fetch, sessionId);
    const silent = await silentResume(fetch, sessionId, id);
    await vi.waitFor(() => expect(seen.failed).not.toHaveLength(0), WAIT);
    await silent.end();
    expect(seen.failed.map((f) => [f.requestId, f.outcome, f.evidence, f.decision])).toEqual([
      [String(id), 'empty_replay', 'deadline', ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY],
    ]);
  });

  it('caps the silent resumes at maxRequests: the oldest is dropped and counted, and its deadline no longer reports it', async () => {
    const { fetch, seen, sessionId } = await setup({ maxRequests: 1, requestDeadlineMs: 1500 });
    const first = await cutCall(fetch, sessionId);
    const second = await cutCall(fetch, sessionId);
    sse.server.resumeMode = 'empty-open';
    const controller = new AbortController();
    const readings: Promise<string>[] = [];
    for (const id of [first, second]) {
      const resumed = await fetch(sse.server.url, { ...resumeInit(sessionId, `s${id}-1`), signal: controller.signal });
      readings.push(resumed.text().catch(() => ''));
    }
    expect(fetch.listener.stats()).toEqual({
      silentResumes: 1,
      unsettledRequests: 0,
      brokenRequests: 0,
      tasks: 0,
      taskHandles: 0,
      refusedSessions: 0,
      refusedListeningStreams: 0,
      deadSessionAnswers: 0,
      listeningRefusalAnswers: 0,
      evictions: 1,
    });
    await vi.waitFor(() => expect(seen.failed).not.toHaveLength(0), WAIT);
    // Real time past the first request's deadline too (it started earlier): only the kept resume was judged.
    await delay(200);
    controller.abort();
    await Promise.all(readings);
    expect(seen.failed.map((f) => [f.requestId, f.outcome, f.evidence])).toEqual([
      [String(second), 'empty_replay', 'deadline'],
    ]);
  });

  it('reports a 404 on an unfinished request at once', async () => {
    const { fetch, seen, sessionId } = await setup();
    const id = await cutCall(fetch, sessionId);
    sse.server.resumeMode = { status: 404 };
    const resumed = await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`));
    await resumed.text();
    expect(seen.failed.map((f) => [f.requestId, f.status, f.outcome, f.evidence, f.decision])).toEqual([
      [String(id), 404, 'session_not_found', 'status', ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH],
    ]);
  });

  it.each([400, 409])('reports a %i only once the next resume of the request is rejected too', async (status) => {
    const { fetch, seen, sessionId } = await setup();
    const id = await cutCall(fetch, sessionId);
    sse.server.resumeMode = { status };
    await (await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`))).text();
    expect(seen.decisions.map((d) => [d.requestId, d.outcome, d.decision])).toEqual([
      [String(id), 'cursor_rejected', ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH],
    ]);
    expect(seen.failed).toEqual([]);
    expect(fetch.listener.stats().unsettledRequests).toBe(1);
    await (await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`))).text();
    expect(seen.failed.map((f) => [f.requestId, f.status, f.outcome, f.evidence])).toEqual([
      [String(id), status, 'cursor_rejected', 'status'],
    ]);
    expect(fetch.listener.stats().unsettledRequests).toBe(0);
  });

  it('takes a 409 back when the retried resume continues (the SDK server still held the dropped connection)', async () => {
    const { fetch, seen, sessionId } = await setup();
    const id = await cutCall(fetch, sessionId);
    sse.server.resumeMode = { status: 409 };
    await (await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`))).text();
    sse.server.resumeMode = 'replay';
    const text = await (await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`))).text();
    expect(text).toContain('"result"');
    expect(seen.decisions.map((d) => d.decision)).toEqual([
      ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH,
      ResumeDecision.CONTINUATION_VALID,
    ]);
    expect(seen.failed).toEqual([]);
    expect(fetch.listener.stats().unsettledRequests).toBe(0);
  });

  it('reports a request once when a held 409 is followed by an accepted resume that stays silent to the deadline', async () => {
    const { fetch, seen, sessionId } = await setup({ requestDeadlineMs: 800 });
    const id = await cutCall(fetch, sessionId);
    sse.server.resumeMode = { status: 409 };
    await (await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`))).text();
    const silent = await silentResume(fetch, sessionId, id);
    await vi.waitFor(() => expect(seen.failed).not.toHaveLength(0), WAIT);
    // Real time after the report, for a second report to show if the request were reported twice.
    await delay(200);
    await silent.end();
    expect(seen.failed.map((f) => [f.requestId, f.status, f.outcome, f.evidence])).toEqual([
      [String(id), 200, 'empty_replay', 'deadline'],
    ]);
  });

  it('confirms a 409 when the client cancels the request without its terminal (evidence request_end)', async () => {
    const { fetch, seen, sessionId } = await setup();
    const id = await cutCall(fetch, sessionId);
    sse.server.resumeMode = { status: 409 };
    await (await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`))).text();
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } };
    await (await fetch(sse.server.url, post(cancel, sessionId))).text();
    expect(seen.failed.map((f) => [f.requestId, f.outcome, f.evidence])).toEqual([
      [String(id), 'cursor_rejected', 'request_end'],
    ]);
  });

  it('confirms a held 409 when the client deletes the session (evidence request_end)', async () => {
    const { fetch, seen, sessionId } = await setup();
    const id = await cutCall(fetch, sessionId);
    sse.server.resumeMode = { status: 409 };
    await (await fetch(sse.server.url, resumeInit(sessionId, `s${id}-1`))).text();
    expect(seen.failed).toEqual([]);
    // The guard acts before the request leaves; where it goes (here nowhere: a closed port) does not matter.
    await fetch('http://127.0.0.1:1/mcp', { method: 'DELETE', headers: { 'mcp-session-id': sessionId } }).catch(
      () => undefined,
    );
    expect(seen.failed.map((f) => [f.requestId, f.outcome, f.evidence])).toEqual([
      [String(id), 'cursor_rejected', 'request_end'],
    ]);
    expect(fetch.listener.stats().unsettledRequests).toBe(0);
  });

  it('ends a silent resume of a cancelled request with an error verdict (evidence request_end), not a failure', async () => {
    const { fetch, seen, sessionId } = await setup();
    const id = await cutCall(fetch, sessionId);
    const silent = await silentResume(fetch, sessionId, id);
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } };
    await (await fetch(sse.server.url, post(cancel, sessionId))).text();
    expect(seen.decisions.map((d) => [d.requestId, d.outcome, d.evidence])).toEqual([
      [String(id), 'error', 'request_end'],
    ]);
    expect(seen.failed).toEqual([]);
    await silent.end();
  });

  it('reports an empty replay for a cursor it cannot attribute, but not for the standalone stream', async () => {
    const { fetch, seen, sessionId } = await setup();
    sse.server.resumeMode = 'empty-close';
    const standalone = await fetch(sse.server.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId },
    });
    await standalone.text();
    expect(standalone.status).toBe(200);

    await (await fetch(sse.server.url, resumeInit(sessionId, 'from-a-previous-process'))).text();
    expect(seen.decisions).toHaveLength(1);
    expect(seen.failed.map((f) => [f.requestId, f.decision, f.evidence])).toEqual([
      [undefined, ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY, 'body_end'],
    ]);
  });

  it('treats a request id used again as a new request', async () => {
    const { fetch, seen, sessionId } = await setup();
    for (let i = 0; i < 2; i++) {
      const response = await fetch(
        sse.server.url,
        post({ jsonrpc: '2.0', id: 'same', method: 'tools/call', params: {} }, sessionId),
      );
      expect(await response.text()).toContain('"result"');
    }
    expect(seen.dropped).toEqual([]);
  });

  it('accepts the base fetch as first argument and exposes its observer and listener', async () => {
    let sent = 0;
    const fetch = guardedFetch((input, init) => {
      sent++;
      return globalThis.fetch(input, init);
    });
    await (await fetch(sse.server.url, post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }))).text();
    expect(sent).toBe(1);
    expect(fetch.observer.stats().sessions).toBe(1);
    expect(fetch.observer.getRequest(undefined, 0)?.finished).toBe(true);
  });
});
