// A session's cursor ring is most of what the observer holds per live session (the gateway's open
// streams, a client's sessions): a small one must stay small. Measured on the heap, after full GCs.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { CursorRing } from '../src/cursor-ring.js';
import { newStreamRecord } from '../src/observer.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const held = (): number => {
  gc();
  gc();
  const memory = process.memoryUsage();
  return memory.heapUsed + memory.arrayBuffers;
};

describe('CursorRing memory', () => {
  it('a ring of 4 deliveries holds its fields in one array: under 960 bytes (1,080 with an array per field)', () => {
    const stream = newStreamRecord('1', 'session', 'POST', 'sse', undefined, [], false, undefined, false);
    const rings: CursorRing[] = [];
    const n = 4000;
    const before = held();
    for (let i = 0; i < n; i++) {
      const ring = new CursorRing(256);
      for (let k = 1; k <= 4; k++) ring.add(`${i}_${k}`, stream, k);
      rings.push(ring);
    }
    const perRing = (held() - before) / n;
    // Still held (and still answering) after the measure.
    expect(rings[n - 1]!.get(`${n - 1}_4`)).toBe(stream);
    // The build: 768 bytes, 995 with an array per field; under the test's transform 855 and 1,080.
    expect(perRing).toBeLessThan(960);
  });
});
