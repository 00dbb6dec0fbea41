/**
 * A Map with a cap on entries and a retention time. The oldest entry (by last write or touch) goes
 * first when the cap is reached; entries past their retention are swept lazily on writes and ignored
 * (and dropped) on reads. With `retentionMs` Infinity entries never expire and reads never look at the
 * clock: only the cap bounds the map.
 *
 * `onDrop` is told of every entry that leaves: deleted, expired or evicted by the cap. Only evictions
 * by the cap are counted (`evictions`): an entry that expired or was deleted was not lost to the cap.
 *
 * Storage: the Map holds each key's slot, a small integer (no object per entry); the value and the
 * expiry are at that slot of an array and of a Float64Array. An entry object `{ value, expiresAt }` with
 * its boxed number cost about 56 bytes more per entry, kept as long as the entry, and one more object
 * for the collector to trace. Freed slots are reused; the arrays shrink when a quarter is in use.
 */
export class BoundedMap<K, V> {
  /** Key → slot, in the order entries leave (oldest first). */
  private readonly map = new Map<K, number>();
  /** Values by slot (`undefined` in a free slot, so that what it held can be collected). */
  private vals: (V | undefined)[] = [];
  /** Expiry (Unix ms) by slot; stays empty with Infinity retention. */
  private expiries = NO_EXPIRIES;
  /** Free slots below `used`, reused last freed first. */
  private free: number[] = [];
  /** Slots handed out so far (the high-water mark of `vals`). */
  private used = 0;
  private readonly expires: boolean;
  /** Entries dropped because the cap was reached. */
  evictions = 0;

