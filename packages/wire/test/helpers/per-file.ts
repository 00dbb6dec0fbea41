import { afterAll, beforeAll, beforeEach } from 'vitest';

/** A server a test file shares. */
export interface ServerPerFile<T> {
  /** Started before the file's first test, closed after its last; read it inside a test. */
  readonly server: T;
}

/**
 * One server for the whole test file that calls this at its top level: `start` before the first test,
 * `reset` (when given) before each test, `close()` after the last. The lab's test helpers use it too.
 */
export function serverPerFile<T extends { close(): Promise<void> }>(
  start: () => Promise<T>,
  reset?: (server: T) => void,
): ServerPerFile<T> {
  let started: T | undefined;
  beforeAll(async () => {
    started = await start();
  });
  afterAll(async () => {
    await started?.close();
  });
  if (reset) beforeEach(() => started && reset(started));
  return {
    get server() {
      if (!started) throw new Error('the server of this test file starts in beforeAll: use it inside a test');
      return started;
    },
  };
}
