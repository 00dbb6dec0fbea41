import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { HEADER_SESSION_ID } from '@resumewatch/wire';
import { handleControlRequest } from '../control-endpoint.js';
import type { LabControl } from '../control-endpoint.js';
import { header, sendJsonRpcError } from '../http-util.js';
import { isLoopbackAddress } from '../loopback.js';
import { labRequestContext } from '../request-context.js';
import type { LabRequestContext } from '../request-context.js';
import type { LabStoreVariant } from '../store-variants.js';
import type { LiveSessions } from './live-sessions.js';
import { handleMcpRequest } from './mcp-request.js';
import { CONTROL_PATH, storeVariantOfPath } from './paths.js';
import type { ReplayClosing } from './replay-closing.js';
import type { RequestLog } from './request-log.js';

export interface LabRoutes {
  /** The variant `/mcp` itself serves. */
  defaultVariant: LabStoreVariant;
  sessions: LiveSessions;
  replayClosing: ReplayClosing;
  requestLog: RequestLog;
  control: LabControl;
}

/**
 * The lab server's request listener: MCP paths go to their session (each logged, each run in a
 * request context the stores read), `/control/*` to the control endpoint from loopback only (403 from
 * elsewhere), anything else 404. An error thrown while handling becomes a 500, or a cut connection
 * once the response has started.
 */
export function labRequestListener(routes: LabRoutes): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://lab').pathname;
    const variant = storeVariantOfPath(path, routes.defaultVariant);
    let handled: Promise<void>;
    if (variant !== undefined) {
      const created: { transport?: StreamableHTTPServerTransport } = {};
      routes.requestLog.recordOnClose(req, res, path, created);
      const context: LabRequestContext = { sessionId: header(req, HEADER_SESSION_ID), jsonRpcRequestId: undefined };
      handled = labRequestContext.run(context, () =>
        handleMcpRequest({ req, res, path, variant, context, created }, routes.sessions, routes.replayClosing),
      );
    } else if (path.startsWith(`${CONTROL_PATH}/`) && isLoopbackAddress(req.socket.remoteAddress)) {
      handled = handleControlRequest(routes.control, path.slice(CONTROL_PATH.length), req, res);
    } else {
      handled = Promise.resolve(sendJsonRpcError(res, path.startsWith(CONTROL_PATH) ? 403 : 404, -32000, 'Not found'));
    }
    handled.catch((error: unknown) => {
      if (!res.headersSent)
        sendJsonRpcError(res, 500, -32603, `Internal error: ${error instanceof Error ? error.message : String(error)}`);
      else res.destroy();
    });
  };
}
