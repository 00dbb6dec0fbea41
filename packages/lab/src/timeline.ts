import { HEADER_LAST_EVENT_ID, HEADER_SESSION_ID } from '@resumewatch/wire';
import type { FetchLike } from './mcp-http-client.js';

/**
 * A run's timeline as the client's fetch saw it: which request got its terminal response (result or
 * error) when and on which HTTP response, every reconnect with the cursor it sent, what each resume
 * replayed, and how the request ended. It reads only the wire (headers, JSON-RPC bodies, SSE events),
 * so it works for every scenario and any fetch wrapper inside it. A reporting tool for one run, not a
 * hot path: it parses each SSE event's data once.
 */

/** One HTTP exchange of the MCP endpoint. */
export interface TimelineExchange {
  /** Order of the request, from 0. */
  seq: number;
  /** Ms since the first exchange of the timeline. */
  at: number;
  method: string;
  sessionId: string | undefined;
  /** JSON-RPC method and id of a POSTed request. */
  rpcMethod: string | undefined;
  rpcId: string | undefined;
  /** The cursor a GET sent. */
  lastEventId: string | undefined;
  /** undefined: the fetch rejected (see `rejected`). */
  status: number | undefined;
  /** Why the fetch rejected, e.g. a guard refusing the resume in the process. */
  rejected: string | undefined;
  /** SSE events seen on the response. */
  events: number;
  /** Ids of those events (the first 1000): a later resume is traced back to its request by its cursor. */
  eventIds: string[];
  /** Ids of the JSON-RPC responses (terminal events) the response carried, with their event id and when. */
  terminals: Array<{ rpcId: string; eventId: string | undefined; at: number; error: boolean }>;
  /** true once the body was read to its end. */
  endedCleanly: boolean;
}

export interface RequestTimeline {
  sessionId: string | undefined;
  rpcId: string;
  rpcMethod: string | undefined;
  /** The POST of the request, then every exchange that resumed one of its streams, in order. */
  exchanges: TimelineExchange[];
  /** Deliveries of the terminal response, over all exchanges. */
  terminalDeliveries: number;
  /** Resumes sent (or attempted) after the terminal response had been delivered. */
  resumesAfterTerminal: number;
}

/** The first exchanges of a run, not the last (a timeline is read from its start): no RecentList here. */
const MAX_EXCHANGES = 10_000;

export class RunTimeline {
  readonly exchanges: TimelineExchange[] = [];
  /** Exchanges not recorded because the cap was reached. */
  dropped = 0;
  private started: number | undefined;

