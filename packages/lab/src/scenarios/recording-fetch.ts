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
  /** Every response (result or error) the response carried, in order, with its first text content. */
  responses: Array<{ rpcId: unknown; eventId: string | undefined; error: boolean; text: string | undefined }>;
  /** SSE events whose data is not a JSON-RPC message (priming events' empty data, `{}`). */
  nonMessageEvents: number;
  /** How the event-stream body ended, once it has: `clean` or `error` (cut, abort). */
  end: 'clean' | 'error' | undefined;
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
      responses: [],
      nonMessageEvents: 0,
      end: undefined,
    };
    if (log.length < cap) log.push(entry);
    const response = await inner(input, init);
    entry.status = response.status;
    if (!response.body || !response.headers.get('content-type')?.includes('text/event-stream')) return response;
    const [forCaller, forLog] = response.body.tee();
    readSse(forLog, (event) => {
      if (event.id !== undefined) entry.eventIds.push(event.id);
      let message:
        | {
            jsonrpc?: unknown;
            id?: unknown;
            method?: unknown;
            error?: unknown;
            result?: { content?: Array<{ text?: string }> };
          }
        | undefined;
      try {
        message = event.data ? (JSON.parse(event.data) as typeof message) : undefined;
      } catch {
        message = undefined;
      }
      if (!message || message.jsonrpc !== '2.0' || (message.method === undefined && message.id === undefined)) {
        if (event.id !== undefined || event.data !== '') entry.nonMessageEvents++;
        return;
      }
      if (message.error !== undefined) entry.errorResponses.push({ rpcId: message.id, eventId: event.id });
      if (message.error !== undefined || message.result !== undefined) {
        entry.responses.push({
          rpcId: message.id,
          eventId: event.id,
          error: message.error !== undefined,
          text: message.result?.content?.[0]?.text,
        });
      }
    }).then(
      () => void (entry.end = 'clean'),
      () => void (entry.end = 'error'),
    );
    return new Response(forCaller, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
