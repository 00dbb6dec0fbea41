import type { FetchLike } from '../../src/index.js';

/** Streamable HTTP requests written by hand, for the wire patterns an SDK client does not produce. */
const jsonHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export function post(body: object, sessionId?: string): RequestInit {
  return {
    method: 'POST',
    headers: { ...jsonHeaders, ...(sessionId ? { 'mcp-session-id': sessionId } : {}) },
    body: JSON.stringify(body),
  };
}

export function resumeInit(sessionId: string, lastEventId: string): RequestInit {
  return {
    method: 'GET',
    headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId, 'last-event-id': lastEventId },
  };
}

/** Initializes a session against the test server; returns its session id. */
export async function initialize(fetch: FetchLike, url: string): Promise<string> {
  const response = await fetch(url, post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }));
  await response.text();
  return response.headers.get('mcp-session-id')!;
}