  /** Wraps `inner`: every exchange is recorded; what the caller sees is unchanged. */
  wrap(inner: FetchLike): FetchLike {
    return async (input, init) => {
      const now = Date.now();
      this.started ??= now;
      const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
      const rpc = describeRequest(init?.body);
      const entry: TimelineExchange = {
        seq: this.exchanges.length + this.dropped,
        at: now - this.started,
        method: (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase(),
        sessionId: headers.get(HEADER_SESSION_ID) ?? undefined,
        rpcMethod: rpc?.method,
        rpcId: rpc?.id,
        lastEventId: headers.get(HEADER_LAST_EVENT_ID) ?? undefined,
        status: undefined,
        rejected: undefined,
        events: 0,
        eventIds: [],
        terminals: [],
        endedCleanly: false,
      };
      if (this.exchanges.length < MAX_EXCHANGES) this.exchanges.push(entry);
      else this.dropped++;
      let response: Response;
      try {
        response = await inner(input, init);
      } catch (error) {
        entry.rejected = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        throw error;
      }
      entry.status = response.status;
      entry.sessionId ??= response.headers.get(HEADER_SESSION_ID) ?? undefined;
      const type = response.headers.get('content-type') ?? '';
      if (!response.body || !type.includes('text/event-stream')) {
        entry.endedCleanly = true;
        return response;
      }
      // Observed as it passes through, so cancelling or aborting the caller's body still reaches the source.
      const parser = new SseObserver((id, data) => this.onEvent(entry, id, data));
      const observed = response.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform: (chunk, controller) => {
            parser.push(chunk);
            controller.enqueue(chunk);
          },
          flush: () => {
            parser.end();
            entry.endedCleanly = true;
          },
        }),
      );
      return new Response(observed, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    };
  }

  private onEvent(entry: TimelineExchange, id: string | undefined, data: string): void {
    entry.events++;
    if (id !== undefined && entry.eventIds.length < 1000) entry.eventIds.push(id);
    if (!data.includes('"id"')) return;
    try {
      const message = JSON.parse(data) as { id?: unknown; result?: unknown; error?: unknown; method?: unknown };
      if (message.method !== undefined || (message.result === undefined && message.error === undefined)) return;
      if (typeof message.id !== 'string' && typeof message.id !== 'number') return;
      if (entry.terminals.length < 100) {
        entry.terminals.push({
          rpcId: String(message.id),
          eventId: id,
          at: Date.now() - (this.started ?? Date.now()),
          error: message.error !== undefined,
        });
      }
    } catch {
      // Not JSON: not a terminal response.
    }
  }

  /**
   * Every JSON-RPC request with its exchanges: its POST, and each GET whose cursor is an event of one
   * of its streams (the POST's response or an earlier resume of it).
   */
  requests(): RequestTimeline[] {
    const byKey = new Map<string, RequestTimeline>();
    const owner = new Map<string, RequestTimeline>();
    for (const x of this.exchanges) {
      let request: RequestTimeline | undefined;
      if (x.method === 'POST' && x.rpcId !== undefined) {
        request = {
          sessionId: x.sessionId,
          rpcId: x.rpcId,
          rpcMethod: x.rpcMethod,
          exchanges: [],
          terminalDeliveries: 0,
          resumesAfterTerminal: 0,
        };
        byKey.set(`${x.sessionId ?? ''}\n${x.rpcId}`, request);
      } else if (x.lastEventId !== undefined) {
        request = owner.get(`${x.sessionId ?? ''}\n${x.lastEventId}`);
        if (request && request.terminalDeliveries > 0) request.resumesAfterTerminal++;
      }
      if (!request) continue;
      request.exchanges.push(x);
      for (const t of x.terminals) if (t.rpcId === request.rpcId) request.terminalDeliveries++;
      for (const eventId of x.eventIds) owner.set(`${x.sessionId ?? ''}\n${eventId}`, request);
    }
    return [...byKey.values()];
  }

  /** Requests whose terminal response arrived more than once, or that were resumed after it. */
  wentWrong(): RequestTimeline[] {
    return this.requests().filter((r) => r.terminalDeliveries > 1 || r.resumesAfterTerminal > 0);
  }
}

function describeRequest(body: unknown): { method: string | undefined; id: string | undefined } | undefined {
  if (typeof body !== 'string' || !body.includes('"method"')) return undefined;
  try {
    const message = JSON.parse(body) as { method?: unknown; id?: unknown; params?: { name?: unknown } };
    if (typeof message.method !== 'string') return undefined;
    const method =
      message.method === 'tools/call' && typeof message.params?.name === 'string'
        ? `tools/call ${message.params.name}`
        : message.method;
    const id = typeof message.id === 'string' || typeof message.id === 'number' ? String(message.id) : undefined;
    return { method, id };
  } catch {
    return undefined;
  }
}

/** Incremental SSE field reader: `id:` and `data:` of each event, dispatched on the blank line. */
class SseObserver {
  private readonly decoder = new TextDecoder();
  private buffer = '';
  private id: string | undefined;
  private data: string[] = [];
  private any = false;

  constructor(private readonly onEvent: (id: string | undefined, data: string) => void) {}

  push(chunk: Uint8Array): void {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    let start = 0;
    for (;;) {
      const nl = this.buffer.indexOf('\n', start);
      if (nl < 0) break;
      let line = this.buffer.slice(start, nl);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      start = nl + 1;
      this.line(line);
    }
    this.buffer = this.buffer.slice(start);
  }

  end(): void {
    this.buffer += this.decoder.decode();
    if (this.buffer !== '') this.line(this.buffer);
    this.line('');
  }

  private line(line: string): void {
    if (line === '') {
      if (this.any) this.onEvent(this.id, this.data.join('\n'));
      this.id = undefined;
      this.data = [];
      this.any = false;
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'id') {
      this.id = value;
      this.any = true;
    } else if (field === 'data') {
      this.data.push(value);
      this.any = true;
    }
  }
}