  constructor(
    private readonly cap: number,
    private readonly retentionMs: number,
    private readonly now: () => number = Date.now,
    private readonly onDrop?: (key: K, value: V) => void,
  ) {
    if (!(cap > 0)) throw new RangeError(`cap must be positive, got ${cap}`);
    if (!(retentionMs >= 0)) throw new RangeError(`retentionMs must not be negative, got ${retentionMs}`);
    this.expires = retentionMs !== Infinity;
  }

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const slot = this.map.get(key);
    if (slot === undefined) return undefined;
    if (this.expires && this.expiries[slot]! <= this.now()) {
      this.delete(key);
      return undefined;
    }
    return this.vals[slot];
  }

  /** Whether the key holds a live entry (true for a stored `undefined` too). */
  has(key: K): boolean {
    const slot = this.map.get(key);
    if (slot === undefined) return false;
    if (this.expires && this.expiries[slot]! <= this.now()) {
      this.delete(key);
      return false;
    }
    return true;
  }

  /** Writes and moves the entry to the young end; resets its retention. */
  set(key: K, value: V): void {
    let slot = this.map.get(key);
    if (slot === undefined) {
      slot = this.take();
      this.map.set(key, slot);
    } else {
      // Moved to the young end; the slot is kept: a rewrite allocates nothing.
      this.map.delete(key);
      this.map.set(key, slot);
    }
    this.vals[slot] = value;
    if (this.expires) this.expiries[slot] = this.now() + this.retentionMs;
    this.sweep();
  }

  /**
   * Changes a live entry's value in place: it keeps its place among the oldest and its retention (set
   * would move it to the young end and restart it). False, and nothing written, without a live entry.
   */
  replace(key: K, value: V): boolean {
    const slot = this.map.get(key);
    if (slot === undefined || !this.live(slot, this.expires ? this.now() : 0)) return false;
    this.vals[slot] = value;
    return true;
  }

  /** Restarts an entry's retention without changing it. */
  touch(key: K): void {
    const slot = this.map.get(key);
    if (slot === undefined) return;
    this.map.delete(key);
    if (this.expires) this.expiries[slot] = this.now() + this.retentionMs;
    this.map.set(key, slot);
  }

  delete(key: K): boolean {
    const slot = this.map.get(key);
    if (slot === undefined) return false;
    this.map.delete(key);
    this.drop(key, slot);
    return true;
  }

  /** Deletes every entry whose key matches; returns how many went. */
  deleteWhere(matches: (key: K) => boolean): number {
    let deleted = 0;
    for (const key of [...this.map.keys()]) if (matches(key) && this.delete(key)) deleted++;
    return deleted;
  }

  /**
   * Drops the oldest entry as the cap would, counted in `evictions`: for an owner that caps several
   * maps together (the guard's open and finished requests share one cap). False when empty.
   */
  evictOldest(): boolean {
    const oldest = this.map.entries().next();
    if (oldest.done) return false;
    const [key, slot] = oldest.value;
    this.map.delete(key);
    this.evictions++;
    this.drop(key, slot);
    return true;
  }

  /** The live values, oldest first (a copy, like entries()). */
  values(): IterableIterator<V> {
    const now = this.expires ? this.now() : 0;
    const live: V[] = [];
    for (const slot of this.map.values()) if (this.live(slot, now)) live.push(this.vals[slot] as V);
    return live.values();
  }

  /** The live entries, oldest first (a copy: the map may be changed while they are read). */
  entries(): IterableIterator<[K, V]> {
    const now = this.expires ? this.now() : 0;
    const live: [K, V][] = [];
    for (const [key, slot] of this.map) if (this.live(slot, now)) live.push([key, this.vals[slot] as V]);
    return live.values();
  }

  /**
   * The keys, oldest first, as the map holds them when each is reached (not a copy): read across turns
   * of the event loop, it skips the keys deleted since and reaches the keys written since, a key written
   * again (moved to the young end) a second time. For a walk in bounded steps (a snapshot); get() each.
   */
  keysAsWalked(): IterableIterator<K> {
    return this.map.keys();
  }

  /** Drops every entry, telling onDrop of each; none is counted as evicted. */
  clear(): void {
    for (const key of [...this.map.keys()]) this.delete(key);
  }

  /** Drops the expired entries now (writes do it anyway): before reading `size` as a figure. */
  prune(): void {
    this.sweep();
  }

  /** From the oldest end: over the cap, evict; expired, drop; stops at the first live entry within the cap. */
  private sweep(): void {
    const now = this.expires ? this.now() : 0;
    for (const [key, slot] of this.map) {
      if (this.map.size > this.cap) {
        this.map.delete(key);
        this.evictions++;
        this.drop(key, slot);
      } else if (!this.live(slot, now)) {
        this.map.delete(key);
        this.drop(key, slot);
      } else {
        break;
      }
    }
  }

  private live(slot: number, now: number): boolean {
    return !this.expires || this.expiries[slot]! > now;
  }

  /** A slot for a new entry: a freed one, else the next, the expiries grown (doubled) when full. */
  private take(): number {
    if (this.free.length > 0) return this.free.pop()!;
    const slot = this.used++;
    const expiries = this.expiries;
    if (this.expires && slot === expiries.length) {
      const grown = new Float64Array(Math.max(MIN_CAPACITY, expiries.length * 2));
      grown.set(expiries);
      this.expiries = grown;
    }
    return slot;
  }

  /** Frees the slot of an entry already out of the map, then tells onDrop (which may write the map again). */
  private drop(key: K, slot: number): void {
    const value = this.vals[slot] as V;
    // A number left in a free slot holds nothing, and keeps an array of numbers one of unboxed doubles.
    if (typeof value !== 'number') this.vals[slot] = undefined;
    this.free.push(slot);
    if (this.used > MIN_CAPACITY && this.map.size * 4 < this.used) this.compact();
    this.onDrop?.(key, value);
  }

  /**
   * Moves the live entries to slots 0 .. size-1 in their order, in new arrays of twice that room: what
   * a map held at its peak is given back once it is under a quarter of it. Amortized: the entries
   * moved are fewer than the drops since the last growth or compaction. The Map's order is kept (a
   * set of a key it holds changes the value in place).
   */
  private compact(): void {
    const size = this.map.size;
    const room = Math.max(MIN_CAPACITY, size * 2);
    const vals: (V | undefined)[] = [];
    const expiries = this.expires ? new Float64Array(room) : NO_EXPIRIES;
    let next = 0;
    for (const [key, slot] of this.map) {
      vals.push(this.vals[slot]);
      if (this.expires) expiries[next] = this.expiries[slot]!;
      this.map.set(key, next++);
    }
    this.vals = vals;
    this.expiries = expiries;
    this.free = [];
    this.used = next;
  }
}

/** The expiries' first length, and the slots below which a map is never compacted. */
const MIN_CAPACITY = 16;
/** The expiries of a map that holds none yet, or never will (Infinity retention); never written. */
const NO_EXPIRIES = new Float64Array(0);
