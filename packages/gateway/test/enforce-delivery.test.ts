import type { IncomingMessage, ServerResponse } from 'node:http';
import { GuardAction } from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import type { GatewayOptions } from '../src/index.js';
import { open, send } from './helpers/raw-client.js';
import type { RawResponse } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';
import type { Rig, SeenRequest } from './helpers/scripted-upstream.js';

const rig = rigPerTest();

const SESSION = 'sess-enforce';
const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const inSession = { ...json, 'mcp-session-id': SESSION, 'mcp-protocol-version': '2025-11-25' };

const event = (id: string, data: object): string => `id: ${id}\ndata: ${JSON.stringify(data)}\n\n`;
const progress = (id: string): string =>
  event(id, { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } });
const result = (eventId: string, requestId: number): string =>
  event(eventId, { jsonrpc: '2.0', id: requestId, result: { content: [{ type: 'text', text: 'done' }] } });

/**
 * A Streamable HTTP server by hand: initialize → JSON with the session; tools/call `id` → SSE with
 * `c<id>-1` (progress) and `c<id>-2` (result), then a clean end, or held open for a call named `hold`;
 * a GET with Last-Event-ID `c<id>-1` replays the result and ends; a GET without one replays `replay` and ends.
 */
function mcpServer(replay: string[] = []) {
  return (req: IncomingMessage, res: ServerResponse, seen: SeenRequest): void => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': SESSION });
      const cursor = req.headers['last-event-id'];
      if (typeof cursor === 'string') res.write(result(cursor.replace(/-1$/, '-2'), Number(cursor.slice(1, -2))));
      else for (const chunk of replay) res.write(chunk);
      res.end();
      return;
    }
    const message = JSON.parse(seen.body.toString()) as { id: number; method: string; params?: { name?: string } };
    if (message.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': SESSION });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25' } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': SESSION });
    res.write(progress(`c${message.id}-1`));
    res.write(result(`c${message.id}-2`, message.id));
    if (message.params?.name !== 'hold') res.end();
  };
}

async function startSession(options: Partial<GatewayOptions> = {}, replay?: string[]): Promise<Rig> {
  const started = await rig(mcpServer(replay), { enforce: true, ...options });
  const init = await send(started.endpoint, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }),
  });
  expect(init.headers['mcp-session-id']).toBe(SESSION);
  return started;
}

const call = (endpoint: string, id: number, name = 'quick'): Promise<RawResponse> =>
  send(endpoint, {
    method: 'POST',
    headers: inSession,
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } }),
  });

const resume = (endpoint: string, lastEventId: string): Promise<RawResponse> =>
  send(endpoint, { headers: { ...inSession, accept: 'text/event-stream', 'last-event-id': lastEventId } });

const gets = (seen: SeenRequest[]): SeenRequest[] => seen.filter((s) => s.method === 'GET');

describe('gateway enforce: delivery confirmed by the downstream response', () => {
  it('refuses (405, Allow) a resume of a request whose result reached its client on a cleanly ended response', async () => {
    const { upstream, gateway, endpoint } = await startSession();
    const answered = await call(endpoint, 1);
    expect(answered.complete).toBe(true);
    expect(answered.body.toString()).toBe(progress('c1-1') + result('c1-2', 1));

    const refused = await resume(endpoint, 'c1-1');
    expect(refused.status).toBe(405);
    expect(refused.headers['allow']).toBe('POST, DELETE');
    expect(refused.body.byteLength).toBe(0);
    expect(gets(upstream.seen)).toHaveLength(0);
    expect(gateway.counts().actions[GuardAction.RESUME_REFUSED]).toBe(1);
  });

  it('lets the resume through, and its replayed result, when the response carrying the result broke', async () => {
    const { upstream, gateway, endpoint } = await startSession();
    // The upstream writes the result and keeps the stream open; the client's connection breaks after
    // the result was written to it, before the response ended: whether the client has it is unknown.
    const stream = await open(endpoint, {
      method: 'POST',
      headers: inSession,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hold' } }),
    });
    await vi.waitFor(() => expect(stream.text()).toContain('"id":2,"result"'), { timeout: 3_000 });
    stream.req.destroy();
    expect(await upstream.seen[1]!.closed).toEqual({ finished: false });
    await vi.waitFor(() => expect(gateway.counts().open).toBe(0), { timeout: 3_000 });

    const resumed = await resume(endpoint, 'c2-1');
    expect(resumed.status).toBe(200);
    expect(resumed.body.toString()).toBe(result('c2-2', 2));
    expect(gets(upstream.seen).map((s) => s.headers['last-event-id'])).toEqual(['c2-1']);
    expect(gateway.counts().actions[GuardAction.RESUME_REFUSED]).toBeUndefined();
    expect(gateway.counts().actions[GuardAction.DUPLICATE_TERMINAL_DROPPED]).toBeUndefined();

    // That replay ended cleanly: now the result is delivered, and a further resume is refused.
    const again = await resume(endpoint, 'c2-1');
    expect(again.status).toBe(405);
    expect(gets(upstream.seen)).toHaveLength(1);
  });

  it('removes a replay of a delivered result from another stream, and keeps everything else on it', async () => {
    const notification = event('l-1', { jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    const { gateway, endpoint } = await startSession({}, [result('c3-2', 3), notification]);
    expect((await call(endpoint, 3)).complete).toBe(true);

    const listening = await send(endpoint, { headers: { ...inSession, accept: 'text/event-stream' } });
    expect(listening.status).toBe(200);
    expect(listening.body.toString()).not.toContain('"id":3');
    expect(listening.body.toString()).toContain('notifications/tools/list_changed');
    expect(gateway.counts().actions[GuardAction.DUPLICATE_TERMINAL_DROPPED]).toBe(1);
  });

  it('observes only without enforce: the same resume after a delivered result reaches the upstream', async () => {
    const { upstream, gateway, endpoint } = await startSession({ enforce: false });
    expect((await call(endpoint, 4)).complete).toBe(true);
    const passed = await resume(endpoint, 'c4-1');
    expect(passed.status).toBe(200);
    expect(passed.body.toString()).toBe(result('c4-2', 4));
    expect(gets(upstream.seen)).toHaveLength(1);
    expect(gateway.counts().actions).toEqual({});
  });
});
