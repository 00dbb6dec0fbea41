/**
 * A set of label values capped in number, for metric labels and interned names: a key keeps its own
 * value while it is known or there is room, and every key past the cap is answered with one `overflow`
 * value (`other`). Keys are numbered in the order they were admitted (0, 1, ...), so a caller can keep
 * per-label data in an array indexed by `idOf`. Nothing is ever evicted: a label, once given out, keeps
 * meaning the same key (a metric series must not change its subject). What the cap refused is counted.
 *
 * A new key is admitted while fewer than `cap` are known; the overflow value is always admitted, so at
 * most `cap + 1` values are held.
 */
export class CappedLabels<K> {
  private readonly index = new Map<K, number>();
  private readonly list: K[] = [];
  /** Lookups of a key past the cap, answered with the overflow value. */
  refused = 0;

  constructor(
    readonly cap: number,
    readonly overflow: K,
  ) {
    if (!(cap > 0)) throw new RangeError(`cap must be positive, got ${cap}`);
  }

  /** Values held, the overflow value included once it was given out. */
  get size(): number {
    return this.list.length;
  }

  /** The number of the key's label: its own while it is known or there is room, else the overflow's. */
  idOf(key: K): number {
    const known = this.index.get(key);
    if (known !== undefined) return known;
    if (this.list.length >= this.cap && key !== this.overflow) {
      this.refused++;
      return this.idOf(this.overflow);
    }
    const id = this.list.length;
    this.list.push(key);
    this.index.set(key, id);
    return id;
  }

  /** The key's label: the key itself while it is known or there is room, else the overflow value. */
  labelOf(key: K): K {
    return this.list[this.idOf(key)]!;
  }

  /** The value numbered `id` by idOf. */
  keyOf(id: number): K | undefined {
    return this.list[id];
  }

  /** The values held, in the order of their numbers. */
  keys(): readonly K[] {
    return this.list;
  }
}
