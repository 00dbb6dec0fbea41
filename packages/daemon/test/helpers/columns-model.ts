import { expect } from 'vitest';
import type { SpanRecord } from '@resumewatch/detector';
import { SpanColumns } from '../../src/page/span-columns.js';
import type { SpanKey } from '../../src/page/span-key.js';
import { timelineEvent, type TimelineEvent } from '../../src/page/timeline-event.js';
import { HeldRequests, eventBytes } from './held-requests.js';

/*
 * The evidence's two stores (its window and its held evidence) as columns, beside the reference model
 * (HeldRequests of timeline events), stepped together: span-columns.test.ts with string keys,
 * span-columns-keys.test.ts with keys of parts whose hash collides as often as wanted.
 */

/** A small deterministic generator (mulberry32), so that a failure replays. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a store gives back of a request, to compare. */
const view = (h: { events: TimelineEvent[]; bytes: number; dropped: number } | undefined) =>
  h === undefined ? undefined : { events: h.events, bytes: h.bytes, dropped: h.dropped };

/** Where one random draw in [0, 1) falls: below `take` a window's take, below `hold` a finding, below `get` a read; else a span. */
export interface StepOdds {
  take: number;
  hold: number;
  get: number;
}

export class StoresAndModel {
  readonly window: SpanColumns;
  readonly held: SpanColumns;
  readonly windowObjects: HeldRequests<TimelineEvent>;
  readonly heldObjects: HeldRequests<TimelineEvent>;

  constructor(windowBytes: number, heldBytes: number, hashMask = -1) {
    this.window = new SpanColumns(windowBytes, 8, 3, 512, hashMask);
    this.held = new SpanColumns(heldBytes, 12, 5, undefined, hashMask);
    this.windowObjects = new HeldRequests<TimelineEvent>(windowBytes, 8, 3, () => 512);
    this.heldObjects = new HeldRequests<TimelineEvent>(heldBytes, 12, 5, eventBytes);
  }

  /**
   * One step on the request `key` (the model's key: `text`), as the evidence takes it: `what` picks the
   * operation by `odds`, `span` makes the span appended. Both sides must give back, and hold, the same.
   */
  step(key: string | SpanKey, text: string, what: number, odds: StepOdds, span: () => SpanRecord): void {
    const { window, held, windowObjects, heldObjects } = this;
    if (what < odds.take) {
      expect(view(window.take(key))).toEqual(view(windowObjects.take(text)));
    } else if (what < odds.hold) {
      // A finding: the request's window moves to the evidence (Evidence.hold).
      if (heldObjects.has(text)) {
        heldObjects.touch(text);
        held.touch(key);
      } else {
        const spans = windowObjects.take(text);
        const events = spans ? spans.events : [];
        let bytes = 0;
        for (const event of events) bytes += eventBytes(event);
        heldObjects.put(text, { events, bytes, dropped: spans?.dropped ?? 0 });
        held.moveIn(key, window);
      }
    } else if (what < odds.get) {
      const a = held.get(key);
      const b = heldObjects.get(text);
      expect(view(a)).toEqual(view(b));
      if (a) expect(JSON.stringify(a.events)).toBe(JSON.stringify(b!.events));
    } else {
      const s = span();
      if (heldObjects.has(text)) {
        heldObjects.append(text, timelineEvent(s));
        held.append(key, s);
      } else {
        windowObjects.append(text, timelineEvent(s));
        window.append(key, s);
      }
    }
    expect([window.bytes, window.size, window.has(key), held.bytes, held.size, held.has(key)]).toEqual([
      windowObjects.bytes,
      windowObjects.size,
      windowObjects.has(text),
      heldObjects.bytes,
      heldObjects.size,
      heldObjects.has(text),
    ]);
  }

  /** At the end: each request's evidence, then its window taken out, the same on both sides. */
  drain(key: string | SpanKey, text: string): void {
    expect(view(this.held.get(key))).toEqual(view(this.heldObjects.get(text)));
    expect(view(this.window.take(key))).toEqual(view(this.windowObjects.take(text)));
  }
}
