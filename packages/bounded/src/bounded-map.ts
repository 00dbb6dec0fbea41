/**
 * A Map with a cap on entries and a retention time. The oldest entry (by last write or touch) goes
 * first when the cap is reached; entries past their retention are swept lazily on writes and ignored
 * (and dropped) on reads. With `retentionMs` Infinity entries never expire and reads never look at the
 * clock: only the cap bounds the map.
 *
 * `onDrop` is told of every entry that leaves: deleted, expired or evicted by the cap. Only evictions
 * by the cap are counted (`evictions`): an entry that expired or was deleted was not lost to the cap.
 */
export class BoundedMap<K, V> {
  private readonly map = new Map<K, { value: V; expiresAt: number }>();
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
  }

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const entry = this.map.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt !== Infinity && entry.expiresAt <= this.now()) {
      this.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** Whether the key holds a live entry (true for a stored `undefined` too). */
  has(key: K): boolean {
    const entry = this.map.get(key);
    if (entry === undefined) return false;
    if (entry.expiresAt !== Infinity && entry.expiresAt <= this.now()) {
      this.delete(key);
      return false;
    }
    return true;
  }

  /** Writes and moves the entry to the young end; resets its retention. */
  set(key: K, value: V): void {
    const expiresAt = this.now() + this.retentionMs;
    const entry = this.map.get(key);
    if (entry === undefined) {
      this.map.set(key, { value, expiresAt });
    } else {
      // The entry object is reused: a rewrite allocates nothing.
      this.map.delete(key);
      entry.value = value;
      entry.expiresAt = expiresAt;
      this.map.set(key, entry);
    }
    this.sweep();
  }

  /** Restarts an entry's retention without changing it. */
  touch(key: K): void {
    const entry = this.map.get(key);
    if (!entry) return;
    this.map.delete(key);
    entry.expiresAt = this.now() + this.retentionMs;
    this.map.set(key, entry);
  }

  delete(key: K): boolean {
    const entry = this.map.get(key);
    if (!entry) return false;
    this.map.delete(key);
    this.onDrop?.(key, entry.value);
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
    const [key, entry] = oldest.value;
    this.map.delete(key);
    this.evictions++;
    this.onDrop?.(key, entry.value);
    return true;
  }

  /** The live values, oldest first (a copy, like entries()). */
  values(): IterableIterator<V> {
    const now = this.now();
    const live: V[] = [];
    for (const entry of this.map.values()) if (entry.expiresAt > now) live.push(entry.value);
    return live.values();
  }

  /** The live entries, oldest first (a copy: the map may be changed while they are read). */
  entries(): IterableIterator<[K, V]> {
    const now = this.now();
    const live: [K, V][] = [];
    for (const [key, entry] of this.map) if (entry.expiresAt > now) live.push([key, entry.value]);
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
    const now = this.now();
    for (const [key, entry] of this.map) {
      if (this.map.size > this.cap) {
        this.map.delete(key);
        this.evictions++;
        this.onDrop?.(key, entry.value);
      } else if (entry.expiresAt <= now) {
        this.map.delete(key);
        this.onDrop?.(key, entry.value);
      } else {
        break;
      }
    }
  }
}
