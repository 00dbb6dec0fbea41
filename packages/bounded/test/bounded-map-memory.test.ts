import { getHeapSpaceStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { heldBytes } from '../../detector/test/helpers/heap.js';
import { BoundedMap } from '../src/bounded-map.js';

/**
 * Bytes held after full collections, without V8's code spaces. Code compiled while a map is filled
 * (TurboFan's, or its on-stack replacement) is the process's, not the map's, and lands in one measure or
 * the other by timing: 0 to 112 KB, as much as 5 bytes an entry here.
 */
function heldWithoutCode(): number {
  const held = heldBytes();
  let code = 0;
  for (const space of getHeapSpaceStatistics())
    if (space.space_name === 'code_space' || space.space_name === 'code_large_object_space')
      code += space.space_used_size;
  return held - code;
}

// What an entry costs beyond the Map's own entry, measured after full collections.
describe('BoundedMap memory', () => {
  const ENTRIES = 20_000;
  const keys = Array.from({ length: ENTRIES }, (_, i) => `session-${i}\n${i}`);
  const value = { shared: true };
  /** The same writes and sweep on a map thrown away: their code is compiled before anything is measured. */
  const warmUp = (): void => {
    let t = 0;
    const map = new BoundedMap<string, object>(100_000, 1_000, () => t);
    for (const key of keys) map.set(key, value);
    t += 1_000;
    map.set('last', value);
  };

  it('keeps an entry of a map with a retention in under 80 bytes: no object and no boxed expiry per entry', () => {
    // Per entry at 20,000: the Map's entry with its share of a table sized for 32,768 (about 46 bytes),
    // the slot's value and expiry (16, plus the arrays' growth slack): about 68. An entry object
    // `{ value, expiresAt }` and its boxed number added about 45.
    warmUp();
    const before = heldWithoutCode();
    const map = new BoundedMap<string, object>(100_000, 600_000, () => 1_700_000_000_000.5);
    for (const key of keys) map.set(key, value);
    const perEntry = (heldWithoutCode() - before) / ENTRIES;
    expect(map.size).toBe(ENTRIES);
    expect(perEntry).toBeLessThan(80);
  });

  it('gives back the room of its peak once under a quarter of it', () => {
    warmUp();
    let t = 0;
    const map = new BoundedMap<string, object>(100_000, 1_000, () => t);
    const before = heldWithoutCode();
    for (const key of keys) map.set(key, value);
    const peak = heldWithoutCode() - before;
    // Past their retention: the next write sweeps them all.
    t += 1_000;
    map.set('last', value);
    expect(map.size).toBe(1);
    expect(heldWithoutCode() - before).toBeLessThan(peak / 8);
  });
});
