import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, vi } from 'vitest';

/** A plain in-memory event store: ids are `${streamId}_${seq}`; `clear()` loses everything (a restart). */
export class MemoryEventStore implements EventStore {
  private events: { id: string; streamId: string; message: JSONRPCMessage }[] = [];
  private seq = 0;
  /** Events sent by the last replay. */
  lastReplayed = 0;

  constructor(private readonly rejectUnknown = false) {
    if (rejectUnknown) this.getStreamIdForEventId = async (id) => this.events.find((e) => e.id === id)?.streamId;
  }

  getStreamIdForEventId?: (eventId: string) => Promise<string | undefined>;

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}_${++this.seq}`;
    this.events.push({ id, streamId, message });
    return id;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (id: string, m: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const streamId = lastEventId.slice(0, lastEventId.lastIndexOf('_'));
    const at = this.events.findIndex((e) => e.id === lastEventId);
    this.lastReplayed = 0;
    if (at < 0) return streamId;
    for (const event of this.events.slice(at + 1)) {
      if (event.streamId !== streamId || Object.keys(event.message).length === 0) continue;
      this.lastReplayed++;
      await send(event.id, event.message);
    }
    return streamId;
  }

  clear(): void {
    this.events = [];
  }
}

export interface SdkServerOptions {
  /** SSE `retry:` the transport advertises (and resumed streams' priming events carry). Default 50 ms. */
  retryInterval?: number;
  /**
   * Each new session's event store. Default: the server's one `store` (a `MemoryEventStore` shared by
   * every session), which `closeReplays` and `rejectUnknownCursors` concern.
   */
  store?: () => EventStore;
  /** End each replayed response after its replayed events, as the seed's server did (the shared store only). */
  closeReplays?: boolean;
  /** Answer 400 to a cursor the shared store does not hold (else: 200 and an empty replay). */
  rejectUnknownCursors?: boolean;
  /** Answer POSTs with JSON bodies instead of SSE streams. */
  jsonResponse?: boolean;
  /**
   * Start every resumed GET with a priming event carrying the client's cursor (SEP-1699: a server
   * SHOULD prime each stream it opens). The SDK 1.32 server primes POST and listening streams but not
   * resumed ones, and the SDK clients (1.x and v2) then reconnect after an empty poll without any
   * Last-Event-ID (they keep only ids seen on the current stream), which the server refuses with 409.
   */
  primeResumes?: boolean;
  /** No event store: the server's events carry no id, so no stream of it can be resumed. */
  noEventStore?: boolean;
  /**
   * Session-less (`sessionIdGenerator` undefined, the SDK's stateless mode): no Mcp-Session-Id, one
   * transport per POST, and GET and DELETE answered 405, as the SDK's stateless example does.
   */
  stateless?: boolean;
  /** Called with each new session's transport (its store made) before it connects (to instrument it). */
  onTransport?: (transport: StreamableHTTPServerTransport) => void;
}

/**
 * A server built only from MCP SDK 1.32 parts (low-level `Server`, `StreamableHTTPServerTransport`, an
 * `EventStore`) on node:http, port 0, with the tools that reproduce the traffic of real deployments:
 * - `stream_progress` {count, delay}: `count` progress updates `delay` ms apart (default 2, 5 ms), then the result.
 * - `fail`: a JSON-RPC error. `tool_error`: a result with `isError`.
 * - `quiet` {gapMs}: a progress update, `gapMs` of silence, another, then the result.
 * - `poll` {polls, detached}: closes its stream with `closeSSEStream` (SEP-1699) each time the client
 *   is back, `polls` times, then answers on the last reconnection; with `detached`, closes that one too
 *   and answers while the client is between polls (the response is stored for no connection, and the
 *   client's next poll replays it).
 * - `echo` {text}: answers at once.
 * - `slow` {ms}: a progress update, then the result after `ms` unless cancelled.
 */
export interface SdkServer {
  url: string;
  /** The event store shared by every session unless the `store` option gives each its own. */
  store: MemoryEventStore;
  /** GETs with Last-Event-ID that arrived, those answered (headers written), and those whose response has closed. */
  resumes: number;
  answeredResumes: number;
  closedResumes: number;
  /** While set, GETs with Last-Event-ID wait for it before reaching the transport. */
  holdResumes: Promise<void> | undefined;
  /** Destroy the socket of the next tools/call stream after this many SSE events were written to it. */
  cutNextCallAfter: number | undefined;
  /** Called when that cut happens (a restart that loses the buffer: `store.clear()`). */
  onCut: (() => void) | undefined;
  /** Cancellations the tools saw. */
  cancelled: number;
  /** Send a notification on a session's listening stream (stored in its event store). */
  notifyListening(sessionId: string): Promise<void>;
  /** Close a session's listening stream cleanly (SEP-1699); the client comes back with its cursor. */
  closeListening(sessionId: string): void;
  /** Forget every session (404 afterwards). */
  dropSessions(): void;
  close(): Promise<void>;
}

/** How the `poll` tool waits for its client to come back: bounded, generous for a loaded machine. */
const CLIENT_BACK = { timeout: 10_000, interval: 5 };

export async function startSdkServer(options: SdkServerOptions = {}): Promise<SdkServer> {
  const retryInterval = options.retryInterval ?? 50;
  const shared = new MemoryEventStore(options.rejectUnknownCursors);
  const newStore = options.store ?? (() => shared);
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers = new Map<string, Server>();

  const state: SdkServer = {
    url: '',
    store: shared,
    resumes: 0,
    answeredResumes: 0,
    closedResumes: 0,
    holdResumes: undefined,
    cutNextCallAfter: undefined,
    onCut: undefined,
    cancelled: 0,
    notifyListening: async (sessionId) => servers.get(sessionId)!.sendToolListChanged(),
    closeListening: (sessionId) => transports.get(sessionId)!.closeStandaloneSSEStream(),
    dropSessions: () => transports.clear(),
    close: async () => {},
  };

  /** Resolves once `condition` holds; throws (failing the tool call) if the client never comes back. */
  const clientBack = (condition: () => boolean, what: string): Promise<void> =>
    vi.waitFor(() => {
      if (!condition()) throw new Error(`sdk server: ${what}`);
    }, CLIENT_BACK);

  async function newSession(): Promise<StreamableHTTPServerTransport> {
    const server = new Server(
      { name: 'test-server', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: options.stateless ? undefined : randomUUID,
      eventStore: options.noEventStore ? undefined : newStore(),
      retryInterval,
      enableJsonResponse: options.jsonResponse ?? false,
      onsessioninitialized: (id) => {
        transports.set(id, transport);
        servers.set(id, server);
      },
    });
    options.onTransport?.(transport);
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const args = (request.params.arguments ?? {}) as {
        count?: number;
        delay?: number;
        gapMs?: number;
        polls?: number;
        detached?: boolean;
        text?: string;
        ms?: number;
      };
      const token = request.params._meta?.progressToken ?? String(extra.requestId);
      const progress = (n: number, total?: number) =>
        extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: n, ...(total ? { total } : {}) },
        });
      const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
      switch (request.params.name) {
        case 'stream_progress': {
          const count = args.count ?? 2;
          for (let n = 1; n <= count; n++) {
            await progress(n, count);
            await delay(args.delay ?? 5);
          }
          return text(`streamed ${count}`);
        }
        case 'fail':
          throw new McpError(ErrorCode.InternalError, 'fail');
        case 'tool_error':
          return { ...text('bad'), isError: true };
        case 'quiet':
          await progress(1);
          await delay(args.gapMs ?? 1500);
          await progress(2);
          return text('quiet done');
        case 'poll': {
          const polls = args.polls ?? 10;
          const base = state.resumes;
          extra.closeSSEStream!();
          for (let i = 1; i < polls; i++) {
            await clientBack(() => state.resumes >= base + i, `poll ${i}: the client is not back`);
            // The resumed stream registers once the store has replayed: close until it has closed.
            await clientBack(() => {
              if (state.closedResumes >= base + i) return true;
              extra.closeSSEStream!();
              return false;
            }, `poll ${i}: the stream stays open`);
          }
          // Answered means registered: the transport maps the resumed stream before it writes the headers.
          await clientBack(() => state.answeredResumes >= base + polls, 'the last poll is not answered');
          if (args.detached) {
            // Registered, so one close ends it; the answer then waits for no connection.
            extra.closeSSEStream!();
            await clientBack(() => state.closedResumes >= base + polls, 'the last poll stays open');
          }
          return text(`polled ${polls}`);
        }
        case 'echo':
          return text(args.text ?? '');
        case 'slow': {
          await progress(1);
          // Real time unless the client cancels the request.
          await delay(args.ms ?? 2000, undefined, { signal: extra.signal }).catch(() => undefined);
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
    if (options.stateless && req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (typeof sessionId === 'string' && !transport) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
      return;
    }
    const cursor = req.headers['last-event-id'];
    if (req.method === 'GET' && typeof cursor === 'string') {
      state.resumes++;
      res.on('close', () => void state.closedResumes++);
      afterHeaders(res, () => {
        state.answeredResumes++;
        if (options.primeResumes && res.statusCode === 200)
          res.write(`id: ${cursor}\nretry: ${retryInterval}\ndata: \n\n`);
      });
      if (options.closeReplays) endAfterReplay(res, shared);
      if (state.holdResumes) await state.holdResumes;
    }
    let body: unknown;
    if (req.method === 'POST') {
      let text = '';
      for await (const chunk of req) text += chunk;
      body = JSON.parse(text);
      if ((body as { method?: string }).method === 'tools/call' && state.cutNextCallAfter !== undefined) {
        cutAfter(res, state.cutNextCallAfter, state.onCut);
        state.cutNextCallAfter = undefined;
      }
    }
    transport ??= await newSession();
    if (options.stateless) {
      // One transport per request (the SDK refuses to reuse a stateless one), closed with its response.
      const once = transport;
      res.on('close', () => void once.close().catch(() => undefined));
    }
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

/** For a test file: a starter of SDK servers, each closed after the test that started it. */
export function sdkServerPerTest(): (options?: SdkServerOptions) => Promise<SdkServer> {
  const started: SdkServer[] = [];
  afterEach(async () => {
    for (const server of started.splice(0).reverse()) await server.close();
  });
  return async (options = {}) => {
    const server = await startSdkServer(options);
    started.push(server);
    return server;
  };
}

function countEvents(chunk: unknown): number {
  const text =
    typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString('utf8') : '';
  return text.split('\nid: ').length - 1 + (text.startsWith('id: ') ? 1 : 0);
}

/** Destroys the response's socket (after `onCut`) shortly after `events` SSE events were written to it. */
function cutAfter(res: ServerResponse, events: number, onCut: (() => void) | undefined): void {
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  let seen = 0;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (seen >= events) return true;
    const accepted = write(chunk, ...rest);
    seen += countEvents(chunk);
    if (seen >= events) {
      setTimeout(() => {
        onCut?.();
        res.socket?.destroy();
      }, 10);
    }
    return accepted;
  }) as ServerResponse['write'];
}

function afterHeaders(res: ServerResponse, then: () => void): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((...args: unknown[]) => {
    const out = writeHead(...args);
    then();
    return out;
  }) as ServerResponse['writeHead'];
}

/** The SDK keeps replayed streams open; this ends one once the store's replayed events are written. */
function endAfterReplay(res: ServerResponse, store: MemoryEventStore): void {
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  let seen = 0;
  const endIfDone = (): void => {
    if (seen >= store.lastReplayed && !res.writableEnded) setImmediate(() => res.end());
  };
  afterHeaders(res, endIfDone);
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (res.writableEnded) return true;
    const accepted = write(chunk, ...rest);
    seen += countEvents(chunk);
    endIfDone();
    return accepted;
  }) as ServerResponse['write'];
}
