import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import type { McpServer } from '@modelcontextprotocol/server';
import { BoundedMap } from '@resumewatch/bounded';
import { HEADER_SESSION_ID } from '@resumewatch/wire';
import { BoundedEventStore } from '../event-store.js';

/**
 * The session era (2025-11-25 and before) on the v2 SDK, as its docs say to keep it next to a
 * 2026-07-28 endpoint: the SDK's own sessionful `WebStandardStreamableHTTPServerTransport`, one per
 * session, with a bounded event store, so a session-era client gets a session, a GET stream and
 * `Last-Event-ID` resumption. A fetch-shaped handler, as `createMcpHandler`'s `fetch` is.
 */
export class LegacySessions {
  private readonly sessions = new BoundedMap<string, WebStandardStreamableHTTPServerTransport>(1000, 1_800_000);

  constructor(
    private readonly createServer: () => McpServer,
    private readonly retryIntervalMs: number,
  ) {}

  readonly fetch = async (request: Request): Promise<Response> => {
    const sessionId = request.headers.get(HEADER_SESSION_ID);
    if (sessionId !== null) {
      const transport = this.sessions.get(sessionId);
      if (transport) return transport.handleRequest(request);
      return Response.json(
        { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null },
        { status: 404 },
      );
    }
    // No session: only an initialize opens one (the transport answers anything else 400 itself).
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new BoundedEventStore(),
      retryInterval: this.retryIntervalMs,
      onsessioninitialized: (id) => void this.sessions.set(id, transport),
      onsessionclosed: (id) => void this.sessions.delete(id),
    });
    await this.createServer().connect(transport);
    return transport.handleRequest(request);
  };

  /** Sessions still held. */
  get size(): number {
    return this.sessions.size;
  }

  /** Closes every session (a deploy that drops them). */
  async closeAll(): Promise<void> {
    const open = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(open.map((transport) => transport.close()));
  }
}
