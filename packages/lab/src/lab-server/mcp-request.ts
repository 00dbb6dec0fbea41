import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { HEADER_LAST_EVENT_ID, HEADER_SESSION_ID } from '@resumewatch/wire';
import { BodyTooLargeError, header, readBody, sendJsonRpcError } from '../http-util.js';
import type { LabRequestContext } from '../request-context.js';
import type { LabStoreVariant } from '../store-variants.js';
import type { LiveSessions } from './live-sessions.js';
import type { ReplayClosing } from './replay-closing.js';

const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The JSON-RPC id (as a string) of the first request in a POST body. */
function firstRequestId(body: unknown): string | undefined {
  for (const message of Array.isArray(body) ? body : [body]) {
    if (message !== null && typeof message === 'object' && 'method' in message && 'id' in message)
      return String((message as { id: unknown }).id);
  }
  return undefined;
}

/** One request on an MCP path (`/mcp` or `/mcp/<variant>`). */
export interface McpRequest {
  req: IncomingMessage;
  res: ServerResponse;
  path: string;
  variant: LabStoreVariant;
  context: LabRequestContext;
  /** Set when the request initializes a session, so the request log can name it. */
  created: { transport?: StreamableHTTPServerTransport };
}

/**
 * Answers a request on an MCP path: a POST without a session must initialize one (or restore a known
 * one, when the lab sends it to itself); every other request goes to its session's transport, restored
 * first if the session is known but not live. A resume of a cursor the buffer evicted gets the lab's 404.
 */
export async function handleMcpRequest(
  request: McpRequest,
  sessions: LiveSessions,
  replayClosing: ReplayClosing,
): Promise<void> {
  const { req, res } = request;
  const sessionId = header(req, HEADER_SESSION_ID);
  if (req.method === 'POST') {
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req, MAX_BODY_BYTES));
    } catch (error) {
      if (error instanceof BodyTooLargeError) return sendJsonRpcError(res, 413, -32000, error.message);
      return sendJsonRpcError(res, 400, -32700, 'Parse error: Invalid JSON');
    }
    request.context.jsonRpcRequestId = firstRequestId(body);
    if (sessionId === undefined) {
      const initialize = body as JSONRPCRequest;
      if (!isInitializeRequest(initialize))
        return sendJsonRpcError(res, 400, -32000, 'Bad Request: No valid session ID provided');
      const restoreId = sessions.restoreTarget(req);
      if (restoreId === null) return sendJsonRpcError(res, 403, -32000, 'Forbidden: invalid session restore');
      const live = await sessions.create(initialize, restoreId, request.path, request.variant);
      request.created.transport = live.transport;
      return live.transport.handleRequest(req, res, body);
    }
    const live = await sessions.find(sessionId);
    if (!live) return sendJsonRpcError(res, 404, -32001, 'Session not found');
    return live.transport.handleRequest(req, res, body);
  }
  if (req.method === 'GET' || req.method === 'DELETE') {
    if (sessionId === undefined)
      return sendJsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    const live = await sessions.find(sessionId);
    if (!live) return sendJsonRpcError(res, 404, -32001, 'Session not found');
    const lastEventId = header(req, HEADER_LAST_EVENT_ID);
    if (req.method === 'GET' && lastEventId !== undefined) {
      if (live.store.cursorState(lastEventId) === 'evicted') {
        // The lab's answer for a cursor its buffer has dropped; the session itself is still valid.
        return sendJsonRpcError(
          res,
          404,
          -32000,
          'Event stream not found: the cursor was evicted from the event buffer',
        );
      }
      replayClosing.watch(sessionId, lastEventId, res);
      live.resumes.resumed();
    }
    return live.transport.handleRequest(req, res);
  }
  res.setHeader('allow', 'GET, POST, DELETE');
  return sendJsonRpcError(res, 405, -32000, 'Method not allowed.');
}
