import type { TimelineEvent } from './timeline-event.js';

/** The items held for one request: the first `head` it had, then the latest; `dropped` left out between. */
export interface Held<T> {
  events: T[];
  bytes: number;
  dropped: number;
}
export type HeldTimeline = Held<TimelineEvent>;

/** Bytes an event is counted for: about its JSON text, without making it. */
export function eventBytes(event: TimelineEvent): number {
  let bytes = 72 + event.span_id.length + event.type.length;
  const attrs = event.attributes;
  for (const key in attrs) {
    const value = attrs[key];
    bytes += key.length + 6 + (typeof value === 'string' ? value.length * 3 : 8);
  }
  return bytes;
}

/**
 * Items (timeline events, or the spans they are made from) by request, least recently touched first,
 * within `maxBytes` in all (each item counted for `bytesOf` it): the oldest request goes when a new item
 * would pass the cap. A request holds at most `maxEvents`: its first `head` items (the live stream and
 * its terminal, where a loop starts) and the latest ones (how it goes on).
 */
export class HeldRequests<T> {
  private readonly byKey = new Map<string, Held<T>>();
  private total = 0;

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
    return this.byKey.has(key);
  }

  get(key: string): Held<T> | undefined {
    return this.byKey.get(key);
  }

  /** Adds an event to the request's timeline (a new one if it had none), keeping the bounds. */
  append(key: string, event: T): void {
    const size = this.bytesOf(event);
    if (size > this.maxBytes) return;
    let held = this.byKey.get(key);
    if (held) this.byKey.delete(key);
    else held = { events: [], bytes: 0, dropped: 0 };
    this.byKey.set(key, held);
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
    this.evictBeyondCap(key);
  }

  /** Takes the request's timeline out. */
  take(key: string): Held<T> | undefined {
    const held = this.byKey.get(key);
    if (!held) return undefined;
    this.byKey.delete(key);
    this.total -= held.bytes;
    return held;
  }

  /** Puts a timeline in (as the most recent), trimmed to the bounds. */
  put(key: string, held: Held<T>): void {
    this.take(key);
    while (held.events.length > this.maxEvents) {
      held.bytes -= this.bytesOf(held.events.splice(this.head, 1)[0]!);
      held.dropped++;
    }
    this.byKey.set(key, held);
    this.total += held.bytes;
    this.evictBeyondCap(key);
  }

  /** Marks the request as the most recently touched. */
  touch(key: string): void {
    const held = this.byKey.get(key);
    if (!held) return;
    this.byKey.delete(key);
    this.byKey.set(key, held);
  }

  private evictBeyondCap(keep: string): void {
    for (const [key] of this.byKey) {
      if (this.total <= this.maxBytes) return;
      if (key === keep) continue;
      this.take(key);
    }
    // Only `keep` is left and still too big: its oldest events beyond the head go.
    const held = this.byKey.get(keep);
    while (held && this.total > this.maxBytes && held.events.length > 1) {
      const index = Math.min(this.head, held.events.length - 1);
      const freed = this.bytesOf(held.events.splice(index, 1)[0]!);
      held.bytes -= freed;
      this.total -= freed;
      held.dropped++;
    }
  }
}
