import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { readBody, sendJson } from './http-util.js';
import type { EvictReport, LabServerState, RequestLogEntry, RestartReport } from './lab-server/types.js';

export interface LabControl {
  restart(keep?: Socket): Promise<RestartReport>;
  evictCursor(sessionId: string, eventId: string): EvictReport | undefined;
  state(): LabServerState;
  requestLog(sessionId?: string): RequestLogEntry[];
  sideEffectCount(key: string): number;
}

/**
 * The control endpoint (loopback-only; the caller checks the remote address):
 *   POST /control/restart                       lose every buffer and transport, keep session ids
 *   POST /control/evict {sessionId, eventId}    evict the stream a cursor belongs to
 *   GET  /control/state                         generation, sessions, event store counts, recent replays
 *   GET  /control/requests[?sessionId=]         recent requests seen on /mcp
 *   GET  /control/side-effects?key=K            how many times `side_effect` charged K
 */
export async function handleControlRequest(
  control: LabControl,
  route: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://lab');
  // Control answers close their connection: a restart cuts every other one, and a client must not
  // reuse a pooled connection that is being cut.
  const close = { connection: 'close' };
  if (req.method === 'POST' && route === '/restart') {
    return sendJson(res, 200, await control.restart(req.socket), close);
  }
  if (req.method === 'POST' && route === '/evict') {
    let body: { sessionId?: unknown; eventId?: unknown };
    try {
      body = JSON.parse(await readBody(req, 64 * 1024)) as typeof body;
    } catch {
      return sendJson(res, 400, { error: 'body must be JSON {sessionId, eventId}' }, close);
    }
    if (typeof body.sessionId !== 'string' || typeof body.eventId !== 'string') {
      return sendJson(res, 400, { error: 'body must be JSON {sessionId, eventId}' }, close);
    }
    const report = control.evictCursor(body.sessionId, body.eventId);
    return report
      ? sendJson(res, 200, report, close)
      : sendJson(res, 404, { error: 'no live session with that id' }, close);
  }
  if (req.method === 'GET' && route === '/state') return sendJson(res, 200, control.state(), close);
  if (req.method === 'GET' && route === '/requests') {
    return sendJson(res, 200, control.requestLog(url.searchParams.get('sessionId') ?? undefined), close);
  }
  if (req.method === 'GET' && route === '/side-effects') {
    const key = url.searchParams.get('key');
    if (!key) return sendJson(res, 400, { error: 'query parameter key is required' }, close);
    return sendJson(res, 200, { key, count: control.sideEffectCount(key) }, close);
  }
  return sendJson(res, 404, { error: `no control route ${req.method ?? ''} ${route}` }, close);
}
