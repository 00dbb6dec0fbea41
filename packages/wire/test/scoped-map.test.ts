import { BoundedMap } from '@resumewatch/bounded';
import { describe, expect, it, vi } from 'vitest';
import { ScopedMap } from '../src/scoped-map.js';

/** A small deterministic generator (xorshift): the same steps at each run. */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** The index's lists, as the map holds them (private): each scope's keys written and its live count. */
function lists<V>(map: ScopedMap<V>): Map<string, { keys: string[]; head: number; live: number }> {
  return (map as unknown as { scopes: Map<string, { keys: string[]; head: number; live: number }> }).scopes;
}

describe('ScopedMap', () => {
  it('deletes a scope as a scan of every key would, through writes, rewrites, deletes, expiry and the cap', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const next = random(seed);
      let now = 0;
      const clock = () => now;
      const scoped = new ScopedMap<number>(300, 1_000, clock);
      // The reference: the same map without an index, its scope deleted by a scan.
      const plain = new BoundedMap<string, number>(300, 1_000, clock);
      const scopes = ['a', 'b', 'c', '', 'a-b'];
      for (let step = 0; step < 20_000; step++) {
        const scope = scopes[Math.floor(next() * scopes.length)]!;
        // Few ids per scope: keys are written again, often after they left.
        const key = `${scope}\n${Math.floor(next() * 60)}`;
        const roll = next();
        if (roll < 0.6) {
          scoped.set(key, step);
          plain.set(key, step);
        } else if (roll < 0.9) expect(scoped.delete(key)).toBe(plain.delete(key));
        else if (roll < 0.995) now += Math.floor(next() * 50);
        else expect(scoped.deleteScope(scope)).toBe(plain.deleteWhere((k) => k.startsWith(`${scope}\n`)));
        if (step % 97 === 0) {
          expect([...scoped.entries()]).toEqual([...plain.entries()]);
          // Past a write, each list holds its scope's keys, and never more than twice as many and a few.
          scoped.set('bound\n0', step);
          plain.set('bound\n0', step);
          for (const [name, list] of lists(scoped)) {
            const held = [...plain.keysAsWalked()].filter((k) => k.startsWith(`${name}\n`));
            expect(list.live).toBe(held.length);
            const listed = new Set(list.keys.slice(list.head));
            for (const k of held) expect(listed.has(k)).toBe(true);
            expect(list.keys.length).toBeLessThanOrEqual(2 * list.live + 16 + 1 + 2 * 16);
          }
        }
      }
      for (const scope of [...scopes, 'bound'])
        expect(scoped.deleteScope(scope)).toBe(plain.deleteWhere((k) => k.startsWith(`${scope}\n`)));
      expect(scoped.size).toBe(0);
      expect(lists(scoped).size).toBe(0);
    }
  });

  it('keeps no list for a scope whose keys all left, and none for a key dropped by its own write', () => {
    const scoped = new ScopedMap<string>(10, 0, () => 0);
    // A retention of 0: the write's own sweep drops the entry.
    scoped.set('s\n1', 'x');
    expect(scoped.size).toBe(0);
    expect(lists(scoped).size).toBe(0);
    const kept = new ScopedMap<string>(2, Infinity, () => 0);
    kept.set('s\n1', 'x');
    kept.set('t\n1', 'x');
    kept.set('t\n2', 'x');
    // Over the cap: s's only key went, and its list with it.
    expect([...lists(kept).keys()]).toEqual(['t']);
    expect(kept.deleteScope('t')).toBe(2);
    expect(lists(kept).size).toBe(0);
  });

  it("visits a scope's own keys at its deletion, however many other keys the map holds", () => {
    const scoped = new ScopedMap<number>(100_000, Infinity, () => 0);
    for (let i = 0; i < 3_000; i++) scoped.set(`other\n${i}`, i);
    // The session's requests come and go: 500 written, all but two released, one written again.
    for (let i = 0; i < 500; i++) scoped.set(`s\n${i}`, i);
    for (let i = 0; i < 498; i++) scoped.delete(`s\n${i}`);
    scoped.set('s\n7', 7);
    scoped.set('other\n3000', 3000);
    const deletes = vi.spyOn(scoped, 'delete');
    expect(scoped.deleteScope('s')).toBe(3);
    expect(deletes.mock.calls.length).toBeLessThan(2 * 3 + 16 + 2);
    expect(scoped.size).toBe(3_001);
  });
});
