import { Agent } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { FindingKind, GuardAction, GuardProof } from '@resumewatch/semconv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GatewayOptions } from '../src/index.js';
import { open, send } from './helpers/raw-client.js';
import type { RawResponse } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';
import type { Rig, SeenRequest } from './helpers/scripted-upstream.js';

// `--enforce` acts only on the client's proof that it holds a result (issue 28): its cursor at or past
// the result's event, or, with `connectionProof` (--trust-connection-reuse), its next request on the
// connection that carried the result, after that response ended. Node's `finish` and a clean end are not
// proof. Without proof the gateway forwards. The tests that rely on a connection's proof set it.

const rig = rigPerTest();
const agents: Agent[] = [];
afterEach(() => {
  for (const agent of agents.splice(0)) agent.destroy();
});

/** One keep-alive connection: every request sent with it goes on the same socket, one after the other. */
function oneConnection(): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(agent);
  return agent;
}

const SESSION = 'sess-enforce';
const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const inSession = { ...json, 'mcp-session-id': SESSION, 'mcp-protocol-version': '2025-11-25' };

const event = (id: string, data: unknown): string => `id: ${id}\ndata: ${JSON.stringify(data)}\n\n`;
const progress = (id: string): string =>
  event(id, { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } });
const resultMessage = (requestId: number | string, text = 'done') => ({
  jsonrpc: '2.0',
  id: requestId,
  result: { content: [{ type: 'text', text }] },
});
const result = (eventId: string, requestId: number | string, text?: string): string =>
  event(eventId, resultMessage(requestId, text));

interface ServerOptions {
  /** What a GET without Last-Event-ID (the listening stream) replays, then ends. */
  replay?: string[];
  /** What a resume replays for cursor `c<id>-1`; default the result as first sent. */
  resumed?: (id: number) => string[];
  /** Send SSE bodies with a Content-Length (as a server that buffers them does). */
  contentLength?: boolean;
}

/**
 * A Streamable HTTP server by hand: initialize → JSON with the session; tools/call `id` → SSE with
 * `c<id>-1` (progress) and `c<id>-2` (result), then a clean end, or held open for a call named `hold`;
 * a GET with Last-Event-ID `c<id>-1` replays the result (or `resumed(id)`) and ends; a GET without one
 * replays `replay` and ends; a POST batch is answered with `batch` chunks.
 */
function mcpServer(options: ServerOptions = {}) {
  const sse = (res: ServerResponse, chunks: string[], end = true): void => {
    const headers: Record<string, string> = { 'content-type': 'text/event-stream', 'mcp-session-id': SESSION };
    if (options.contentLength && end) headers['content-length'] = String(Buffer.byteLength(chunks.join('')));
    res.writeHead(200, headers);
    for (const chunk of chunks) res.write(chunk);
    if (end) res.end();
  };
  return (req: IncomingMessage, res: ServerResponse, seen: SeenRequest): void => {
    if (req.method === 'GET') {
      const cursor = req.headers['last-event-id'];
      if (typeof cursor !== 'string') return sse(res, options.replay ?? []);
      const id = Number(cursor.slice(1, -2));
      return sse(res, options.resumed?.(id) ?? [result(cursor.replace(/-1$/, '-2'), id)]);
    }
    const message = JSON.parse(seen.body.toString()) as { id: number; method: string; params?: { name?: string } };
    if (message.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': SESSION });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25' } }));
      return;
    }
    sse(res, [progress(`c${message.id}-1`), result(`c${message.id}-2`, message.id)], message.params?.name !== 'hold');
  };
}

async function startSession(options: Partial<GatewayOptions> = {}, server: ServerOptions = {}): Promise<Rig> {
  const started = await rig(mcpServer(server), { enforce: true, ...options });
  const init = await send(started.endpoint, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }),
  });
  expect(init.headers['mcp-session-id']).toBe(SESSION);
  return started;
}

