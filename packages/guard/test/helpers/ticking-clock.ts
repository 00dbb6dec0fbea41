import { setTimeout as delay } from 'node:timers/promises';
import { vi } from 'vitest';

/**
 * Runs `work` with `setTimeout`, `clearTimeout` and `Date` on a clock the test moves `tick` ms at a time
 * (yielding a real millisecond between ticks, so loopback I/O goes on), then restores the real timers. A
 * loaded machine stretches nothing on that clock: the one slack for a caller's assertion is a tick the
 * clock may move between two looks at it.
 */
export async function onTickingClock<T>(tick: number, work: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  let ticking = true;
  const ticker = (async () => {
    while (ticking) {
      await vi.advanceTimersByTimeAsync(tick);
      await delay(1);
    }
  })();
  try {
    return await work();
  } finally {
    ticking = false;
    await ticker;
    vi.useRealTimers();
  }
}
