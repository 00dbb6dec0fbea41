import { createServer } from 'node:net';
import { vi } from 'vitest';

/**
 * `vi.waitFor` on a check that may be async: polls until it returns a truthy value and returns it. A check
 * that throws counts as not yet. On a timeout the error names what was awaited and the check's last error.
 */
export async function waitFor<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 20_000,
  intervalMs = 100,
): Promise<T> {
  let last: unknown;
  try {
    return await vi.waitFor(
      async () => {
        const value = await Promise.resolve()
          .then(check)
          .catch((error: unknown) => {
            last = error;
            return undefined;
          });
        if (!value) throw new Error(`not yet: ${what}`);
        return value;
      },
      { timeout: timeoutMs, interval: intervalMs },
    );
  } catch {
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
  }
}

/** A loopback port free at the time of asking. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
