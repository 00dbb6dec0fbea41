import { HEADER_LAST_EVENT_ID, readSse } from '@resumewatch/wire';
import type { FetchLike } from '../mcp-http-client.js';

export interface RecordedRequest {
  seq: number;
  at: number;
  method: string;
  /** JSON-RPC method of a POST body, or the kind of the message. */
  rpc: string | undefined;
  rpcId: string | number | undefined;
  lastEventId: string | undefined;
  status: number | undefined;
  /** Ids of the SSE events the response carried. */
  eventIds: string[];
  /** Ids (JSON-RPC id -> SSE event id) of the error responses the response carried. */
  errorResponses: Array<{ rpcId: unknown; eventId: string | undefined }>;
}

function describeBody(body: unknown): { rpc: string | undefined; rpcId: string | number | undefined } {
  if (typeof body !== 'string') return { rpc: undefined, rpcId: undefined };
  try {
    const message = JSON.parse(body) as { method?: string; params?: { name?: string }; id?: string | number };
    const rpc = message.method === 'tools/call' ? `tools/call ${message.params?.name ?? ''}` : message.method;
    return { rpc, rpcId: message.id };
  } catch {
    return { rpc: undefined, rpcId: undefined };
  }
}

/**
 * Wraps a fetch and records every request and the SSE events of every response, without changing
 * what the caller sees: an event-stream body is teed, one branch goes back unchanged.
 */
export function recordingFetch(inner: FetchLike, log: RecordedRequest[], cap = 1000): FetchLike {
  return async (input, init) => {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const entry: RecordedRequest = {
      seq: log.length,
      at: Date.now(),
      method: init?.method ?? (input instanceof Request ? input.method : 'GET'),
      ...describeBody(init?.body),
      lastEventId: headers.get(HEADER_LAST_EVENT_ID) ?? undefined,
      status: undefined,
      eventIds: [],
      errorResponses: [],
    };
    if (log.length < cap) log.push(entry);
    const response = await inner(input, init);
    entry.status = response.status;
    if (!response.body || !response.headers.get('content-type')?.includes('text/event-stream')) return response;
    const [forCaller, forLog] = response.body.tee();
    readSse(forLog, (event) => {
      if (event.id !== undefined) entry.eventIds.push(event.id);
      if (!event.data) return;
      try {
        const message = JSON.parse(event.data) as { id?: unknown; error?: unknown };
        if (message.error !== undefined) entry.errorResponses.push({ rpcId: message.id, eventId: event.id });
      } catch {
        // Not JSON: nothing to record beyond the id.
      }
    }).catch(() => undefined);
    return new Response(forCaller, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
