import type { IncomingMessage, ServerResponse } from 'node:http';
import { GuardAction, GuardProof, METRIC_GATEWAY_UNKEPT_IDS_TOTAL } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { send } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';
import type { Rig, SeenRequest } from './helpers/scripted-upstream.js';

// Issue 37: where a client's cursor is placed under --enforce. A cursor proves receipt only of what
// it names for sure: the earliest event that bears it (defect 3), by its text, not its hash (defect 4);
// a cursor too long to keep proves nothing (suspicion: cursors of up to 16 KB kept for an hour).

const rig = rigPerTest();

const SESSION = 'sess-cursors';
const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const inSession = { ...json, 'mcp-session-id': SESSION, 'mcp-protocol-version': '2025-11-25' };

const event = (id: string, data: unknown): string => `id: ${id}\ndata: ${JSON.stringify(data)}\n\n`;
const progress = (id: string): string =>
  event(id, { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } });
const result = (eventId: string, requestId: number): string =>
  event(eventId, { jsonrpc: '2.0', id: requestId, result: { content: [{ type: 'text', text: `done ${requestId}` }] } });

/**
 * A Streamable HTTP server by hand: initialize → JSON with the session; tools/call `id` → SSE with the
 * events `events(id)` (a progress, then the result), then a clean end; a GET with Last-Event-ID →
 * `replay(cursor)`, then an end.
 */
function mcpServer(events: (id: number) => string[], replay: (cursor: string) => string[]) {
  const sse = (res: ServerResponse, chunks: string[]): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': SESSION });
    for (const chunk of chunks) res.write(chunk);
    res.end();
  };
  return (req: IncomingMessage, res: ServerResponse, seen: SeenRequest): void => {
    if (req.method === 'GET') return sse(res, replay(String(req.headers['last-event-id'])));
    const message = JSON.parse(seen.body.toString()) as { id: number; method: string };
    if (message.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': SESSION });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25' } }));
      return;
    }
    sse(res, events(message.id));
  };
}

async function startSession(events: (id: number) => string[], replay: (cursor: string) => string[]): Promise<Rig> {
  const started = await rig(mcpServer(events, replay), { enforce: true });
  const init = await send(started.endpoint, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }),
  });
  expect(init.headers['mcp-session-id']).toBe(SESSION);
  return started;
}

/** A tools/call on a connection of its own: its end proves nothing (the client may have been cut before it). */
const call = (endpoint: string, id: number) =>
  send(endpoint, {
    method: 'POST',
    headers: inSession,
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'x' } }),
  });

const resume = (endpoint: string, lastEventId: string, headers: Record<string, string> = inSession) =>
  send(endpoint, { headers: { ...headers, accept: 'text/event-stream', 'last-event-id': lastEventId } });

const gets = (seen: SeenRequest[]): SeenRequest[] => seen.filter((s) => s.method === 'GET');

