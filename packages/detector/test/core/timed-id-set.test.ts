import { BoundedMap } from '@resumewatch/bounded';
import { describe, expect, it } from 'vitest';
import { TimedIdSet, identityOf } from '../../src/core/timed-id-set.js';

/** A small deterministic generator (mulberry32), so that a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('TimedIdSet', () => {
  it('answers has() and add() as a BoundedMap<string, true> of the same cap and retention does', () => {
    for (const [cap, retention] of [
      [1, 50],
      [7, 30],
      [100, 1000],
      [300, 40],
    ] as const) {
      const next = random(cap * 31 + retention);
      let now = 0;
      const clock = () => now;
      const map = new BoundedMap<string, true>(cap, retention, clock);
      const set = new TimedIdSet(cap, retention, clock);
      for (let step = 0; step < 20_000; step++) {
        if (next() < 0.3) now += Math.floor(next() * 5);
        const service = Math.floor(next() * 3);
        const session = `s-${Math.floor(next() * cap * 3)}`;
        const key = `${service}\u0000${session}`;
        const [hi, lo] = identityOf(service, session);
        const had = map.has(key);
        expect(set.has(hi, lo)).toBe(had);
        if (!had) {
          map.set(key, true);
          set.add(hi, lo);
        }
        if (next() < 0.01) {
          map.prune();
          set.prune();
          // Sizes agree once both dropped their expired entries (BoundedMap drops lazily).
          expect(set.size).toBe(map.size);
        }
      }
    }
  });

  it('tells apart the identities of a service and session, and of the same session in two services', () => {
    expect(identityOf(0, 'abc')).not.toEqual(identityOf(1, 'abc'));
    expect(identityOf(0, 'abc')).not.toEqual(identityOf(0, 'abd'));
    const seen = new Set<string>();
    for (let i = 0; i < 100_000; i++) seen.add(identityOf(0, `session-${i}`).join(':'));
    expect(seen.size).toBe(100_000);
  });

  it('holds an entry in its typed arrays: no object, string or Map entry per identity', () => {
    const set = new TimedIdSet(4096, 1_000, () => 0);
    for (let i = 0; i < 4096; i++) set.add(...identityOf(0, `s${i}`));
    // The ring (two words and a time, 16 B) and the index (two buckets of 4 B) at full capacity.
    const bytes = (['hi', 'lo', 'expiresAt', 'buckets'] as const).reduce(
      (n, name) => n + (set as unknown as Record<string, ArrayBufferView>)[name]!.byteLength,
      0,
    );
    expect(bytes / set.size).toBe(24);
  });
});
