import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach } from 'vitest';
import { MemoryEventStore, cutAfter } from './sdk-server.js';

/**
 * A server built only from MCP SDK 1.32 parts (low-level `Server`, `StreamableHTTPServerTransport`,
 * a pluggable `EventStore`) with the tools that reproduce traffic real deployments produce:
 * - `quiet` {gapMs}: a progress update, `gapMs` of silence, another, then the result.
 * - `poll` {polls, detached}: closes its stream with `closeSSEStream` (SEP-1699) each time the client
 *   is back, `polls` times, then answers on the last reconnection; with `detached`, closes that one too
 *   and answers while the client is between polls (the response is stored for no connection, and the
 *   client's next poll replays it).
 * - `echo` {text}: answers at once.
 * - `slow` {ms}: a progress update, then the result after `ms` unless cancelled.
 */
export interface PeerServer {
  url: string;
  /** GETs with Last-Event-ID that arrived, those answered (headers written), and those whose response has closed. */
  resumes: number;
  answeredResumes: number;
  closedResumes: number;
  /** While set, GETs with Last-Event-ID wait for it before reaching the transport. */
  holdResumes: Promise<void> | undefined;
  /** Destroy the socket of the next tools/call stream after this many SSE events were written to it. */
  cutNextCallAfter: number | undefined;
  /** Cancellations the tools saw. */
  cancelled: number;
  /** Send a notification on a session's listening stream (stored in its event store). */
  notifyListening(sessionId: string): Promise<void>;
  /** Close a session's listening stream cleanly (SEP-1699); the client comes back with its cursor. */
  closeListening(sessionId: string): void;
  close(): Promise<void>;
}

export interface PeerServerOptions {
  /** The event store of each new session; default a store per stream (correct). */
  store?: () => EventStore;
  /** `retry:` of priming events. Default 20 ms. */
  retryInterval?: number;
  /**
   * Start every resumed GET with a priming event carrying the client's cursor (SEP-1699: a server
   * SHOULD prime each stream it opens). The SDK 1.32 server primes POST and listening streams but not
   * resumed ones, and the SDK clients (1.x and v2) then reconnect after an empty poll without any
   * Last-Event-ID (they keep only ids seen on the current stream), which the server refuses with 409.
   */
  primeResumes?: boolean;
  /** Called with each new session's transport before it handles its first request (to instrument it). */
  onTransport?: (transport: StreamableHTTPServerTransport) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('peer server: condition not met in time');
    await sleep(5);
  }
}

async function startPeerServer(options: PeerServerOptions = {}): Promise<PeerServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers = new Map<string, Server>();
  const newStore = options.store ?? (() => new MemoryEventStore());

  const state: PeerServer = {
    url: '',
    resumes: 0,
    answeredResumes: 0,
    closedResumes: 0,
    holdResumes: undefined,
    cutNextCallAfter: undefined,
    cancelled: 0,
    notifyListening: async (sessionId) => servers.get(sessionId)!.sendToolListChanged(),
    closeListening: (sessionId) => transports.get(sessionId)!.closeStandaloneSSEStream(),
    close: async () => {},
  };

  async function newSession(): Promise<StreamableHTTPServerTransport> {
    const server = new Server({ name: 'peer', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      eventStore: newStore(),
      retryInterval: options.retryInterval ?? 20,
      onsessioninitialized: (id) => {
        transports.set(id, transport);
        servers.set(id, server);
      },
    });
    options.onTransport?.(transport);
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const args = (request.params.arguments ?? {}) as { gapMs?: number; polls?: number; detached?: boolean; text?: string; ms?: number };
      const token = request.params._meta?.progressToken ?? String(extra.requestId);
      const progress = (n: number) => extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: n } });
      const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
      switch (request.params.name) {
        case 'quiet':
          await progress(1);
          await sleep(args.gapMs ?? 1500);
          await progress(2);
          return text('quiet done');
        case 'poll': {
          const polls = args.polls ?? 10;
          const base = state.resumes;
          extra.closeSSEStream!();
          for (let i = 1; i < polls; i++) {
            await until(() => state.resumes >= base + i);
            // The resumed stream registers once the store has replayed: close until it has closed.
            while (state.closedResumes < base + i) {
              extra.closeSSEStream!();
              await sleep(10);
            }
          }
          // Answered means registered: the transport maps the resumed stream before it writes the headers.
          await until(() => state.answeredResumes >= base + polls);
          if (args.detached) {
            // Registered, so one close ends it; the answer then waits for no connection.
            extra.closeSSEStream!();
            await until(() => state.closedResumes >= base + polls);
          }
          return text(`polled ${polls}`);
        }
        case 'echo':
          return text(args.text ?? '');
        case 'slow': {
          await progress(1);
          const end = Date.now() + (args.ms ?? 2000);
          while (Date.now() < end && !extra.signal.aborted) await sleep(10);
          if (extra.signal.aborted) state.cancelled++;
          return text('slow done');
        }
        default:
          throw new Error(`unknown tool ${request.params.name}`);
      }
    });
    await server.connect(transport);
    return transport;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (typeof sessionId === 'string' && !transport) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
      return;
    }
    const cursor = req.headers['last-event-id'];
    if (req.method === 'GET' && typeof cursor === 'string') {
      state.resumes++;
      res.on('close', () => void state.closedResumes++);
      afterHeaders(res, () => {
        state.answeredResumes++;
        if (options.primeResumes && res.statusCode === 200) res.write(`id: ${cursor}\nretry: ${options.retryInterval ?? 20}\ndata: \n\n`);
      });
      if (state.holdResumes) await state.holdResumes;
    }
    let body: unknown;
    if (req.method === 'POST') {
      let text = '';
      for await (const chunk of req) text += chunk;
      body = JSON.parse(text);
      if ((body as { method?: string }).method === 'tools/call' && state.cutNextCallAfter !== undefined) {
        cutAfter(res, state.cutNextCallAfter, undefined);
        state.cutNextCallAfter = undefined;
      }
    }
    transport ??= await newSession();
    await transport.handleRequest(req, res, body);
  }

  const http = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  state.close = async () => {
    for (const transport of transports.values()) await transport.close().catch(() => {});
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  return state;
}

function afterHeaders(res: ServerResponse, then: () => void): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((...args: unknown[]) => {
    const out = writeHead(...args);
    then();
    return out;
  }) as ServerResponse['writeHead'];
}

/** For a test file: peer servers closed after the test that started them. */
export function peerServerPerTest(): (options?: PeerServerOptions) => Promise<PeerServer> {
  const started: PeerServer[] = [];
  afterEach(async () => {
    for (const server of started.splice(0).reverse()) await server.close();
  });
  return async (options = {}) => {
    const server = await startPeerServer(options);
    started.push(server);
    return server;
  };
}
