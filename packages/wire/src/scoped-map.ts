import { BoundedMap } from '@resumewatch/bounded';

/** A scope's keys as written, in order: some may have left the map since (`live` counts those still in it). */
interface ScopeKeys {
  keys: string[];
  /** Where the list starts: the keys before it left the map (most leave oldest first, as they came). */
  head: number;
  live: number;
}

/** Keys a scope's list may hold beyond twice its live ones before it is compacted. */
const SLACK = 16;

/**
 * A BoundedMap of request keys (`scope \n id`, see requestKey) that also knows each scope's keys, so
 * that a session's release (its DELETE) visits the keys that session holds, not every key of the map.
 *
 * The index follows the map: a key joins its scope's list when it is written anew, and the scope's live
 * count falls whenever the entry leaves (deleted, expired, evicted by the cap: BoundedMap's onDrop); a
 * scope with none left goes. A list is an array, not a Set: a write pushes, a drop only counts, and a
 * list holding more than twice its live keys and a few is compacted (the keys no longer in the map taken
 * out) at the next write, so that past a write none holds more than that. (A Set per scope cost a hash insert and delete per
 * request, and the collector traced its table.)
 */
export class ScopedMap<V> extends BoundedMap<string, V> {
  private readonly scopes: Map<string, ScopeKeys>;
  /**
   * Lists that their drops left holding more than twice their live keys and a few: compacted at the next
   * write (not within a drop, which may come from within the map's own sweep), as the map itself sweeps
   * its expired entries at its next write.
   */
  private readonly dirty: Map<string, ScopeKeys>;

  /**
   * `scopeOfValue`: the scope as the value holds it (a request record's session id, the session's own
   * string, whose hash V8 keeps), so that no scope is cut out of the key and hashed anew at each write.
   */
  constructor(
    cap: number,
    retentionMs: number,
    now: () => number,
    private readonly scopeOfValue?: (value: V) => string,
  ) {
    const scopes = new Map<string, ScopeKeys>();
    const dirty = new Map<string, ScopeKeys>();
    super(cap, retentionMs, now, (key, value) => {
      const scope = scopeOfValue ? scopeOfValue(value) : scopeOf(key);
      const index = scopes.get(scope);
      if (index === undefined) return;
      if (--index.live === 0) {
        scopes.delete(scope);
        dirty.delete(scope);
        return;
      }
      if (index.keys[index.head] === key) index.head++;
      else if (index.keys.length - index.head > 2 * index.live + SLACK) dirty.set(scope, index);
    });
    this.scopes = scopes;
    this.dirty = dirty;
  }

  override set(key: string, value: V): void {
    this.setIn(this.scopeOfValue ? this.scopeOfValue(value) : scopeOf(key), key, value);
  }

  /** set(), the key's scope given by the caller (the session's own string: no slice, its hash kept). */
  setIn(scope: string, key: string, value: V): void {
    if (this.dirty.size > 0) this.compactDirty();
    // Indexed before the write: the write's sweep may drop it at once (a retention of 0), and counts it out then.
    if (!this.has(key)) {
      const index = this.scopes.get(scope);
      if (index === undefined) this.scopes.set(scope, { keys: [key], head: 0, live: 1 });
      else {
        const keys = index.keys;
        // The keys before the head go once they are as many as those after it (a copy of the live part).
        if (index.head > SLACK && index.head * 2 > keys.length) {
          index.keys = keys.slice(index.head);
          index.head = 0;
        }
        index.keys.push(key);
        index.live++;
        if (index.keys.length - index.head > 2 * index.live + SLACK) this.dirty.set(scope, index);
      }
    }
    super.set(key, value);
  }

  /**
   * Deletes every entry whose key starts with `scope` and a line break (the session's requests), as
   * deleteWhere((key) => key.startsWith(`${scope}\n`)) would, visiting only those keys (and no more
   * than as many again that left before); returns how many went.
   */
  deleteScope(scope: string): number {
    // A scope holding a line break is no key's scope (a header value holds none): the prefix decides then.
    if (scope.includes('\n')) return this.deleteWhere((key) => key.startsWith(`${scope}\n`));
    const index = this.scopes.get(scope);
    if (index === undefined) return 0;
    this.scopes.delete(scope);
    let deleted = 0;
    const keys = index.keys;
    for (let i = index.head; i < keys.length; i++) if (this.delete(keys[i]!)) deleted++;
    return deleted;
  }

  /**
   * Each dirty list without the keys that left the map, each key once (one that left and was written
   * again is in its list twice). `has` may expire a key meanwhile: onDrop counts it out as it does.
   */
  private compactDirty(): void {
    for (const [scope, index] of this.dirty) {
      this.dirty.delete(scope);
      if (this.scopes.get(scope) !== index) continue;
      let kept: string[] = [];
      const keys = index.keys;
      for (let i = index.head; i < keys.length; i++) if (this.has(keys[i]!)) kept.push(keys[i]!);
      // More kept than live: a key is in twice (rare: one written again after it left). Each once, in order.
      if (kept.length > index.live) kept = [...new Set(kept)];
      index.keys = kept;
      index.head = 0;
    }
  }
}

/** The scope of a request key: what comes before its first line break. */
function scopeOf(key: string): string {
  const end = key.indexOf('\n');
  return end < 0 ? key : key.slice(0, end);
}
