import { BoundedMap } from '@resumewatch/bounded';

/**
 * A BoundedMap of request keys (`scope \n id`, see requestKey) that also knows each scope's keys, so
 * that a session's release (its DELETE) visits the keys that session holds, not every key of the map.
 *
 * The index follows the map: a key joins it when it is written and leaves it whenever the entry leaves
 * (deleted, expired, evicted by the cap: BoundedMap's onDrop), so it never holds more keys than the map.
 */
export class ScopedMap<V> extends BoundedMap<string, V> {
  private readonly scopes: Map<string, Set<string>>;

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
    const scopes = new Map<string, Set<string>>();
    super(cap, retentionMs, now, (key, value) => {
      const scope = scopeOfValue ? scopeOfValue(value) : scopeOf(key);
      const keys = scopes.get(scope);
      if (keys === undefined) return;
      keys.delete(key);
      if (keys.size === 0) scopes.delete(scope);
    });
    this.scopes = scopes;
  }

  override set(key: string, value: V): void {
    this.setIn(this.scopeOfValue ? this.scopeOfValue(value) : scopeOf(key), key, value);
  }

  /** set(), the key's scope given by the caller (the session's own string: no slice, its hash kept). */
  setIn(scope: string, key: string, value: V): void {
    super.set(key, value);
    const keys = this.scopes.get(scope);
    if (keys === undefined) this.scopes.set(scope, new Set([key]));
    else keys.add(key);
  }

  /**
   * Deletes every entry whose key starts with `scope` and a line break (the session's requests), as
   * deleteWhere((key) => key.startsWith(`${scope}\n`)) would, visiting only those keys; returns how many went.
   */
  deleteScope(scope: string): number {
    // A scope holding a line break is no key's scope (a header value holds none): the prefix decides then.
    if (scope.includes('\n')) return this.deleteWhere((key) => key.startsWith(`${scope}\n`));
    const keys = this.scopes.get(scope);
    if (keys === undefined) return 0;
    this.scopes.delete(scope);
    let deleted = 0;
    for (const key of keys) if (this.delete(key)) deleted++;
    return deleted;
  }
}

/** The scope of a request key: what comes before its first line break. */
function scopeOf(key: string): string {
  const end = key.indexOf('\n');
  return end < 0 ? key : key.slice(0, end);
}
