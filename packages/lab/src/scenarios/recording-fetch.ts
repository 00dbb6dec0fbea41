import { HEADER_LAST_EVENT_ID, HEADER_PROTOCOL_VERSION, readSse } from '@resumewatch/wire';
import type { FetchLike } from '../mcp-http-client.js';

export interface RecordedRequest {
  seq: number;
  at: number;
  method: string;
  /** JSON-RPC method of a POST body, or the kind of the message. */
  rpc: string | undefined;
  rpcId: string | number | undefined;
  lastEventId: string | undefined;
  /**
   * The `MCP-Protocol-Version` header the request carried: every session-era request after initialize,
   * and every 2026-07-28 request (the v2 client derives it from the request's `_meta` claim).
   */
  protocolVersion: string | undefined;
  /** A 2026-07-28 Multi Round-Trip retry: the body's params carry `inputResponses`. */
  inputResponses: boolean;
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

interface DescribedBody {
  rpc: string | undefined;
  rpcId: string | number | undefined;
  inputResponses: boolean;
}

function describeBody(body: unknown): DescribedBody {
  const none: DescribedBody = { rpc: undefined, rpcId: undefined, inputResponses: false };
  if (typeof body !== 'string') return none;
  try {
    const message = JSON.parse(body) as {
      method?: string;
      params?: { name?: string; inputResponses?: unknown };
      id?: string | number;
    };
    const rpc = message.method === 'tools/call' ? `tools/call ${message.params?.name ?? ''}` : message.method;
    return {
      rpc,
      rpcId: message.id,
      inputResponses: message.params?.inputResponses !== undefined,
    };
  } catch {
    return none;
  }
}

type RecordedMessage = {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  error?: unknown;
  result?: { content?: Array<{ text?: string }> };
};

/** Notes a message of a response body in `entry`; false when it is not a JSON-RPC message. */
function noteMessage(
  entry: RecordedRequest,
  message: RecordedMessage | undefined,
  eventId: string | undefined,
): boolean {
  if (!message || message.jsonrpc !== '2.0' || (message.method === undefined && message.id === undefined)) return false;
  if (message.error !== undefined) entry.errorResponses.push({ rpcId: message.id, eventId });
  if (message.error !== undefined || message.result !== undefined) {
    entry.responses.push({
      rpcId: message.id,
      eventId,
      error: message.error !== undefined,
      text: message.result?.content?.[0]?.text,
    });
  }
  return true;
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
      protocolVersion: headers.get(HEADER_PROTOCOL_VERSION) ?? undefined,
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
    // A JSON body (a 2026-07-28 answer without notifications, an error status): read from a clone.
    if (response.body && response.headers.get('content-type')?.includes('application/json')) {
      void response
        .clone()
        .json()
        .then(
          (data: unknown) => {
            for (const message of Array.isArray(data) ? data : [data])
              noteMessage(entry, message as RecordedMessage, undefined);
            entry.end = 'clean';
          },
          () => void (entry.end = 'error'),
        );
      return response;
    }
    if (!response.body || !response.headers.get('content-type')?.includes('text/event-stream')) return response;
    const [forCaller, forLog] = response.body.tee();
    readSse(forLog, (event) => {
      if (event.id !== undefined) entry.eventIds.push(event.id);
      let message: RecordedMessage | undefined;
      try {
        message = event.data ? (JSON.parse(event.data) as RecordedMessage) : undefined;
      } catch {
        message = undefined;
      }
      if (!noteMessage(entry, message, event.id) && (event.id !== undefined || event.data !== ''))
        entry.nonMessageEvents++;
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
