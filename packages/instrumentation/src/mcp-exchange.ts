import { HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID, messagesOfBody } from '@resumewatch/wire';

/**
 * Recognises an MCP Streamable HTTP exchange from the arguments of a `fetch` call, before it is sent,
 * without reading any stream: the session or protocol-version header, or (the initialize request,
 * which has neither) an `Accept` naming `text/event-stream` on a request whose in-memory body is
 * JSON-RPC. Everything else is not MCP. The common case (no MCP header, no SSE accept) costs a few
 * header look-ups and allocates nothing.
 */

type FetchInput = string | URL | Request;
type HeaderSource = RequestInit['headers'] | Headers;

const SSE = 'text/event-stream';
const ACCEPT = 'accept';

export interface McpExchange {
  /** The server's origin: session ids are only unique per server. */
  origin: string;
  /** The session the request presents, if any (initialize has none). */
  sessionId: string | undefined;
}

/** The exchange, when the call is an MCP Streamable HTTP request; undefined for any other fetch. */
export function recogniseMcpExchange(input: FetchInput, init: RequestInit | undefined): McpExchange | undefined {
  // fetch(request, init): init's headers replace the request's.
  const headers: HeaderSource = init?.headers ?? (input instanceof Request ? input.headers : undefined);
  if (headers === undefined) return undefined;
  const sessionId = headerOf(headers, HEADER_SESSION_ID);
  if (sessionId === undefined && headerOf(headers, HEADER_PROTOCOL_VERSION) === undefined) {
    const accept = headerOf(headers, ACCEPT);
    if (accept === undefined || !accept.includes(SSE)) return undefined;
    if (!hasJsonRpcBody(init?.body)) return undefined;
  }
  const origin = originOf(input);
  return origin === undefined ? undefined : { origin, sessionId };
}

/** A header of any HeadersInit form, by its lower-case name. */
function headerOf(headers: HeaderSource, name: string): string | undefined {
  if (headers === undefined) return undefined;
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  if (Array.isArray(headers)) {
    for (const pair of headers) if (pair[0]?.toLowerCase() === name) return pair[1];
    return undefined;
  }
  const record = headers as Record<string, string | undefined>;
  const exact = record[name];
  if (exact !== undefined) return exact;
  for (const key in record) if (key.length === name.length && key.toLowerCase() === name) return record[key];
  return undefined;
}

/** Only bodies already in memory are looked at: a stream body would have to be consumed. */
function hasJsonRpcBody(body: RequestInit['body'] | undefined): boolean {
  return messagesOfBody(body).length > 0;
}

function originOf(input: FetchInput): string | undefined {
  if (input instanceof URL) return input.origin;
  const url = typeof input === 'string' ? input : input.url;
  return URL.canParse(url) ? new URL(url).origin : undefined;
}
