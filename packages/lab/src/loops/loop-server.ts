// The server side of the loop scenarios (issue 39): an SDK 1.x Streamable HTTP server, stateful (a session
// map the lab can forget, as a restart does) or stateless (no session, and a GET listening stream it
// does not offer: answered 405 as the SDK's stateless example does, or closed at once), recording every
// HTTP request it received and the status it answered.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { BoundedMap, RecentList } from '@resumewatch/bounded';
import { HEADER_LAST_EVENT_ID, HEADER_SESSION_ID } from '@resumewatch/wire';
import { z } from 'zod';
import { header, readBody, sendJsonRpcError } from '../http-util.js';

/** The one tool: echoes its text back. */
export const LOOP_TOOL = 'echo';

/**
 * How the server answers a GET (the listening stream): `sdk` (the SDK's own standalone stream; stateful
 * only), `405` (none offered), `close` (200, an event stream closed at once with no event), `retry` (200,
 * one priming event with `retry: <retryMs>`, as the SDK writes it, then closed).
 */
export type LoopGetMode = 'sdk' | '405' | 'close' | 'retry';

export interface LoopServerOptions {
  /** A session per initialize, unknown ids answered 404 (true); or none, the SDK's stateless mode (false). */
  sessions: boolean;
  get: LoopGetMode;
  /** The `retry:` the `retry` mode announces, ms. Default 200. */
  retryMs?: number;
}

/** One HTTP request the server received, and what it answered. */
export interface LoopServerRequest {
  at: number;
  method: string;
  sessionId: string | undefined;
  /** The `Last-Event-ID` a GET carried (a resume from the `retry` mode's priming event). */
  lastEventId: string | undefined;
  /** The JSON-RPC method of a POST (the first message of a batch). */
  rpc: string | undefined;
  /** The status it answered, once the response ended. */
  status: number | undefined;
}

export interface LoopServer {
  /** http://127.0.0.1:P/mcp */
  readonly url: string;
  readonly retryMs: number;
  /** Every request received, oldest first (bounded). */
  requests(): LoopServerRequest[];
  /** Forgets every session, as a restarted server does: their ids are answered 404 from now on. */
  forgetSessions(): Promise<void>;
  close(): Promise<void>;
}

const BODY_LIMIT = 1024 * 1024;

function buildServer(): McpServer {
  const server = new McpServer({ name: 'resumewatch-lab-loops', version: '0.1.0' });
  server.registerTool(
    LOOP_TOOL,
    { description: 'Echoes text.', inputSchema: { text: z.string().max(1000) } },
    ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  return server;
}

export async function startLoopServer(options: LoopServerOptions): Promise<LoopServer> {
  const retryMs = options.retryMs ?? 200;
  const requests = new RecentList<LoopServerRequest>(5000);
  const sessions = new BoundedMap<string, StreamableHTTPServerTransport>(1000, 1_800_000);
  let primingSeq = 0;

  /** The GET answers of a server that offers no SDK listening stream. */
  function answerGet(res: ServerResponse): boolean {
    if (options.get === 'sdk') return false;
    if (options.get === '405') {
      // As the SDK 1.x stateless example answers a GET.
      res.setHeader('Allow', 'POST');
      sendJsonRpcError(res, 405, -32000, 'Method not allowed.');
      return true;
    }
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    // `close`: nothing at all. `retry`: the SDK's own priming event (an id, the retry, empty data).
    res.end(options.get === 'retry' ? `id: priming-${++primingSeq}\nretry: ${retryMs}\ndata: \n\n` : undefined);
    return true;
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, entry: LoopServerRequest): Promise<void> => {
    let body: unknown;
    if (req.method === 'POST') {
      try {
        body = JSON.parse(await readBody(req, BODY_LIMIT));
      } catch {
        sendJsonRpcError(res, 400, -32700, 'Parse error');
        return;
      }
      const first = (Array.isArray(body) ? body[0] : body) as { method?: unknown } | null;
      entry.rpc = typeof first?.method === 'string' ? first.method : undefined;
    }
    if (req.method === 'GET' && answerGet(res)) return;
    if (!options.sessions) {
      // A fresh transport per request: the SDK's stateless mode.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      const server = buildServer();
      res.once('close', () => void transport.close().then(() => server.close()));
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    if (entry.sessionId !== undefined) {
      const transport = sessions.get(entry.sessionId);
      if (!transport) {
        sendJsonRpcError(res, 404, -32001, 'Session not found');
        return;
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => void sessions.set(id, transport),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    await buildServer().connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const sockets = new Set<Socket>();
  const http = createServer((req, res) => {
    const entry: LoopServerRequest = {
      at: Date.now(),
      method: req.method ?? '',
      sessionId: header(req, HEADER_SESSION_ID),
      lastEventId: header(req, HEADER_LAST_EVENT_ID),
      rpc: undefined,
      status: undefined,
    };
    requests.push(entry);
    res.once('close', () => (entry.status = res.statusCode));
    handle(req, res, entry).catch(() => {
      if (!res.headersSent) sendJsonRpcError(res, 500, -32603, 'Internal error');
      else res.destroy();
    });
  });
  http.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = http.address() as AddressInfo;

  async function forgetSessions(): Promise<void> {
    const open = [...sessions.values()];
    sessions.clear();
    await Promise.all(open.map((transport) => transport.close().catch(() => undefined)));
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    retryMs,
    requests: () => requests.toArray(),
    forgetSessions,
    async close() {
      await forgetSessions();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
