import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../src/bounded-map.js';

/** A map of cap 3 and retention 100 ms on a clock the test moves, recording every drop. */
function fixture(cap = 3, retentionMs = 100) {
  let t = 1000;
  const dropped: [string, number][] = [];
  const map = new BoundedMap<string, number>(
    cap,
    retentionMs,
    () => t,
    (key, value) => dropped.push([key, value]),
  );
  return { map, dropped, advance: (ms: number) => (t += ms) };
}

describe('BoundedMap', () => {
  it('evicts the oldest write past the cap, counts it and tells onDrop', () => {
    const { map, dropped } = fixture();
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    map.set('d', 4);
    expect([...map.values()]).toEqual([2, 3, 4]);
    expect(map.size).toBe(3);
    expect(map.evictions).toBe(1);
    expect(dropped).toEqual([['a', 1]]);
    expect(map.get('a')).toBeUndefined();
  });

  it('orders by last write or touch: a rewritten or touched entry goes last', () => {
    const { map, dropped } = fixture();
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    map.set('a', 10);
    map.touch('b');
    map.set('d', 4);
    expect(dropped).toEqual([['c', 3]]);
    expect([...map.values()]).toEqual([10, 2, 4]);
    expect(map.evictions).toBe(1);
  });

  it('expires an entry retentionMs after its last write, uncounted as an eviction', () => {
    const { map, dropped, advance } = fixture();
    map.set('a', 1);
    advance(50);
    map.set('b', 2);
    advance(49);
    expect(map.get('a')).toBe(1);
    advance(1);
    expect(map.has('a')).toBe(false);
    expect(map.get('b')).toBe(2);
    expect(dropped).toEqual([['a', 1]]);
    advance(50);
    expect([...map.values()]).toEqual([]);
    // values() ignores the expired entry; the next write sweeps it.
    expect(map.size).toBe(1);
    map.set('c', 3);
    expect(map.size).toBe(1);
    expect(dropped).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
    expect(map.evictions).toBe(0);
  });

  it('touch restarts the retention; prune drops the expired at once', () => {
    const { map, advance } = fixture();
    map.set('a', 1);
    map.set('b', 2);
    advance(90);
    map.touch('a');
    advance(10);
    map.prune();
    expect(map.size).toBe(1);
    expect(map.get('a')).toBe(1);
    advance(90);
    map.prune();
    expect(map.size).toBe(0);
  });

  it('with Infinity retention keeps entries whatever the clock, and reads never call it', () => {
    let calls = 0;
    const map = new BoundedMap<string, number>(2, Infinity, () => ++calls * 1e12);
    map.set('a', 1);
    const afterSet = calls;
    expect(map.get('a')).toBe(1);
    expect(map.has('a')).toBe(true);
    expect(calls).toBe(afterSet);
    map.set('b', 2);
    map.set('c', 3);
    expect([...map.values()]).toEqual([2, 3]);
    expect(map.evictions).toBe(1);
  });

  it('has() sees a stored undefined', () => {
    const map = new BoundedMap<string, number | undefined>(2, 100, () => 0);
    map.set('a', undefined);
    expect(map.has('a')).toBe(true);
    expect(map.has('b')).toBe(false);
  });

  it('evictOldest drops and counts the oldest; delete and deleteWhere tell onDrop but do not count', () => {
    const { map, dropped } = fixture(5);
    for (const [k, v] of [
      ['s1\na', 1],
      ['s1\nb', 2],
      ['s2\nc', 3],
      ['s1\nd', 4],
    ] as const)
      map.set(k, v);
    expect(map.evictOldest()).toBe(true);
    expect(map.evictions).toBe(1);
    expect(map.delete('s2\nc')).toBe(true);
    expect(map.delete('s2\nc')).toBe(false);
    expect(map.deleteWhere((key) => key.startsWith('s1\n'))).toBe(2);
    expect(dropped).toEqual([
      ['s1\na', 1],
      ['s2\nc', 3],
      ['s1\nb', 2],
      ['s1\nd', 4],
    ]);
    expect(map.evictions).toBe(1);
    expect(map.size).toBe(0);
    expect(map.evictOldest()).toBe(false);
  });

  it('entries() lists the live entries oldest first, as a copy; clear() tells onDrop of each without counting', () => {
    const { map, dropped, advance } = fixture();
    map.set('a', 1);
    advance(60);
    map.set('b', 2);
    map.set('c', 3);
    advance(40);
    const live = [...map.entries()];
    expect(live).toEqual([
      ['b', 2],
      ['c', 3],
    ]);
    for (const [key] of map.entries()) map.delete(key);
    expect(map.size).toBe(1);
    map.set('d', 4);
    map.clear();
    expect(map.size).toBe(0);
    expect(dropped).toEqual([
      ['b', 2],
      ['c', 3],
      ['a', 1],
      ['d', 4],
    ]);
    expect(map.evictions).toBe(0);
  });

  it('refuses a cap that keeps nothing and a negative retention', () => {
    expect(() => new BoundedMap(0, 100)).toThrow('cap must be positive, got 0');
    expect(() => new BoundedMap(1, -1)).toThrow('retentionMs must not be negative, got -1');
    expect(() => new BoundedMap(1, Number.NaN)).toThrow('retentionMs must not be negative, got NaN');
  });

  it('keysAsWalked: a walk over turns skips what was deleted since and reaches what was written since', () => {
    const { map } = fixture(10);
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    const walk = map.keysAsWalked();
    expect(walk.next().value).toBe('a');
    map.delete('b');
    map.set('d', 4);
    // Written again: moved to the young end, reached a second time.
    map.set('a', 5);
    expect([...walk]).toEqual(['c', 'd', 'a']);
  });
});

