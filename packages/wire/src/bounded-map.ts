/**
 * A Map with a cap on entries and a retention time. The oldest entry (by last write or touch) goes
 * first when the cap is reached; entries past their retention are swept lazily on writes.
 */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, { value: V; expiresAt: number }>();
  /** Entries dropped because the cap was reached. */
  evictions = 0;

  constructor(
    private readonly cap: number,
    private readonly retentionMs: number,
    private readonly now: () => number = Date.now,
    private readonly onDrop?: (key: K, value: V) => void,
  ) {
    if (!(cap > 0)) throw new RangeError(`cap must be positive, got ${cap}`);
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.delete(key);
      return undefined;
    }
    return entry.value;
  }

  has(key: K): boolean {
    return this.get(key) !== undefined;
  }

  /** Writes and moves the entry to the young end; resets its retention. */
  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: this.now() + this.retentionMs });
    this.sweep();
  }

  /** Restarts an entry's retention without changing it. */
  touch(key: K): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    entry.expiresAt = this.now() + this.retentionMs;
    this.entries.set(key, entry);
  }

  delete(key: K): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
    this.onDrop?.(key, entry.value);
    return true;
  }

  /** Deletes every entry whose key matches; returns how many went. */
  deleteWhere(matches: (key: K) => boolean): number {
    let deleted = 0;
    for (const key of [...this.entries.keys()]) if (matches(key) && this.delete(key)) deleted++;
    return deleted;
  }

  values(): IterableIterator<V> {
    const now = this.now();
    const live: V[] = [];
    for (const entry of this.entries.values()) if (entry.expiresAt > now) live.push(entry.value);
    return live.values();
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (this.entries.size > this.cap) {
        this.entries.delete(key);
        this.evictions++;
        this.onDrop?.(key, entry.value);
      } else if (entry.expiresAt <= now) {
        this.entries.delete(key);
        this.onDrop?.(key, entry.value);
      } else {
        break;
      }
    }
  }
}
