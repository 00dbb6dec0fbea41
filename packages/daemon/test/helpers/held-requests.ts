import type { Held } from '../../src/page/span-columns.js';
import type { TimelineEvent } from '../../src/page/timeline-event.js';

/*
 * The reference model of the page's evidence stores: requests' items held in objects, with the bounds and
 * the order SpanColumns (src/page/span-columns.ts) keeps over columns. page-window.test.ts fixes its
 * order; columns-model.ts steps the two side by side (span-columns.test.ts, span-columns-keys.test.ts).
 * The page kept its spans so before the columns.
 */

/** Bytes an event is counted for: about its JSON text, without making it (SpanColumns counts the same from its columns). */
export function eventBytes(event: TimelineEvent): number {
  let bytes = 72 + event.span_id.length + event.type.length;
  const attrs = event.attributes;
  for (const key in attrs) {
    const value = attrs[key];
    bytes += key.length + 6 + (typeof value === 'string' ? value.length * 3 : 8);
  }
  return bytes;
}

/** A request's entry: its items, and its neighbours in the order of last touch. */
class Entry<T> implements Held<T> {
  events: T[] = [];
  bytes = 0;
  dropped = 0;
  /** Less and more recently touched entries; undefined at the ends. */
  older: Entry<T> | undefined = undefined;
  newer: Entry<T> | undefined = undefined;
  constructor(readonly key: string) {}
}

/**
 * Items (timeline events, or the spans they are made from) by request, least recently touched first,
 * within `maxBytes` in all (each item counted for `bytesOf` it): the oldest request goes when a new item
 * would pass the cap. A request holds at most `maxEvents`: its first `head` items (the live stream and
 * its terminal, where a loop starts) and the latest ones (how it goes on).
 *
 * The order of last touch is a linked list through the entries, not the map's insertion order: the window
 * touches a request for every span the daemon accepts, and moving a map entry to the end (delete, then set)
 * costs two more hash operations and leaves a deleted slot that every later walk from the oldest end skips.
 * Not a BoundedMap (packages/bounded): that caps a count of entries; this caps their bytes, and what a
 * request holds changes with every item appended.
 *
 */
export class HeldRequests<T> {
  private readonly byKey = new Map<string, Entry<T>>();
  private oldest: Entry<T> | undefined = undefined;
  private newest: Entry<T> | undefined = undefined;
  private total = 0;
  /**
   * The last key looked up and its entry (undefined: none). The evidence asks about the same request for
   * each of its consecutive spans (whether it is held, then to append to the window): one hash lookup per
   * request instead of one or two per span. Every change to byKey goes through append, put and remove.
   */
  private lastKey: string | undefined = undefined;
  private lastEntry: Entry<T> | undefined = undefined;

  constructor(
    private readonly maxBytes: number,
    private readonly maxEvents: number,
    private readonly head: number,
    private readonly bytesOf: (item: T) => number,
  ) {}

  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.byKey.size;
  }

  has(key: string): boolean {
    return this.find(key) !== undefined;
  }

  get(key: string): Held<T> | undefined {
    return this.find(key);
  }

  private find(key: string): Entry<T> | undefined {
    if (key !== this.lastKey) {
      this.lastKey = key;
      this.lastEntry = this.byKey.get(key);
    }
    return this.lastEntry;
  }

  /** Adds an event to the request's timeline (a new one if it had none), keeping the bounds. */
  append(key: string, event: T): void {
    const size = this.bytesOf(event);
    if (size > this.maxBytes) return;
    let held = this.find(key);
    if (held) this.makeNewest(held);
    else {
      held = new Entry<T>(key);
      this.byKey.set(key, held);
      this.lastEntry = held;
      this.link(held);
    }
    held.events.push(event);
    held.bytes += size;
    this.total += size;
    if (held.events.length > this.maxEvents) {
      const [gone] = held.events.splice(this.head, 1);
      const freed = this.bytesOf(gone!);
      held.bytes -= freed;
      this.total -= freed;
      held.dropped++;
    }
    if (this.total > this.maxBytes) this.evictBeyondCap(held);
  }

  /** Takes the request's timeline out. */
  take(key: string): Held<T> | undefined {
    const held = this.find(key);
    if (!held) return undefined;
    this.remove(held);
    return held;
  }

  /** Puts a timeline in (as the most recent), trimmed to the bounds. */
  put(key: string, timeline: Held<T>): void {
    this.take(key);
    const held = new Entry<T>(key);
    held.events = timeline.events;
    held.bytes = timeline.bytes;
    held.dropped = timeline.dropped;
    while (held.events.length > this.maxEvents) {
      held.bytes -= this.bytesOf(held.events.splice(this.head, 1)[0]!);
      held.dropped++;
    }
    this.byKey.set(key, held);
    this.lastKey = key;
    this.lastEntry = held;
    this.link(held);
    this.total += held.bytes;
    this.evictBeyondCap(held);
  }

  /** Marks the request as the most recently touched. */
  touch(key: string): void {
    const held = this.find(key);
    if (held) this.makeNewest(held);
  }

  private remove(held: Entry<T>): void {
    this.byKey.delete(held.key);
    if (this.lastEntry === held) this.lastEntry = undefined;
    this.unlink(held);
    this.total -= held.bytes;
  }

  private link(held: Entry<T>): void {
    held.older = this.newest;
    held.newer = undefined;
    if (this.newest) this.newest.newer = held;
    else this.oldest = held;
    this.newest = held;
  }

  private unlink(held: Entry<T>): void {
    if (held.older) held.older.newer = held.newer;
    else this.oldest = held.newer;
    if (held.newer) held.newer.older = held.older;
    else this.newest = held.older;
    held.older = held.newer = undefined;
  }

  private makeNewest(held: Entry<T>): void {
    if (this.newest === held) return;
    this.unlink(held);
    this.link(held);
  }

  private evictBeyondCap(keep: Entry<T>): void {
    let e = this.oldest;
    while (e && this.total > this.maxBytes) {
      const next = e.newer;
      if (e !== keep) this.remove(e);
      e = next;
    }
    // Only `keep` is left and still too big: its oldest events beyond the head go.
    while (this.total > this.maxBytes && keep.events.length > 1) {
      const index = Math.min(this.head, keep.events.length - 1);
      const freed = this.bytesOf(keep.events.splice(index, 1)[0]!);
      keep.bytes -= freed;
      this.total -= freed;
      keep.dropped++;
    }
  }
}
