import { inspect } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InvalidResumptionError, ResumeDecision, guardedFetch } from '../src/index.js';
import type { GuardedFetch } from '../src/index.js';
import type { WireObserverOptions } from '@resumewatch/wire';
import { post, recordGuard, resumeInit, until } from './helpers.js';
import type { GuardRecord } from './helpers.js';
import { startSseServer } from '../../wire/test/sse-server.js';
import type { SseServer } from '../../wire/test/sse-server.js';

let server: SseServer;
beforeAll(async () => {
  server = await startSseServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.resumeMode = 'replay';
  server.progress = 1;
  server.resumes.length = 0;
});

let nextId = 1;
async function setup(extra = {}, wire?: WireObserverOptions): Promise<{ fetch: GuardedFetch; seen: GuardRecord; sessionId: string }> {
  const seen = recordGuard({ replayWindowMs: 300, ...extra });
  const fetch = guardedFetch({ ...seen.options, wire });
  const init = await fetch(server.url, post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }));
  await init.text();
  return { fetch, seen, sessionId: init.headers.get('mcp-session-id')! };
}

async function call(fetch: GuardedFetch, sessionId: string): Promise<{ id: number; text: string }> {
  const id = nextId++;
  const response = await fetch(server.url, post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 't' } }, sessionId));
  return { id, text: await response.text() };
}

