import { hash32 } from './ids.js';

/** Before any growth: the ring's first size (entries). */
const MIN_RING = 64;

/**
 * A second 32-bit hash of a string, of another family than hash32's FNV-1a (a multiply-rotate over the
 * code units, then a finaliser): with hash32 it makes a 64-bit identity whose two words do not collide
 * together for the same strings.
 */
function hash32b(s: string, h: number): number {
  for (let i = 0; i < s.length; i++) {
    h = Math.imul(h ^ s.charCodeAt(i), 0x5bd1e995);
    h ^= h >>> 13;
  }
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The 64-bit identity of (interned service, string) as two words: `TimedIdSet.add(...identity(...))`. */
export function identityOf(service: number, s: string): [number, number] {
  const seed = Math.imul(service + 1, 0x9e3779b1);
  return [hash32(s, seed ^ 0x811c9dc5), hash32b(s, seed)];
}

/**
 * A set of 64-bit identities (two 32-bit words) that remembers each for `retentionMs` after it was
 * added, and at most `capacity` of them (the oldest goes first): what a BoundedMap<string, true> with
 * the same cap and retention answers to has() and set(), in 16 bytes an entry plus its index, and no
 * string, object or Map entry.
 *
 * Entries are never touched after they are added, and the clock never goes back, so the order they
 * were added in is the order they expire in: a ring, oldest first, and an open-addressing index of ring
 * positions (linear probing, deletion by backward shift). Grows by doubling up to `capacity`.
 */
export class TimedIdSet {
  private hi = new Uint32Array(0);
  private lo = new Uint32Array(0);
  private expiresAt = new Float64Array(0);
  /** Ring position + 1, or 0 for an empty bucket. */
  private buckets = new Int32Array(0);
  private mask = 0;
  private head = 0;
  private count = 0;

  constructor(
    private readonly capacity: number,
    private readonly retentionMs: number,
    private readonly now: () => number,
  ) {
    if (!(capacity >= 1)) throw new RangeError(`capacity must be at least 1, got ${capacity}`);
  }

  get size(): number {
    return this.count;
  }

  /** Whether the identity is held and not past its retention (an expired one is dropped, as BoundedMap.has does). */
  has(hi: number, lo: number): boolean {
    this.prune();
    return this.find(hi >>> 0, lo >>> 0) >= 0;
  }

  /** Adds the identity (the caller checked has() first), then drops the oldest over the cap. */
  add(hi: number, lo: number): void {
    this.prune();
    if (this.count === this.hi.length) {
      if (this.hi.length < this.capacity) this.grow();
      else this.dropOldest();
    }
    const size = this.hi.length;
    const at = (this.head + this.count) % size;
    this.hi[at] = hi >>> 0;
    this.lo[at] = lo >>> 0;
    this.expiresAt[at] = this.now() + this.retentionMs;
    this.count++;
    this.insertBucket(at);
  }

  /** Drops the entries past their retention: from the oldest end, to the first live one. */
  prune(): void {
    if (this.count === 0) return;
    const now = this.now();
    while (this.count > 0 && this.expiresAt[this.head]! <= now) this.dropOldest();
  }

  private dropOldest(): void {
    this.removeBucket(this.head);
    this.head = (this.head + 1) % this.hi.length;
    this.count--;
  }

  private home(hi: number, lo: number): number {
    return (Math.imul(hi ^ Math.imul(lo, 0x9e3779b1), 0x85ebca6b) >>> 7) & this.mask;
  }

  /** The ring position of the identity, or -1. */
  private find(hi: number, lo: number): number {
    if (this.count === 0) return -1;
    const buckets = this.buckets;
    for (let i = this.home(hi, lo); ; i = (i + 1) & this.mask) {
      const b = buckets[i]!;
      if (b === 0) return -1;
      if (this.hi[b - 1] === hi && this.lo[b - 1] === lo) return b - 1;
    }
  }

  private insertBucket(at: number): void {
    let i = this.home(this.hi[at]!, this.lo[at]!);
    while (this.buckets[i] !== 0) i = (i + 1) & this.mask;
    this.buckets[i] = at + 1;
  }

  /** Linear-probing deletion by backward shift, so that no tombstones accumulate. */
  private removeBucket(at: number): void {
    const buckets = this.buckets;
    const mask = this.mask;
    let i = this.home(this.hi[at]!, this.lo[at]!);
    while (buckets[i] !== at + 1) i = (i + 1) & mask;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const entry = buckets[j]!;
      if (entry === 0) break;
      const home = this.home(this.hi[entry - 1]!, this.lo[entry - 1]!);
      // Move the entry back into the hole unless its home lies cyclically in (i, j].
      const inRange = i <= j ? home > i && home <= j : home > i || home <= j;
      if (!inRange) {
        buckets[i] = entry;
        i = j;
      }
    }
    buckets[i] = 0;
  }

  /** A ring twice the size (at most `capacity`), the entries moved to its start in order, the index rebuilt. */
  private grow(): void {
    const old = this.hi.length;
    const size = Math.min(this.capacity, Math.max(MIN_RING, old * 2));
    const hi = new Uint32Array(size);
    const lo = new Uint32Array(size);
    const expiresAt = new Float64Array(size);
    for (let k = 0; k < this.count; k++) {
      const from = (this.head + k) % old;
      hi[k] = this.hi[from]!;
      lo[k] = this.lo[from]!;
      expiresAt[k] = this.expiresAt[from]!;
    }
    [this.hi, this.lo, this.expiresAt, this.head] = [hi, lo, expiresAt, 0];
    let buckets = 4;
    while (buckets < size * 2) buckets *= 2;
    this.buckets = new Int32Array(buckets);
    this.mask = buckets - 1;
    for (let k = 0; k < this.count; k++) this.insertBucket(k);
  }
}
