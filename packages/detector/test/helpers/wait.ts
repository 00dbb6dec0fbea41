import { vi } from 'vitest';

/**
 * `vi.waitFor` on a synchronous check: polls until `check` returns a truthy value and returns it; on a
 * timeout the error names what was awaited. Bounded, and generous for a loaded machine.
 */
export function waitFor<T>(check: () => T | undefined | false, what: string, timeoutMs = 20_000): Promise<T> {
  return vi.waitFor(
    () => {
      const value = check();
      if (!value) throw new Error(`timed out waiting for ${what}`);
      return value;
    },
    { timeout: timeoutMs, interval: 25 },
  );
}
