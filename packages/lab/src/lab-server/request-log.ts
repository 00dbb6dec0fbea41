import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { RecentList } from '@resumewatch/bounded';
import { HEADER_LAST_EVENT_ID, HEADER_SESSION_ID } from '@resumewatch/wire';
import { header } from '../http-util.js';
import { RESTORE_TOKEN_HEADER } from './paths.js';
import type { RequestLogEntry } from './types.js';

/** The last requests seen on the MCP paths, each recorded when its response closes. */
export class RequestLog {
  private readonly entries = new RecentList<RequestLogEntry>(1000);

  /** Records the request once its response closes; `created` names the session an initialize created. */
  recordOnClose(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    created: { transport?: StreamableHTTPServerTransport },
  ): void {
    res.once('close', () =>
      this.entries.push({
        at: Date.now(),
        method: req.method ?? '',
        path,
        sessionId: header(req, HEADER_SESSION_ID) ?? created.transport?.sessionId,
        lastEventId: header(req, HEADER_LAST_EVENT_ID),
        status: res.statusCode,
        restore: header(req, RESTORE_TOKEN_HEADER) !== undefined,
        completed: res.writableFinished,
      }),
    );
  }

  /** How many requests were recorded since the start (more than the list keeps). */
  get total(): number {
    return this.entries.total;
  }

  list(sessionId?: string): RequestLogEntry[] {
    const all = this.entries.toArray();
    return sessionId === undefined ? all : all.filter((entry) => entry.sessionId === sessionId);
  }
}
