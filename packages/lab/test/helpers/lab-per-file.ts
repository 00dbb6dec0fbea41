import { startLabServer } from '../../src/index.js';
import type { LabServer, RequestLogEntry } from '../../src/index.js';
import { serverPerFile } from '../../../wire/test/helpers/per-file.js';

/** The lab server of a test file, and what it saw. */
export interface LabPerFile {
  /** Started before the file's first test, closed after its last. */
  readonly server: LabServer;
  /** The resumes (GETs with Last-Event-ID) the server saw in a session, the lab's own restores left out. */
  resumesAtServer(sessionId: string | undefined): RequestLogEntry[];
}

/** One lab server on loopback (default options) for the whole test file that calls this at its top level. */
export function labServerPerFile(): LabPerFile {
  const file = serverPerFile(() => startLabServer());
  return {
    get server() {
      return file.server;
    },
    resumesAtServer(sessionId) {
      return file.server
        .requestLog(sessionId)
        .filter((entry) => entry.method === 'GET' && entry.lastEventId !== undefined && !entry.restore);
    },
  };
}
