import { describe, expect, it } from 'vitest';
import { heldBytes } from '../../detector/test/helpers/heap.js';
import { BoundedMap } from '../src/bounded-map.js';

// What an entry costs beyond the Map's own entry, measured after full collections.
describe('BoundedMap memory', () => {
  const ENTRIES = 20_000;
  const keys = Array.from({ length: ENTRIES }, (_, i) => `session-${i}\n${i}`);
  const value = { shared: true };

  it('keeps an entry of a map with a retention in under 80 bytes: no object and no boxed expiry per entry', () => {
    // A Map entry (about 28 bytes with its share of the buckets, more in a table's growth slack) plus
    // the slot's value and expiry (16 bytes, plus the arrays' slack): about 58. An entry object
    // `{ value, expiresAt }` and its boxed number added about 45 (103 in all).
    const before = heldBytes();
    const map = new BoundedMap<string, object>(100_000, 600_000, () => 1_700_000_000_000.5);
    for (const key of keys) map.set(key, value);
    const perEntry = (heldBytes() - before) / ENTRIES;
    expect(map.size).toBe(ENTRIES);
    expect(perEntry).toBeLessThan(80);
  });

  it('gives back the room of its peak once under a quarter of it', () => {
    let t = 0;
    const map = new BoundedMap<string, object>(100_000, 1_000, () => t);
    const before = heldBytes();
    for (const key of keys) map.set(key, value);
    const peak = heldBytes() - before;
    // Past their retention: the next write sweeps them all.
    t += 1_000;
    map.set('last', value);
    expect(map.size).toBe(1);
    expect(heldBytes() - before).toBeLessThan(peak / 8);
  });
});
