// The observer's budget of held bytes: what a body holds comes back when it is released, or, should
// nobody release it, when its owner is collected; and a released owner is left to the collector.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { HeldBytes } from '../src/held-bytes.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (options?: { type: 'minor' | 'major' }) => void;

describe('HeldBytes', () => {
  it('gives back what an owner collected still holding bytes held', async () => {
    const budget = new HeldBytes(1_000_000);
    (() => {
      for (let i = 0; i < 100; i++) budget.set(budget.holdFor({ body: i }), 1_000);
    })();
    expect(budget.total).toBe(100_000);
    // Cleanup callbacks run as tasks after a full collection.
    for (let i = 0; i < 20 && budget.total > 0; i++) {
      gc();
      await sleep(10);
    }
    expect(budget.total).toBe(0);
  });

  it('leaves a released owner to the young generation: it dies in a scavenge, with what it references', () => {
    const budget = new HeldBytes(1_000_000_000);
    const OWNERS = 20_000;
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < OWNERS; i++) {
      // A body's tap as it ends: its bytes held, then given back.
      const owner = { chunks: new Array<number>(64).fill(i) };
      const hold = budget.holdFor(owner);
      budget.set(hold, 100);
      budget.release(hold);
    }
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    const perOwner = (process.memoryUsage().heapUsed - before) / OWNERS;
    expect(budget.total).toBe(0);
    // Still registered, each owner and its 64 slots (about 640 bytes) were kept through the scavenges
    // until a full collection; unregistered, about 100 bytes of V8's own bookkeeping are.
    expect(perOwner).toBeLessThan(250);
  });
});