const call = (endpoint: string, id: number, agent?: Agent, name = 'quick'): Promise<RawResponse> =>
  send(endpoint, {
    method: 'POST',
    headers: inSession,
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } }),
    ...(agent ? { agent } : {}),
  });

const resume = (endpoint: string, lastEventId: string, agent?: Agent): Promise<RawResponse> =>
  send(endpoint, {
    headers: { ...inSession, accept: 'text/event-stream', 'last-event-id': lastEventId },
    ...(agent ? { agent } : {}),
  });

const listen = (endpoint: string, agent?: Agent): Promise<RawResponse> =>
  send(endpoint, { headers: { ...inSession, accept: 'text/event-stream' }, ...(agent ? { agent } : {}) });

const gets = (seen: SeenRequest[]): SeenRequest[] => seen.filter((s) => s.method === 'GET');

describe('gateway enforce: a resume is refused only on proof of receipt', () => {
  it('refuses (405, Allow) a resume whose cursor names the result’s event: proof `cursor`', async () => {
    const { upstream, gateway, endpoint } = await startSession();
    expect((await call(endpoint, 1)).body.toString()).toBe(progress('c1-1') + result('c1-2', 1));

    const refused = await resume(endpoint, 'c1-2');
    expect(refused.status).toBe(405);
    expect(refused.headers['allow']).toBe('POST, DELETE');
    expect(refused.body.byteLength).toBe(0);
    expect(gets(upstream.seen)).toHaveLength(0);
    expect(gateway.counts().proofs).toEqual({ [GuardAction.RESUME_REFUSED]: { [GuardProof.CURSOR]: 1 } });
  });

  it('refuses a resume sent on the connection that carried the result, after it ended: proof `next_request` (connectionProof)', async () => {
    const { upstream, gateway, endpoint } = await startSession({ connectionProof: true });
    const connection = oneConnection();
    expect((await call(endpoint, 2, connection)).complete).toBe(true);
    // The cursor is stale (before the result), but the connection was reused: the client read it all.
    const refused = await resume(endpoint, 'c2-1', connection);
    expect(refused.status).toBe(405);
    expect(gets(upstream.seen)).toHaveLength(0);
    expect(gateway.counts().proofs).toEqual({ [GuardAction.RESUME_REFUSED]: { [GuardProof.NEXT_REQUEST]: 1 } });
  });

  it('takes no request through an intermediary (X-Forwarded-For, Via, Forwarded) for proof: a proxy reads responses whole itself', async () => {
    for (const [mark, value] of [
      ['x-forwarded-for', '203.0.113.7'],
      ['via', '1.1 lb'],
      ['forwarded', 'for=203.0.113.7'],
    ] as const) {
      const { upstream, gateway, endpoint } = await startSession({ connectionProof: true });
      const connection = oneConnection();
      const proxied = { ...inSession, [mark]: value };
      const answered = await send(endpoint, {
        method: 'POST',
        headers: proxied,
        body: JSON.stringify({ jsonrpc: '2.0', id: 14, method: 'tools/call', params: { name: 'quick' } }),
        agent: connection,
      });
      expect(answered.complete).toBe(true);
      const resumed = await send(endpoint, {
        headers: { ...proxied, accept: 'text/event-stream', 'last-event-id': 'c14-1' },
        agent: connection,
      });
      expect(resumed.status, mark).toBe(200);
      expect(gets(upstream.seen), mark).toHaveLength(1);
      expect(gateway.counts().actions, mark).toEqual({});
    }
  });

  it('by default (no --trust-connection-reuse), only the cursor proves: a direct client’s reused connection does not', async () => {
    const { gateway, endpoint } = await startSession();
    const connection = oneConnection();
    const sockets = new Set<Socket>();
    connection.on('free', (socket: Socket) => sockets.add(socket));
    expect((await call(endpoint, 15, connection)).complete).toBe(true);
    expect((await resume(endpoint, 'c15-1', connection)).status).toBe(200);
    expect((await resume(endpoint, 'c15-2', connection)).status).toBe(405);
    // One connection throughout: what connectionProof would have taken for proof (the test above).
    expect(sockets.size).toBe(1);
    expect(gateway.counts().proofs).toEqual({ [GuardAction.RESUME_REFUSED]: { [GuardProof.CURSOR]: 1 } });
  });

  it('forwards the resume of a client that shows no proof (issue 28, point 1: a clean end is not receipt)', async () => {
    const { upstream, gateway, endpoint } = await startSession();
    // Written whole and ended cleanly (Node's `finish`), but the client may have stopped reading after
    // the progress event and lost its connection: it resumes from there, on a new connection.
    expect((await call(endpoint, 3)).complete).toBe(true);
    const resumed = await resume(endpoint, 'c3-1');
    expect(resumed.status).toBe(200);
    expect(resumed.body.toString()).toBe(result('c3-2', 3));
    expect(gets(upstream.seen).map((s) => s.headers['last-event-id'])).toEqual(['c3-1']);
    expect(gateway.counts().actions).toEqual({});
  });

  it('forwards the resume, and its replayed result, when the response carrying the result broke', async () => {
    const { upstream, gateway, endpoint } = await startSession();
    const stream = await open(endpoint, {
      method: 'POST',
      headers: inSession,
      body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'hold' } }),
    });
    await vi.waitFor(() => expect(stream.text()).toContain('"id":4,"result"'), { timeout: 3_000 });
    stream.req.destroy();
    expect(await upstream.seen[1]!.closed).toEqual({ finished: false });
    await vi.waitFor(() => expect(gateway.counts().open).toBe(0), { timeout: 3_000 });

    const resumed = await resume(endpoint, 'c4-1');
    expect(resumed.status).toBe(200);
    expect(resumed.body.toString()).toBe(result('c4-2', 4));
    expect(gateway.counts().actions).toEqual({});
    // The client's cursor now names the replayed result's event: that is proof, and the next resume is refused.
    expect((await resume(endpoint, 'c4-2')).status).toBe(405);
    expect(gets(upstream.seen)).toHaveLength(1);
  });

  it('observes only without enforce: a resume after a proven result reaches the upstream', async () => {
    const { upstream, gateway, endpoint } = await startSession({ enforce: false });
    expect((await call(endpoint, 5)).complete).toBe(true);
    const passed = await resume(endpoint, 'c5-2');
    expect(passed.status).toBe(200);
    expect(gets(upstream.seen)).toHaveLength(1);
    expect(gateway.counts().actions).toEqual({});
  });
});

