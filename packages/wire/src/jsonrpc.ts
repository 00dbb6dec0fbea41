import { META_PROTOCOL_VERSION } from '@resumewatch/semconv';

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}

interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}

interface JsonRpcResult {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: unknown;
}

export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  error: { code: number; message: string; data?: unknown };
}

export type JsonRpcResponse = JsonRpcResult | JsonRpcErrorResponse;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || typeof value === 'number';
}

export function isJsonRpcMessage(value: unknown): value is JsonRpcMessage {
  return isObject(value) && (typeof value.method === 'string' || 'result' in value || 'error' in value);
}

export function isRequest(message: JsonRpcMessage): message is JsonRpcRequest {
  return 'method' in message && 'id' in message && isId((message as JsonRpcRequest).id);
}

/** A response (result or error) to a request: the request's terminal event. */
export function isResponse(message: JsonRpcMessage): message is JsonRpcResponse {
  return !('method' in message) && ('result' in message || 'error' in message);
}

export function isErrorResponse(message: JsonRpcMessage): message is JsonRpcErrorResponse {
  return isResponse(message) && 'error' in message;
}

/** JSON-RPC messages in a parsed body: one message or a batch. Anything else gives none. */
function messagesOf(parsed: unknown): JsonRpcMessage[] {
  if (Array.isArray(parsed)) return parsed.filter(isJsonRpcMessage);
  return isJsonRpcMessage(parsed) ? [parsed] : [];
}

const utf8 = new TextDecoder();

/**
 * The JSON-RPC messages of a request body held in memory: text, or bytes (a proxy forwards the bytes it
 * received). A stream body is not read: it would have to be consumed.
 */
export function messagesOfBody(body: RequestInit['body'] | undefined): JsonRpcMessage[] {
  if (typeof body === 'string') return parseJsonBody(body);
  if (body instanceof Uint8Array) return parseMessages(utf8.decode(body));
  if (body instanceof ArrayBuffer) return parseMessages(utf8.decode(new Uint8Array(body)));
  return [];
}

/** Parses a body as JSON-RPC; text that is not JSON gives no messages. */
export function parseMessages(text: string): JsonRpcMessage[] {
  if (text.length === 0) return [];
  try {
    return messagesOf(JSON.parse(text));
  } catch {
    return [];
  }
}

/** The character a UTF-8 byte order mark decodes to. */
const BOM = 0xfeff;

/**
 * Parses a whole JSON body (`application/json`, a request's or a response's) as JSON-RPC, past one
 * leading byte order mark: what `fetch`'s `res.json()` and Python's `json.loads(bytes)` accept, so a
 * server that writes one is understood by its clients and must be by the observer (a body it could not
 * parse would leave each of its requests without a result: a false lost_result). An SSE event's data is
 * not a body: a client's JSON.parse refuses a mark there, and so does `parseMessages`. (A TextDecoder's
 * text has lost the mark already; a Buffer's keeps it.)
 */
export function parseJsonBody(text: string): JsonRpcMessage[] {
  return parseMessages(text.charCodeAt(0) === BOM ? text.slice(1) : text);
}

/** The target of an MCP request span: the tool, prompt or resource the request names. */
export function requestTarget(request: JsonRpcRequest): string | undefined {
  const params = request.params;
  if (!params) return undefined;
  if (typeof params.name === 'string') return params.name;
  if (typeof params.uri === 'string') return params.uri;
  return undefined;
}

/**
 * The protocol version a request claims in its `_meta` (the 2026-07-28 envelope): the first request of
 * the body that carries one.
 */
export function metaProtocolVersion(messages: readonly JsonRpcMessage[]): string | undefined {
  for (const message of messages) {
    const meta = 'params' in message ? message.params?._meta : undefined;
    const version = isObject(meta) ? meta[META_PROTOCOL_VERSION] : undefined;
    if (typeof version === 'string') return version;
  }
  return undefined;
}

/** The MCP notification a client sends to give a request up. */
const METHOD_NOTIFICATION_CANCELLED = 'notifications/cancelled';

const NO_IDS: readonly JsonRpcId[] = [];

/** The request id a `notifications/cancelled` names, if the message is one. */
export function cancelledRequestIds(message: JsonRpcMessage): readonly JsonRpcId[] {
  if (!('method' in message) || message.method !== METHOD_NOTIFICATION_CANCELLED || 'id' in message) return NO_IDS;
  const requestId = message.params?.requestId;
  return isId(requestId) ? [requestId] : NO_IDS;
}