describe('BoundedMap slots', () => {
  it('under churn (writes, rewrites, deletes, expiries, evictions) reads as a plain Map with the same rules would', () => {
    let t = 0;
    const cap = 50;
    const map = new BoundedMap<number, number>(cap, 40, () => t);
    // The model: key → [value, expiresAt], insertion-ordered like the map.
    const model = new Map<number, [number, number]>();
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let step = 0; step < 20_000; step++) {
      // Now and then everything expires: the next write sweeps the map nearly empty (its slots compacted).
      t += step % 2_000 === 1_999 ? 100 : random(3);
      const key = random(120);
      const op = random(10);
      if (op < 6) {
        map.set(key, step);
        model.delete(key);
        model.set(key, [step, t + 40]);
        for (const [k, [, expiresAt]] of model) {
          if (model.size > cap) model.delete(k);
          else if (expiresAt <= t) model.delete(k);
          else break;
        }
      } else if (op < 8) {
        expect(map.delete(key)).toBe(model.delete(key));
      } else {
        const entry = model.get(key);
        const live = entry !== undefined && entry[1] > t;
        if (entry !== undefined && !live) model.delete(key);
        expect(map.get(key)).toBe(live ? entry[0] : undefined);
      }
      if (step % 97 === 0) {
        expect([...map.entries()]).toEqual(
          [...model].filter(([, [, expiresAt]]) => expiresAt > t).map(([k, [v]]) => [k, v]),
        );
      }
    }
  });

  it('an onDrop that writes the map again finds the dropped value handed over and its slot free', () => {
    const seen: [string, number][] = [];
    const map: BoundedMap<string, number> = new BoundedMap<string, number>(2, Infinity, Date.now, (key, value) => {
      seen.push([key, value]);
      if (key === 'a') map.set('a2', value * 10);
    });
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    expect(seen[0]).toEqual(['a', 1]);
    expect(map.get('a2')).toBe(10);
    expect(map.size).toBe(2);
    expect([...map.entries()].map(([k]) => k)).not.toContain('a');
  });
});

describe('BoundedMap.replace', () => {
  it('changes a live value in place: its place among the oldest and its retention stay', () => {
    const { map, dropped, advance } = fixture(3, 100);
    map.set('a', 1);
    advance(60);
    map.set('b', 2);
    expect(map.replace('a', 10)).toBe(true);
    expect(map.get('a')).toBe(10);
    expect([...map.entries()].map(([k]) => k)).toEqual(['a', 'b']);
    // Written at 1000, expired at 1100 still: the replace restarted nothing.
    advance(40);
    expect(map.get('a')).toBeUndefined();
    expect(dropped).toEqual([['a', 10]]);
    expect(map.replace('a', 11)).toBe(false);
    expect(map.replace('z', 1)).toBe(false);
    expect(map.has('z')).toBe(false);
  });
});
