import { Agent } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  GuardAction,
  GuardProof,
  METRIC_GATEWAY_UNACCEPTED_SESSIONS,
  METRIC_GATEWAY_UNACCEPTED_SESSION_EVICTIONS_TOTAL,
} from '@resumewatch/semconv';
import { afterEach, describe, expect, it } from 'vitest';
import { send } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';
import type { SeenRequest } from './helpers/scripted-upstream.js';

// Issue 37, suspicion "fake session ids": any Mcp-Session-Id made a session record before the upstream
// accepted it, so 10,000 made-up ids pushed every real session out of the gateway's 10,000 and quietly
// ended enforcement for them. A session is kept among the accepted ones only once the upstream accepted
// it (its initialize assigned it, or a 2xx answered a request carrying it); the others are capped apart.

const rig = rigPerTest();
const agents: Agent[] = [];
afterEach(() => {
  for (const agent of agents.splice(0)) agent.destroy();
});

const SESSION = 'sess-real';
const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const inSession = { ...json, 'mcp-session-id': SESSION, 'mcp-protocol-version': '2025-11-25' };
const event = (id: string, data: unknown): string => `id: ${id}\ndata: ${JSON.stringify(data)}\n\n`;
const result = (eventId: string, requestId: number): string =>
  event(eventId, { jsonrpc: '2.0', id: requestId, result: { content: [{ type: 'text', text: 'done' }] } });

/**
 * An MCP server by hand that knows one session: initialize assigns it; tools/call `id` in it → SSE with
 * the result (`c<id>-2`); a GET in it replays that result; any other session id → 404.
 */
function mcpServer(req: IncomingMessage, res: ServerResponse, seen: SeenRequest): void {
  const sse = (chunks: string[]): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': SESSION });
    for (const chunk of chunks) res.write(chunk);
    res.end();
  };
  const session = req.headers['mcp-session-id'];
  if (session !== undefined && session !== SESSION) {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
    return;
  }
  if (req.method === 'GET') return sse([result('c6-2', 6)]);
  const message = JSON.parse(seen.body.toString()) as { id: number; method: string };
  if (message.method === 'initialize') {
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': SESSION });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25' } }));
    return;
  }
  sse([result(`c${message.id}-2`, message.id)]);
}

describe('made-up session ids under --enforce (issue 37)', () => {
  it('more of them than the session cap leave a real session enforced: its proven resume refused, its replay removed', async () => {
    // The gateway's session cap at 100 rather than 10,000, so that the flood takes 1,100 requests, not
    // 11,000 (the wire's own test floods the default cap with 10,000 through the same proxy door).
    const { gateway, endpoint } = await rig(mcpServer, { enforce: true, maxSessions: 100 });
    const init = await send(endpoint, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }),
    });
    expect(init.headers['mcp-session-id']).toBe(SESSION);
    const call = await send(endpoint, {
      method: 'POST',
      headers: inSession,
      body: JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'x' } }),
    });
    expect(call.body.toString()).toBe(result('c6-2', 6));

    // A stranger sends 1,100 requests, each naming a session of its own; the upstream refuses each.
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    agents.push(agent);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } });
    const statuses = new Map<number, number>();
    const FAKES = 1_100;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < FAKES) {
        const headers = { ...json, 'mcp-session-id': `fake-${next++}` };
        const { status } = await send(endpoint, { method: 'POST', headers, body, agent });
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(Object.fromEntries(statuses)).toEqual({ 404: FAKES });

    // The real client's cursor names its result: proof. Its resume is refused, the replay removed.
    const refused = await send(endpoint, {
      headers: { ...inSession, accept: 'text/event-stream', 'last-event-id': 'c6-2' },
    });
    expect(refused.status).toBe(405);
    const listening = await send(endpoint, { headers: { ...inSession, accept: 'text/event-stream' } });
    expect([listening.status, listening.body.byteLength]).toEqual([200, 0]);
    expect(gateway.counts().proofs).toEqual({
      [GuardAction.RESUME_REFUSED]: { [GuardProof.CURSOR]: 1 },
      [GuardAction.DUPLICATE_TERMINAL_DROPPED]: { [GuardProof.CURSOR]: 1 },
    });
    // The made-up ones pushed out only each other, counted.
    expect(gateway.stats()).toMatchObject({ sessions: 1, unacceptedSessions: 1_000, unacceptedEvictions: 100 });
    // ... and shown to operators on /metrics.
    const metrics = await (await fetch(`http://127.0.0.1:${gateway.detector!.metricsPort}/metrics`)).text();
    expect(metrics).toContain(`${METRIC_GATEWAY_UNACCEPTED_SESSIONS} 1000\n`);
    expect(metrics).toContain(`${METRIC_GATEWAY_UNACCEPTED_SESSION_EVICTIONS_TOTAL} 100\n`);
  });
});
