/**
 * A bounded set of 64-bit identities (two 32-bit words), for idempotency: remembers at least the last
 * `capacity / 2` and at most the last `capacity` identities added. Two open-addressing generations in
 * typed arrays: when the current one is half full, the older one is dropped wholesale.
 * Not a BoundedMap of @resumewatch/bounded: no object or string per span id, and no clock; forgetting
 * in halves is all idempotency needs.
 */
export class IdSet {
  private readonly mask: number;
  private readonly perGeneration: number;
  private cur: Uint32Array;
  private old: Uint32Array;
  private curCount = 0;

  constructor(capacity: number) {
    this.perGeneration = Math.max(1, Math.ceil(capacity / 2));
    let size = 4;
    while (size < this.perGeneration * 2) size *= 2;
    this.mask = size - 1;
    // Each entry is [hi, lo, used]; used is 1 so that the id 0:0 can be stored.
    this.cur = new Uint32Array(size * 3);
    this.old = new Uint32Array(size * 3);
  }

  /** Adds the identity; false when it was already present. */
  add(hi: number, lo: number): boolean {
    hi >>>= 0;
    lo >>>= 0;
    // Both generations have the same size: the identity's home slot is the same in each, hashed once.
    const home = this.slot(hi, lo);
    if (this.has(this.old, home, hi, lo)) return false;
    const table = this.cur;
    let i = home;
    for (;;) {
      const at = i * 3;
      if (table[at + 2] === 0) break;
      if (table[at] === hi && table[at + 1] === lo) return false;
      i = (i + 1) & this.mask;
    }
    if (this.curCount >= this.perGeneration) {
      const spare = this.old;
      spare.fill(0);
      this.old = this.cur;
      this.cur = spare;
      this.curCount = 0;
      return this.add(hi, lo);
    }
    const at = i * 3;
    table[at] = hi;
    table[at + 1] = lo;
    table[at + 2] = 1;
    this.curCount++;
    return true;
  }

  /** Whether the identity is present, without adding it. */
  contains(hi: number, lo: number): boolean {
    hi >>>= 0;
    lo >>>= 0;
    const home = this.slot(hi, lo);
    return this.has(this.cur, home, hi, lo) || this.has(this.old, home, hi, lo);
  }

  /**
   * The identities held, as pairs of words, generation by generation (older first): what a state file
   * keeps, rather than the hash tables' layout.
   */
  generations(): { older: Uint32Array<ArrayBuffer>; newer: Uint32Array<ArrayBuffer> } {
    return { older: idsOf(this.old), newer: idsOf(this.cur) };
  }

  /** Fills this fresh set with generations() of a set of the same capacity; false if they do not fit it. */
  load(older: Uint32Array, newer: Uint32Array): boolean {
    if (!this.fits(older) || !this.fits(newer) || this.curCount !== 0) return false;
    for (let i = 0; i < older.length; i += 2) this.insert(this.old, older[i]!, older[i + 1]!);
    for (let i = 0; i < newer.length; i += 2) if (this.insert(this.cur, newer[i]!, newer[i + 1]!)) this.curCount++;
    return true;
  }

  /** Whether a generation of these identities (pairs of words) fits this set. */
  fits(ids: Uint32Array): boolean {
    return ids.length % 2 === 0 && ids.length / 2 <= this.perGeneration;
  }

  /** Puts the identity into the table unless it is there; true if it was put. */
  private insert(table: Uint32Array, hi: number, lo: number): boolean {
    let i = this.slot(hi, lo);
    for (;;) {
      const at = i * 3;
      if (table[at + 2] === 0) break;
      if (table[at] === hi && table[at + 1] === lo) return false;
      i = (i + 1) & this.mask;
    }
    const at = i * 3;
    table[at] = hi;
    table[at + 1] = lo;
    table[at + 2] = 1;
    return true;
  }

  /** Whether the identity is in `table`, probed from its home slot. */
  private has(table: Uint32Array, home: number, hi: number, lo: number): boolean {
    for (let i = home; ; i = (i + 1) & this.mask) {
      const at = i * 3;
      if (table[at + 2] === 0) return false;
      if (table[at] === hi && table[at + 1] === lo) return true;
    }
  }

  private slot(hi: number, lo: number): number {
    return (Math.imul(hi ^ Math.imul(lo, 0x9e3779b1), 0x85ebca6b) >>> 7) & this.mask;
  }
}

function idsOf(table: Uint32Array): Uint32Array<ArrayBuffer> {
  let n = 0;
  for (let at = 2; at < table.length; at += 3) if (table[at] === 1) n++;
  const out = new Uint32Array(n * 2);
  let o = 0;
  for (let at = 0; at < table.length; at += 3) {
    if (table[at + 2] !== 1) continue;
    out[o++] = table[at]!;
    out[o++] = table[at + 1]!;
  }
  return out;
}
