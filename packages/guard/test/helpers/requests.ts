/** Streamable HTTP requests written by hand, for the wire patterns an SDK client does not produce. */
export const jsonHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export function post(body: object, sessionId?: string): RequestInit {
  return {
    method: 'POST',
    headers: { ...jsonHeaders, ...(sessionId ? { 'mcp-session-id': sessionId } : {}) },
    body: JSON.stringify(body),
  };
}

export function resumeInit(sessionId: string, lastEventId: string): RequestInit {
  return { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId, 'last-event-id': lastEventId } };
}
