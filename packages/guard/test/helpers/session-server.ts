import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/** One HTTP request the server received: its method, the session it named, and its JSON-RPC method. */
interface Received {
  readonly httpMethod: string;
  readonly sessionId: string | undefined;
  readonly rpc: string | undefined;
}

/**
 * An MCP server of SDK 1.32 parts (McpServer with one tool, `echo`; StreamableHTTPServerTransport) on
 * node:http, port 0, that records every HTTP request it receives.
 * - stateful: a transport per session; `forget(id)` drops a session as a restart does, and a request naming
 *   an unknown session is answered 404 with a JSON-RPC error whose message numbers the refusal
 *   ("Session not found (refusal 1)"), so a test can tell which of the server's answers the client saw;
 * - stateless: a transport per request, and a GET answered 405 (numbered the same way), as the SDK's
 *   stateless examples do.
 */
export interface SessionServer {
  url: string;
  received: Received[];
  /** Requests answered 404 or 405 by the server itself. */
  refusals: number;
  forget(sessionId: string): void;
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function newServer(): McpServer {
  const server = new McpServer({ name: 'session-server', version: '1.0.0' });
  server.registerTool('echo', { description: 'echoes' }, () => ({ content: [{ type: 'text', text: 'echoed' }] }));
  return server;
}

export async function startSessionServer(mode: 'stateful' | 'stateless'): Promise<SessionServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const all: StreamableHTTPServerTransport[] = [];
  const state: SessionServer = {
    url: '',
    received: [],
    refusals: 0,
    forget: (id) => void transports.delete(id),
    close: async () => {},
  };

  function refuse(res: ServerResponse, status: number, message: string): void {
    state.refusals++;
    const body = {
      jsonrpc: '2.0',
      error: { code: -32001, message: `${message} (refusal ${state.refusals})` },
      id: null,
    };
    res.writeHead(status, { 'content-type': 'application/json', 'x-refusal': String(state.refusals) });
    res.end(JSON.stringify(body));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    const text = req.method === 'POST' ? await bodyOf(req) : '';
    const body: unknown = text ? JSON.parse(text) : undefined;
    const rpc = (body as { method?: string } | undefined)?.method;
    state.received.push({ httpMethod: req.method!, sessionId, rpc });
    if (mode === 'stateless') {
      if (req.method === 'GET') return refuse(res, 405, 'Method not allowed');
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      all.push(transport);
      await newServer().connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (transport === undefined) {
      if (sessionId !== undefined) return refuse(res, 404, 'Session not found');
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void transports.set(id, created),
      });
      all.push(created);
      await newServer().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  }

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  state.close = async () => {
    for (const transport of all) await transport.close().catch(() => {});
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  return state;
}