describe('hostile cursors under --enforce (issue 37)', () => {
  it('defect 3: one id on the progress and the result: the cut client’s resume gets the result', async () => {
    // The request id used as the event id, as some servers do.
    const { upstream, gateway, endpoint } = await startSession(
      (id) => [progress(`r${id}`), result(`r${id}`, id)],
      (cursor) => [result(cursor, Number(cursor.slice(1)))],
    );
    expect((await call(endpoint, 3)).body.toString()).toBe(progress('r3') + result('r3', 3));
    // The client read the progress and was cut before the result: it resumes from `r3`, the progress's id.
    const resumed = await resume(endpoint, 'r3');
    expect(resumed.status).toBe(200);
    expect(resumed.body.toString()).toBe(result('r3', 3));
    expect(gets(upstream.seen).map((s) => s.headers['last-event-id'])).toEqual(['r3']);
    expect(gateway.counts().actions).toEqual({});
  });

  it('defect 4: `evt-288934` and `evt-678010` share a 30-bit hash: request 1’s resume gets its result', async () => {
    const ids: Record<number, [string, string]> = { 1: ['evt-288934', 'evt-1'], 2: ['evt-2', 'evt-678010'] };
    const { upstream, gateway, endpoint } = await startSession(
      (id) => [progress(ids[id]![0]), result(ids[id]![1], id)],
      (cursor) => (cursor === 'evt-288934' ? [result('evt-1', 1)] : []),
    );
    expect((await call(endpoint, 1)).complete).toBe(true);
    expect((await call(endpoint, 2)).complete).toBe(true);
    // Request 1's client read its progress, then was cut.
    const resumed = await resume(endpoint, 'evt-288934');
    expect(resumed.status).toBe(200);
    expect(resumed.body.toString()).toBe(result('evt-1', 1));
    expect(gets(upstream.seen)).toHaveLength(1);
    expect(gateway.counts().actions).toEqual({});
    // Request 2's own cursor still proves request 2.
    expect((await resume(endpoint, 'evt-678010')).status).toBe(405);
    expect(gateway.counts().proofs).toEqual({ [GuardAction.RESUME_REFUSED]: { [GuardProof.CURSOR]: 1 } });
  });

  it('one id on two requests’ streams (a coarse clock): the cursor is not placed, the resume is forwarded', async () => {
    // Request 1's stream: T1 (progress), T2 (result); request 2's, a second later: T2 (progress), T3 (result).
    const ids: Record<number, [string, string]> = { 1: ['T1', 'T2'], 2: ['T2', 'T3'] };
    const { upstream, gateway, endpoint } = await startSession(
      (id) => [progress(ids[id]![0]), result(ids[id]![1], id)],
      (cursor) => (cursor === 'T2' ? [result('T3', 2)] : []),
    );
    expect((await call(endpoint, 1)).complete).toBe(true);
    expect((await call(endpoint, 2)).complete).toBe(true);
    // Request 2's client read its progress, then was cut: `T2` may name either stream's event.
    const resumed = await resume(endpoint, 'T2');
    expect(resumed.status).toBe(200);
    expect(resumed.body.toString()).toBe(result('T3', 2));
    expect(gets(upstream.seen)).toHaveLength(1);
    expect(gateway.counts().actions).toEqual({});
  });

  it('an event id over 256 bytes is never proof: the resume naming it is forwarded', async () => {
    const long = (id: number) => `${id}-${'x'.repeat(1000)}`;
    const { upstream, gateway, endpoint } = await startSession(
      (id) => [progress(`p${id}`), result(long(id), id)],
      () => [],
    );
    expect((await call(endpoint, 4)).complete).toBe(true);
    const resumed = await resume(endpoint, long(4));
    expect(resumed.status).toBe(200);
    expect(gets(upstream.seen).map((s) => s.headers['last-event-id'])).toEqual([long(4)]);
    // Not refused (the empty replay of an unproven request is reported, as any such resume is).
    expect(gateway.counts().actions).not.toHaveProperty(GuardAction.RESUME_REFUSED);
    expect(gateway.stats().unkeptIds).toBe(1);
  });

  it('a 15 KB Last-Event-ID and a 15 KB session id are forwarded unchanged and not kept', async () => {
    const { upstream, gateway, endpoint } = await startSession(
      (id) => [result(`c${id}`, id)],
      () => [],
    );
    const cursor = 'c'.repeat(15 * 1024);
    expect((await resume(endpoint, cursor)).status).toBe(200);
    expect(gets(upstream.seen).at(-1)!.headers['last-event-id']).toBe(cursor);
    const sessionId = 's'.repeat(15 * 1024);
    const foreign = await resume(endpoint, 'c1', { ...inSession, 'mcp-session-id': sessionId });
    expect(foreign.status).toBe(200);
    expect(gets(upstream.seen).at(-1)!.headers['mcp-session-id']).toBe(sessionId);
    // Kept: the one session the upstream assigned; each long id counted, neither held.
    expect(gateway.stats()).toMatchObject({ sessions: 1, unacceptedSessions: 0, unkeptIds: 2 });
    const metrics = await (await fetch(`http://127.0.0.1:${gateway.detector!.metricsPort}/metrics`)).text();
    expect(metrics).toContain(`${METRIC_GATEWAY_UNKEPT_IDS_TOTAL} 2\n`);
  });
});
