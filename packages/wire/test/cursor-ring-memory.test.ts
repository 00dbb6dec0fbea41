// A session's cursor ring is most of what the observer holds per live session (the gateway's open
// streams, a client's sessions): a small one must stay small. Measured on the heap, after full GCs.
import { describe, expect, it } from 'vitest';
import { heldBytes as held } from '../../detector/test/helpers/heap.js';
import { CursorRing } from '../src/cursor-ring.js';
import { newStreamRecord } from '../src/observer.js';

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

  it('a ring of 5 deliveries of 47-byte ids allocates the arena its ids need: under 1,050 bytes (1,170 at 64 a slot)', () => {
    const stream = newStreamRecord('1', 'session', 'POST', 'sse', undefined, [], false, undefined, false);
    const rings: CursorRing[] = [];
    const n = 4000;
    const id = (i: number, k: number) => `${String(i).padStart(8, '0')}.${k}.7550d19b-d3d9-49e0-b74b-a4be35766679`;
    const before = held();
    for (let i = 0; i < n; i++) {
      const ring = new CursorRing(256);
      for (let k = 1; k <= 5; k++) ring.add(id(i, k), stream, k);
      rings.push(ring);
    }
    const perRing = (held() - before) / n;
    // Every id still kept whole: each places its cursor (the arena counts 64 bytes a slot as before).
    for (let k = 1; k <= 5; k++) expect(rings[n - 1]!.positionOn(id(n - 1, k), stream)).toBe(k);
    expect(perRing).toBeLessThan(1050);
  });
});
