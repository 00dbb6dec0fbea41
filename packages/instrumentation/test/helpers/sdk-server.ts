import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach } from 'vitest';

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

  async replayEventsAfter(lastEventId: string, { send }: { send: (id: string, m: JSONRPCMessage) => Promise<void> }): Promise<string> {
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
  /** SSE `retry:` the transport advertises; small values keep SDK reconnects fast. */
  retryInterval?: number;
  /** End each replayed response after its replayed events, as the seed's server did. */
  closeReplays?: boolean;
  /** Answer 400 to a cursor the store does not hold (else: 200 and an empty replay). */
  rejectUnknownCursors?: boolean;
  /** Answer POSTs with JSON bodies instead of SSE streams. */
  jsonResponse?: boolean;
  /** Called with the store once, and with each session's transport before it connects. */
  instrumentStore?: (store: MemoryEventStore) => void;
  instrumentTransport?: (transport: StreamableHTTPServerTransport) => void;
}

export interface SdkServer {
  url: string;
  store: MemoryEventStore;
  /** Destroy the socket of the next tools/call stream after this many events were written to it. */
  cutNextCallAfter: number | undefined;
  /** Called when that cut happens (a restart that loses the buffer: `store.clear()`). */
  onCut: (() => void) | undefined;
  /** Forget every session (404 afterwards). */
  dropSessions(): void;
  close(): Promise<void>;
}

/** The real SDK server (low-level Server, StreamableHTTPServerTransport) on node:http, port 0. */
export async function startSdkServer(options: SdkServerOptions = {}): Promise<SdkServer> {
  const store = new MemoryEventStore(options.rejectUnknownCursors);
  options.instrumentStore?.(store);
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const state: SdkServer = {
    url: '',
    store,
    cutNextCallAfter: undefined,
    onCut: undefined,
    dropSessions: () => transports.clear(),
    close: async () => {},
  };

  async function newSession(): Promise<StreamableHTTPServerTransport> {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      eventStore: store,
      retryInterval: options.retryInterval ?? 50,
      enableJsonResponse: options.jsonResponse ?? false,
      onsessioninitialized: (id) => void transports.set(id, transport),
    });
    const server = new Server({ name: 'test-server', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const args = (request.params.arguments ?? {}) as { count?: number; delay?: number };
      if (request.params.name === 'fail') throw new McpError(ErrorCode.InternalError, 'fail');
      if (request.params.name === 'tool_error') return { content: [{ type: 'text', text: 'bad' }], isError: true };
      const count = args.count ?? 2;
      for (let progress = 1; progress <= count; progress++) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: String(extra.requestId), progress, total: count } });
        await new Promise((r) => setTimeout(r, args.delay ?? 5));
      }
      return { content: [{ type: 'text', text: `streamed ${count}` }] };
    });
    options.instrumentTransport?.(transport);
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
    if (req.method === 'GET' && req.headers['last-event-id'] && options.closeReplays) endAfterReplay(res, store);
    transport ??= await newSession();
    await transport.handleRequest(req, res, body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  state.close = async () => {
    for (const transport of transports.values()) await transport.close().catch(() => {});
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
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
  const text = typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString('utf8') : '';
  return text.split('\nid: ').length - 1 + (text.startsWith('id: ') ? 1 : 0);
}

export function cutAfter(res: ServerResponse, events: number, onCut: (() => void) | undefined): void {
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

/** The SDK keeps replayed streams open; this ends one once the store's replayed events are written. */
function endAfterReplay(res: ServerResponse, store: MemoryEventStore): void {
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  let seen = 0;
  const endIfDone = (): void => {
    if (seen >= store.lastReplayed && !res.writableEnded) setImmediate(() => res.end());
  };
  res.writeHead = ((...args: unknown[]) => {
    const out = writeHead(...args);
    endIfDone();
    return out;
  }) as ServerResponse['writeHead'];
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (res.writableEnded) return true;
    const accepted = write(chunk, ...rest);
    seen += countEvents(chunk);
    endIfDone();
    return accepted;
  }) as ServerResponse['write'];
}