describe('guardedFetch', () => {
  it('refuses locally a resume of a request whose terminal event was seen', async () => {
    const { fetch, seen, sessionId } = await setup();
    const { id, text } = await call(fetch, sessionId);
    expect(text).toBe(server.written.get(`POST ${id}`));

    const error = await fetch(server.url, resumeInit(sessionId, `s${id}-2`)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResumptionError);
    expect((error as InvalidResumptionError).requestId).toBe(String(id));
    expect((error as InvalidResumptionError).sessionId).toBe(sessionId);
    // The session id (close to a credential) stays out of the message and of anything that prints the error.
    expect((error as Error).message).toBe(
      `request "${id}" is terminal; refusing to resume via Last-Event-ID. Open a new request with idempotency protection instead.`,
    );
    expect(inspect(error)).not.toContain(sessionId);
    expect(JSON.stringify(error)).not.toContain(sessionId);
    expect(server.resumes).toEqual([]);
    expect(seen.refused.map((r) => [r.requestIds, r.lastEventId])).toEqual([[[String(id)], `s${id}-2`]]);
  });

  it('refuses a resume after a JSON-RPC error response too', async () => {
    const { fetch, sessionId } = await setup();
    const response = await fetch(server.url, post({ jsonrpc: '2.0', id: 'e1', method: 'tools/call', params: {} }, sessionId));
    await response.text();
    await expect(fetch(server.url, resumeInit(sessionId, 'se1-2'))).rejects.toBeInstanceOf(InvalidResumptionError);
    expect(server.resumes).toEqual([]);
  });

  it('refuses a cursor from the middle of a finished stream, sending nothing', async () => {
    server.progress = 2;
    const { fetch, sessionId } = await setup();
    const { id } = await call(fetch, sessionId);
    await expect(fetch(server.url, resumeInit(sessionId, `s${id}-1`))).rejects.toBeInstanceOf(InvalidResumptionError);
    expect(server.resumes).toEqual([]);
  });

  it('removes a replayed terminal event the client already had, and then refuses the same cursor locally', async () => {
    server.progress = 2;
    // Remembering one cursor per session, the observer forgets s<id>-1 once s<id>-3 arrives.
    const { fetch, seen, sessionId } = await setup({}, { cursorsPerSession: 1 });
    const { id } = await call(fetch, sessionId);

    // A cursor the guard cannot attribute before the replay: the request reaches the server, and
    // the replayed result is removed.
    const replay = await fetch(server.url, resumeInit(sessionId, `s${id}-1`));
    const replayed = await replay.text();
    const written = server.written.get(`GET s${id}-1`)!;
    expect(written).toContain('"result"');
    expect(replayed).toBe(written.slice(0, written.indexOf(`id: s${id}-3`)));
    expect(replayed).toContain('"progress":2');
    expect(seen.dropped.map((d) => [d.requestId, d.eventId, d.outcome])).toEqual([[String(id), `s${id}-3`, 'result']]);

    // The client still holds s<id>-2 (the last event it was given): resuming from it is refused.
    await expect(fetch(server.url, resumeInit(sessionId, `s${id}-2`))).rejects.toBeInstanceOf(InvalidResumptionError);
    expect(server.resumes).toEqual([`s${id}-1`]);
  });

  it('passes a valid resumption through byte for byte and reports it as a continuation', async () => {
    const { fetch, seen, sessionId } = await setup();
    server.cutNextStream = true;
    const id = nextId++;
    const cut = await fetch(server.url, post({ jsonrpc: '2.0', id, method: 'tools/call', params: {} }, sessionId));
    await expect(cut.text()).rejects.toThrow();

    const resumed = await fetch(server.url, resumeInit(sessionId, `s${id}-1`));
    const text = await resumed.text();
    expect(text).toBe(server.written.get(`GET s${id}-1`));
    expect(text).toContain('"result"');
    expect(seen.dropped).toEqual([]);
    expect(seen.failed).toEqual([]);
    expect(seen.decisions.map((d) => [d.requestId, d.decision])).toEqual([[String(id), ResumeDecision.CONTINUATION_VALID]]);
    // Now it is finished: a further resume is refused.
    await expect(fetch(server.url, resumeInit(sessionId, `s${id}-2`))).rejects.toBeInstanceOf(InvalidResumptionError);
  });

  it.each(['empty-close', 'empty-open'] as const)('reports an empty replay (%s) on an unfinished request as a failed resumption', async (mode) => {
    const { fetch, seen, sessionId } = await setup();
    server.cutNextStream = true;
    const id = nextId++;
    const cut = await fetch(server.url, post({ jsonrpc: '2.0', id, method: 'tools/call', params: {} }, sessionId));
    await expect(cut.text()).rejects.toThrow();

    server.resumeMode = mode;
    const controller = new AbortController();
    const resumed = await fetch(server.url, { ...resumeInit(sessionId, `s${id}-1`), signal: controller.signal });
    const reading = resumed.text().catch(() => '');
    await until(() => seen.failed.length > 0);
    controller.abort();
    await reading;
    expect(seen.failed.map((f) => [f.sessionId, f.requestId, f.status, f.decision, f.action])).toEqual([
      [sessionId, String(id), 200, ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY, 'resumption_failed_reported'],
    ]);
  });

  it.each([400, 404, 409])('reports a lost cursor (%i) on an unfinished request', async (status) => {
    const { fetch, seen, sessionId } = await setup();
    server.cutNextStream = true;
    const id = nextId++;
    const cut = await fetch(server.url, post({ jsonrpc: '2.0', id, method: 'tools/call', params: {} }, sessionId));
    await expect(cut.text()).rejects.toThrow();

    server.resumeMode = { status };
    const resumed = await fetch(server.url, resumeInit(sessionId, `s${id}-1`));
    expect(resumed.status).toBe(status);
    await resumed.text();
    expect(seen.failed.map((f) => [f.requestId, f.status, f.decision])).toEqual([
      [String(id), status, ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH],
    ]);
  });

  it('reports an empty replay for a cursor it cannot attribute, but not for the standalone stream', async () => {
    const { fetch, seen, sessionId } = await setup();
    server.resumeMode = 'empty-close';
    const standalone = await fetch(server.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId } });
    await standalone.text();
    expect(standalone.status).toBe(200);

    await (await fetch(server.url, resumeInit(sessionId, 'from-a-previous-process'))).text();
    await until(() => seen.decisions.length === 1);
    expect(seen.failed.map((f) => [f.requestId, f.decision])).toEqual([[undefined, ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY]]);
  });

  it('treats a request id used again as a new request', async () => {
    const { fetch, seen, sessionId } = await setup();
    for (let i = 0; i < 2; i++) {
      const response = await fetch(server.url, post({ jsonrpc: '2.0', id: 'same', method: 'tools/call', params: {} }, sessionId));
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
    await (await fetch(server.url, post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }))).text();
    expect(sent).toBe(1);
    expect(fetch.observer.stats().sessions).toBe(1);
    expect(fetch.listener.guard.stats().finished).toBe(1);
  });
});
