import { afterAll, beforeAll } from 'vitest';
import { startLabServer } from '../../src/index.js';
import type { LabServer, RequestLogEntry } from '../../src/index.js';

/** The lab server of a test file, and what it saw. */
export interface LabPerFile {
  /** Started before the file's first test, closed after its last. */
  readonly server: LabServer;
  /** The resumes (GETs with Last-Event-ID) the server saw in a session, the lab's own restores left out. */
  resumesAtServer(sessionId: string | undefined): RequestLogEntry[];
}

/** One lab server on loopback (default options) for the whole test file that calls this at its top level. */
export function labServerPerFile(): LabPerFile {
  let server: LabServer | undefined;
  beforeAll(async () => {
    server = await startLabServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  return {
    get server() {
      if (!server) throw new Error('the lab server starts in beforeAll: use it inside a test');
      return server;
    },
    resumesAtServer(sessionId) {
      return this.server.requestLog(sessionId).filter((entry) => entry.method === 'GET' && entry.lastEventId !== undefined && !entry.restore);
    },
  };
}
