// Issue 39: a client that keeps a session id the server refused. Through `resumewatch gateway`, in front
// of a real SDK 1.x server with sessions: the session is deleted, then the client keeps sending its id.
// Ten requests answered 404 are a dead_session_loop; a client that initializes anew after one 404 is not.
// The same server offering no listening stream (GET answered 405): GETs re-opened again and again are a
// listening_stream_loop; a client that stops after one 405 is not.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { FindingKind } from '@resumewatch/semconv';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Finding } from '@resumewatch/detector';
import type { RunningGateway } from '../src/index.js';
import { gatewayMcpUrl, kindsOf, settleGateway, startTestGateway, waitFor } from './helpers/e2e-rig.js';

const HEADER_MCP_SESSION_ID = 'mcp-session-id';
const HEADER_MCP_PROTOCOL_VERSION = 'mcp-protocol-version';

/** An SDK 1.x server with sessions: one transport per session; an unknown session id answered 404, as the spec says. */
async function startSessionServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const id = req.headers[HEADER_MCP_SESSION_ID];
    // As many servers that offer no listening stream (stateless ones among them): GET is not allowed.
    if (req.method === 'GET') {
      res.writeHead(405, { allow: 'POST, DELETE' }).end();
      return;
    }
    if (typeof id === 'string') {
      const transport = transports.get(id);
      if (!transport) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      return transport.handleRequest(req, res);
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (sid) => void transports.set(sid, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
    };
    const server = new McpServer({ name: 'dead-session', version: '1.0.0' });
    server.tool('echo', async () => ({ content: [{ type: 'text', text: 'ok' }] }));
    await server.connect(transport);
    return transport.handleRequest(req, res);
  };
  const http: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      for (const t of transports.values()) await t.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** A raw client, as the buggy ones behave: it keeps what session id it is told to send. */
function post(url: string, body: unknown, session?: string): Promise<Response> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  if (session !== undefined) {
    headers[HEADER_MCP_SESSION_ID] = session;
    headers[HEADER_MCP_PROTOCOL_VERSION] = LATEST_PROTOCOL_VERSION;
  }
  return fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
}

let id = 0;
async function initialize(url: string): Promise<string> {
  const res = await post(url, {
    jsonrpc: '2.0',
    id: ++id,
    method: 'initialize',
    params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'loop', version: '1' } },
  });
  expect(res.status).toBe(200);
  await res.text();
  const session = res.headers.get(HEADER_MCP_SESSION_ID);
  expect(session).toBeTruthy();
  const initialized = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, session!);
  expect(initialized.status).toBe(202);
  await initialized.text();
  return session!;
}

async function listTools(url: string, session: string): Promise<number> {
  const res = await post(url, { jsonrpc: '2.0', id: ++id, method: 'tools/list' }, session);
  await res.text();
  return res.status;
}

async function deleteSession(url: string, session: string): Promise<void> {
  const res = await fetch(url, {
    method: 'DELETE',
    headers: { [HEADER_MCP_SESSION_ID]: session, [HEADER_MCP_PROTOCOL_VERSION]: LATEST_PROTOCOL_VERSION },
  });
  await res.text();
  expect(res.status).toBe(200);
}

let upstream: Awaited<ReturnType<typeof startSessionServer>>;
let gateway: RunningGateway;
let url: string;
beforeEach(async () => {
  upstream = await startSessionServer();
  gateway = await startTestGateway(upstream.url);
  url = gatewayMcpUrl(gateway, upstream.url);
});
afterEach(async () => {
  await gateway.close();
  await upstream.close();
});

it('ten requests on a deleted session, each answered 404, are one dead_session_loop', async () => {
  const session = await initialize(url);
  expect(await listTools(url, session)).toBe(200);
  await deleteSession(url, session);
  const statuses: number[] = [];
  for (let i = 0; i < 10; i++) statuses.push(await listTools(url, session));
  expect(statuses).toEqual(Array(10).fill(404));
  await settleGateway(gateway);
  const loops = (): Finding[] => gateway.detector!.findings().filter((f) => f.kind === FindingKind.DEAD_SESSION_LOOP);
  await waitFor(() => loops().length > 0, 'the dead_session_loop');
  const findings = loops();
  expect(findings).toHaveLength(1);
  expect(findings[0]).toMatchObject({ session_id: session, status_code: 404 });
  expect(findings[0]!.attempts).toBeGreaterThanOrEqual(5);
}, 30_000);

it('healthy twin: a client that initializes anew after one 404 makes no finding', async () => {
  const session = await initialize(url);
  await deleteSession(url, session);
  expect(await listTools(url, session)).toBe(404);
  const fresh = await initialize(url);
  expect(fresh).not.toBe(session);
  for (let i = 0; i < 10; i++) expect(await listTools(url, fresh)).toBe(200);
  await settleGateway(gateway);
  // The gateway saw the whole run (the sessions started), and found nothing.
  await waitFor(() => gateway.detector!.detector.stats().spans.accepted >= 14, 'the spans of the run');
  expect(kindsOf(gateway.detector!.findings())).toEqual([]);
}, 30_000);

/** A GET for the session's listening stream, as a client opens it after initialize. */
async function listen(url: string, session: string): Promise<number> {
  const res = await fetch(url, {
    headers: {
      accept: 'text/event-stream',
      [HEADER_MCP_SESSION_ID]: session,
      [HEADER_MCP_PROTOCOL_VERSION]: LATEST_PROTOCOL_VERSION,
    },
  });
  await res.text();
  return res.status;
}

it('48 GETs answered 405 are one listening_stream_loop', async () => {
  const session = await initialize(url);
  const statuses: number[] = [];
  for (let i = 0; i < 48; i++) statuses.push(await listen(url, session));
  expect(statuses).toEqual(Array(48).fill(405));
  await settleGateway(gateway);
  const loops = (): Finding[] =>
    gateway.detector!.findings().filter((f) => f.kind === FindingKind.LISTENING_STREAM_LOOP);
  await waitFor(() => loops().length > 0, 'the listening_stream_loop');
  expect(loops()).toHaveLength(1);
  expect(loops()[0]).toMatchObject({ session_id: session, status_code: 405, attempts: 6 });
  expect(kindsOf(gateway.detector!.findings())).toEqual([FindingKind.LISTENING_STREAM_LOOP]);
}, 30_000);

it('healthy twin: a client that stops after one 405 makes no finding', async () => {
  const session = await initialize(url);
  expect(await listen(url, session)).toBe(405);
  for (let i = 0; i < 10; i++) expect(await listTools(url, session)).toBe(200);
  await settleGateway(gateway);
  await waitFor(() => gateway.detector!.detector.stats().spans.accepted >= 12, 'the spans of the run');
  expect(kindsOf(gateway.detector!.findings())).toEqual([]);
}, 30_000);