describe('gateway enforce: replays are removed message by message, only on proof', () => {
  it('removes a replay of a proven result from another stream, and keeps everything else on it', async () => {
    const notification = event('l-1', { jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    const { gateway, endpoint } = await startSession(
      { connectionProof: true },
      { replay: [result('c6-2', 6), notification] },
    );
    const connection = oneConnection();
    expect((await call(endpoint, 6, connection)).complete).toBe(true);
    const listening = await listen(endpoint, connection);
    expect(listening.status).toBe(200);
    expect(listening.body.toString()).toBe(notification);
    expect(gateway.counts().proofs).toEqual({
      [GuardAction.DUPLICATE_TERMINAL_DROPPED]: { [GuardProof.NEXT_REQUEST]: 1 },
    });
  });

  it('forwards a replay of an unproven result (issue 28, point 1: the client’s only copy may be this one)', async () => {
    const { gateway, endpoint } = await startSession({}, { replay: [result('c7-2', 7)] });
    expect((await call(endpoint, 7)).complete).toBe(true);
    expect((await listen(endpoint)).body.toString()).toBe(result('c7-2', 7));
    expect(gateway.counts().actions).toEqual({});
  });

  it('forwards a differing replay of an unproven result, reported, and every later one (issue 28, point 2)', async () => {
    const differing = result('c8-2', 8, 'not what the first said');
    const { gateway, endpoint } = await startSession({}, { resumed: () => [differing] });
    expect((await call(endpoint, 8)).complete).toBe(true);
    expect((await resume(endpoint, 'c8-1')).body.toString()).toBe(differing);
    expect((await resume(endpoint, 'c8-1')).body.toString()).toBe(differing);
    expect(gateway.counts().proofs).toEqual({
      [GuardAction.CONFLICTING_TERMINAL_REPORTED]: { [GuardProof.NONE]: 2 },
    });
  });

  it('takes a replay that writes the same result with its keys in another order for a duplicate, not a conflict (issue 37)', async () => {
    const reordered = event('c8-2', { id: 8, jsonrpc: '2.0', result: { content: [{ text: 'done', type: 'text' }] } });
    const { gateway, endpoint } = await startSession({}, { resumed: () => [reordered] });
    expect((await call(endpoint, 8)).complete).toBe(true);
    // Unproven: forwarded (the client's only copy may be this one), and nothing to report.
    expect((await resume(endpoint, 'c8-1')).body.toString()).toBe(reordered);
    expect(gateway.counts().actions).toEqual({});
    await gateway.flush();
    expect(gateway.detector!.findings().map((f) => f.kind)).not.toContain(FindingKind.CONFLICTING_TERMINAL);
  });

  it('removes only the proven duplicate of a batch event and forwards the rest of it (issue 28, point 3)', async () => {
    const batch = `id: b-1\ndata: ${JSON.stringify([resultMessage(9), resultMessage(10, 'ten')])}\n\n`;
    const { gateway, endpoint } = await startSession({ connectionProof: true }, { replay: [batch] });
    const connection = oneConnection();
    expect((await call(endpoint, 9, connection)).complete).toBe(true);
    // 10 was never sent through this gateway's session as a request here: its result is the only copy.
    const listening = await listen(endpoint, connection);
    expect(listening.body.toString()).toBe(`id: b-1\ndata: ${JSON.stringify([resultMessage(10, 'ten')])}\n\n`);
    expect(gateway.counts().actions).toEqual({ [GuardAction.DUPLICATE_TERMINAL_DROPPED]: 1 });
  });

  it('takes ids 1 and "1" for two requests: the second result is forwarded, no conflict (issue 28, point 3)', async () => {
    const { gateway, endpoint } = await startSession(
      { connectionProof: true },
      { replay: [result('s-1', '11', 'string id')] },
    );
    const connection = oneConnection();
    expect((await call(endpoint, 11, connection)).complete).toBe(true);
    expect((await listen(endpoint, connection)).body.toString()).toBe(result('s-1', '11', 'string id'));
    expect(gateway.counts().actions).toEqual({});
  });
});

describe('gateway enforce: framing', () => {
  it('a body the guard may shorten never carries the upstream’s Content-Length; the connection stays in step (issue 28, point 4)', async () => {
    const { gateway, endpoint } = await startSession(
      { connectionProof: true },
      { contentLength: true, replay: [result('c12-2', 12)] },
    );
    const connection = oneConnection();
    const sockets = new Set<Socket>();
    connection.on('free', (socket: Socket) => sockets.add(socket));
    expect((await call(endpoint, 12, connection)).complete).toBe(true);
    const listening = await listen(endpoint, connection);
    expect(gateway.counts().actions).toEqual({ [GuardAction.DUPLICATE_TERMINAL_DROPPED]: 1 });
    expect(listening.headers['content-length']).toBeUndefined();
    expect([listening.complete, listening.body.byteLength]).toEqual([true, 0]);
    // The next exchange on the same connection reads its own response, whole.
    const next = await call(endpoint, 13, connection);
    expect(next.body.toString()).toBe(progress('c13-1') + result('c13-2', 13));
    expect(sockets.size).toBe(1);
  });
});
