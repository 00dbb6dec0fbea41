import { SPAN_KIND_SERVER, type AttributeValue, type SpanRecord } from '@resumewatch/detector';
import { EventType, SHOWN, SpanScan, eventType, type TimelineEvent } from './timeline-event.js';
import { KEY_TEXT, SpanKey, setKey } from './span-key.js';

/** The items held for one request: the first `head` it had, then the latest; `dropped` left out between. */
export interface Held<T> {
  events: T[];
  bytes: number;
  dropped: number;
}
export type HeldTimeline = Held<TimelineEvent>;

/** A span's event type by its number in the window (the order of EventType). */
const TYPES: readonly EventType[] = [
  EventType.CALL,
  EventType.TERMINAL,
  EventType.RESUME,
  EventType.REATTACH,
  EventType.TASK_STATUS,
  EventType.LISTENING_REFUSED,
];
/** A span's event type's number: its index in TYPES (by comparisons of constants, no lookup). */
function typeNumber(name: string): number {
  const type = eventType(name);
  for (let n = 0; n < TYPES.length; n++) if (TYPES[n] === type) return n;
  throw new Error(`no number for the event type ${type}`);
}
/** Set in a span's kind byte for a server's span; the event type's number is below it. */
const SERVER = 8;
if (TYPES.length > SERVER) throw new Error("the event types must fit below the kind byte's SERVER bit");
/** No span or no request (the end of a list, an empty free list, an empty place of the key table). */
const NONE = -1;
/** A request's tag once it is free (no KEY_ value). */
const FREE = 255;
/** Slots and requests the columns are first made for; they double as needed, up to the cap's count. */
const FIRST_CAPACITY = 256;
/**
 * Values a slot keeps in its chunk: its span's first INLINE shown attributes' values, in SHOWN's order; a
 * span with more keeps the rest in an array of its own (`extra`). A span has a few of the 24 (a request
 * span its method, a terminal its stream id, a resume six): a place for each of the 24, most of them
 * empty, was 192 bytes a slot, three quarters of what the window kept per span.
 */
const INLINE = 8;
/**
 * Slots whose values one chunk holds (a power of two; 2,048 slots of INLINE values, 128 KiB and its
 * header: a large object, which the young generation's collection promotes by page rather than copying).
 * The values are kept in chunks, each made with the first of its slots and never copied: one array grown
 * to its size by pushes was copied at every growth, about twice its final size of garbage promoted to the
 * old generation while the evidence fills, which brought serve's first full collection (marking the
 * whole heap) earlier.
 */
const CHUNK_SHIFT = 11;
const CHUNK_SLOTS = 1 << CHUNK_SHIFT;
const CHUNK_MASK = CHUNK_SLOTS - 1;
const CHUNK_VALUES = CHUNK_SLOTS * INLINE;

/** Lowercase hex digits by value, and a character code's value (-1: not a lowercase hex digit). */
const HEX = '0123456789abcdef';
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) DIGIT[HEX.charCodeAt(i)] = i;

/** 8 lowercase hex digits at `at` as a number, or -1 when one is not such a digit. */
function hexWord(s: string, at: number): number {
  let v = 0;
  for (let i = at; i < at + 8; i++) {
    const c = s.charCodeAt(i);
    const d = c < 128 ? DIGIT[c]! : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/** The bits set in a 32-bit word. */
function bitCount(v: number): number {
  v = v - ((v >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 0xff;
}

function wordHex(v: number): string {
  let s = '';
  for (let shift = 28; shift >= 0; shift -= 4) s += HEX[(v >>> shift) & 15];
  return s;
}

/**
 * Spans of requests as what their timeline events need, in columns of typed arrays (times, type, span id
 * as two words, which shown attributes it has) and one array of the shown attributes' values, instead of
 * an event object, an attributes object, boxed times and an id string per span, and an entry object and
 * an events array per request. The page's evidence keeps its two stores so: the window, through which
 * every span of healthy traffic passes and which nearly all leave unread, and the reported requests'
 * timelines. The latest few thousand spans are held long enough to be copied by the young generation's
 * collections, and the reported ones for good: what is held in objects is what those collections, and
 * then the old generation's, cost. Events are made only when read (take, get).
 *
 * Bounds and order are those of HeldRequests, the tests' reference model (test/helpers/held-requests.ts):
 * each span counted `spanBytes` if given, else eventBytes of its event; a request keeps
 * at most `maxEvents`, its first `head` and its latest (the ones between dropped, counted); past
 * `maxBytes` the least recently touched request goes first, and if the one being added to is left
 * alone beyond the cap, its oldest spans after the head go.
 */
export class SpanColumns {
  /**
   * The requests by key: an open-addressed table of request numbers (NONE: empty), at most half full (it
   * doubles with the requests' columns), a key's place found from its hash by linear probing and a
   * request's parts compared part by part, so that two keys of one hash are told apart. A request's key
   * is kept as its parts (keyTag, keyA, keyB, keyC: references to strings the spans or findings already
   * had) and its hash: neither a key string nor a Map's entry is made per span (SpanKey).
   */
  private table = new Int32Array(0);
  private keyTag = new Uint8Array(0);
  private keyHash = new Int32Array(0);
  private keyA: string[] = [];
  private keyB: string[] = [];
  private keyC: (string | number)[] = [];
  /** Requests held (the table's entries). */
  private live = 0;
  /** The last request found (NONE: none); a request's spans come one after another. */
  private lastRequest = NONE;
  /** A string key's parts (the string methods' key, made again for each call). */
  private readonly text = new SpanKey();
  private total = 0;

  // Per span slot: its times, kind byte, id words, shown attributes' mask, bytes counted, next span of its request.
  private start = new Float64Array(0);
  private end = new Float64Array(0);
  private kind = new Uint8Array(0);
  private idHigh = new Uint32Array(0);
  private idLow = new Uint32Array(0);
  private mask = new Uint32Array(0);
  private spanSize = new Float64Array(0);
  private next = new Int32Array(0);
  /** A span id that is not 16 lowercase hex digits, as it came (undefined: the words hold it). */
  private oddIds: (string | undefined)[] = [];
  /**
   * The values of the shown attributes the mask has, in SHOWN's order, INLINE places a slot: slot s's in
   * chunk s >> CHUNK_SHIFT from (s & CHUNK_MASK) * INLINE; those beyond INLINE in extra[s].
   */
  private readonly values: (AttributeValue | undefined)[][] = [];
  /** A slot's values beyond its INLINE first (undefined: it has no more). */
  private extra: ((AttributeValue | undefined)[] | undefined)[] = [];
  private slots = 0;
  private freeSlot = NONE;
  /**
   * The most slots ever in use when every span counts the same (the window): the spans the cap holds and
   * the one being added before the eviction it brings. The columns grow to it rather than to the next
   * power of two, which for the default window (8,192 spans, and that one) was twice its size.
   */
  private readonly slotCap: number;

  // Per request: its first and last span, span count, dropped count, bytes, neighbours in the order of last touch.
  private first = new Int32Array(0);
  private last = new Int32Array(0);
  private count = new Int32Array(0);
  private dropped = new Float64Array(0);
  private held = new Float64Array(0);
  private older = new Int32Array(0);
  private newer = new Int32Array(0);
  private requests = 0;
  private freeRequest = NONE;
  private oldest = NONE;
  private newest = NONE;

  constructor(
    private readonly maxBytes: number,
    private readonly maxEvents: number,
    private readonly head: number,
    /** What every span is counted for; undefined: eventBytes of its event. */
    private readonly spanBytes: number | undefined,
    /** The bits of a key's hash the table uses (tests: fewer, to make keys collide); all by default. */
    private readonly hashMask = -1,
  ) {
    this.slotCap = spanBytes !== undefined && spanBytes > 0 ? Math.floor(maxBytes / spanBytes) + 1 : Infinity;
  }

  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.live;
  }

  /**
   * Whether the key's request has spans held. A key is a SpanKey (the evidence's, filled again span after
   * span) or any string (its text is its only part: never equal to a SpanKey of other parts).
   */
  has(key: string | SpanKey): boolean {
    return this.find(this.keyFor(key)) !== NONE;
  }

  private keyFor(key: string | SpanKey): SpanKey {
    return typeof key === 'string' ? setKey(this.text, KEY_TEXT, key, '', '') : key;
  }

  private find(key: SpanKey): number {
    const hash = key.hash & this.hashMask;
    let r = this.lastRequest;
    if (r !== NONE && this.keyHash[r] === hash && this.same(r, key)) return r;
    const table = this.table;
    const mask = table.length - 1;
    r = NONE;
    for (let at = hash & mask; mask > 0; at = (at + 1) & mask) {
      const found = table[at]!;
      if (found === NONE) break;
      if (this.keyHash[found] === hash && this.same(found, key)) {
        r = found;
        break;
      }
    }
    this.lastRequest = r;
    return r;
  }

  /** Whether the request's key has the key's parts (the request id first: the part that differs most). */
  private same(r: number, key: SpanKey): boolean {
    return this.keyC[r] === key.c && this.keyB[r] === key.b && this.keyA[r] === key.a && this.keyTag[r] === key.tag;
  }

  /** Puts the request (its key's parts set) in the table. */
  private place(r: number): void {
    const table = this.table;
    const mask = table.length - 1;
    let at = this.keyHash[r]! & mask;
    while (table[at] !== NONE) at = (at + 1) & mask;
    table[at] = r;
  }

  /**
   * Takes the request out of the table: the entries after it in its run move back into the place they
   * may have (a deletion that leaves no tombstone, so that the table never fills with them).
   */
  private displace(r: number): void {
    const table = this.table;
    const mask = table.length - 1;
    let hole = this.keyHash[r]! & mask;
    while (table[hole] !== r) hole = (hole + 1) & mask;
    for (let at = (hole + 1) & mask; ; at = (at + 1) & mask) {
      const moved = table[at]!;
      if (moved === NONE) break;
      const home = this.keyHash[moved]! & mask;
      // `moved` may fill the hole unless its home is cyclically in (hole, at].
      const stays = hole <= at ? home > hole && home <= at : home > hole || home <= at;
      if (stays) continue;
      table[hole] = moved;
      hole = at;
    }
    table[hole] = NONE;
  }

  /** The scan of append's span (the evidence scans each span once and calls appendScanned). */
  private readonly scan = new SpanScan();

  /** Adds the span to the request's spans (a new request if it had none), keeping the bounds. */
  append(key: string | SpanKey, span: SpanRecord): void {
    this.scan.read(span.attributes);
    this.appendScanned(key, span, this.scan);
  }

  /**
   * As append, with the span's attributes already read into `scan` (SpanScan.read of them). `spanIdWords`:
   * the span id's 8 bytes as two big-endian words, when the door has them (the OTLP/protobuf decoder's
   * SpanSink): they must be `span.spanId`'s, and its 16 hex digits are then not parsed again.
   */
  appendScanned(key: string | SpanKey, span: SpanRecord, scan: SpanScan, spanIdWords?: Uint32Array): void {
    if (this.spanBytes !== undefined && this.spanBytes > this.maxBytes) return;
    const slot = this.store(span, scan, spanIdWords);
    const size = this.spanSize[slot]!;
    if (size > this.maxBytes) return this.freeSlotOf(slot);
    const k = this.keyFor(key);
    let r = this.find(k);
    if (r !== NONE) this.makeNewest(r);
    else {
      r = this.newRequest(k);
      this.lastRequest = r;
      this.link(r);
    }
    this.push(r, slot);
    if (this.count[r]! > this.maxEvents) this.dropAt(r, this.head);
    if (this.total > this.maxBytes) this.evictBeyondCap(r);
  }

  /** The request's spans as their timeline events (a copy), or undefined when none is held. */
  get(key: string | SpanKey): Held<TimelineEvent> | undefined {
    const r = this.find(this.keyFor(key));
    if (r === NONE) return undefined;
    const events: TimelineEvent[] = [];
    for (let slot = this.first[r]!; slot !== NONE; slot = this.next[slot]!) events.push(this.event(slot));
    return { events, bytes: this.held[r]!, dropped: this.dropped[r]! };
  }

  /** Takes the request's spans out, as their timeline events. */
  take(key: string | SpanKey): Held<TimelineEvent> | undefined {
    const held = this.get(key);
    if (held) this.remove(this.lastRequest);
    return held;
  }

  /** Marks the request as the most recently touched. */
  touch(key: string | SpanKey): void {
    const r = this.find(this.keyFor(key));
    if (r !== NONE) this.makeNewest(r);
  }

  /**
   * Moves the request's spans from `from` (the window) in, as the most recent request (an empty one if
   * `from` holds none), trimmed to the bounds: as HeldRequests.put of the events `from.take` gives.
   */
  moveIn(key: string | SpanKey, from: SpanColumns): void {
    const k = this.keyFor(key);
    let r = this.find(k);
    if (r !== NONE) this.remove(r);
    r = this.newRequest(k);
    const source = from.find(from.keyFor(key));
    if (source !== NONE) {
      for (let slot = from.first[source]!; slot !== NONE; slot = from.next[slot]!) this.push(r, this.copy(from, slot));
      this.dropped[r] = from.dropped[source]!;
      from.remove(source);
    }
    while (this.count[r]! > this.maxEvents) this.dropAt(r, this.head);
    this.lastRequest = r;
    this.link(r);
    this.evictBeyondCap(r);
  }

  private push(r: number, slot: number): void {
    if (this.count[r] === 0) this.first[r] = slot;
    else this.next[this.last[r]!] = slot;
    this.last[r] = slot;
    this.count[r]!++;
    const size = this.spanSize[slot]!;
    this.held[r]! += size;
    this.total += size;
  }

  /** The span's slot, filled with what its event needs. */
  private store(span: SpanRecord, scan: SpanScan, spanIdWords: Uint32Array | undefined): number {
    const slot = this.newSlot();
    this.start[slot] = span.startTimeUnixMs;
    this.end[slot] = span.endTimeUnixMs;
    this.kind[slot] = typeNumber(span.name) | (span.kind === SPAN_KIND_SERVER ? SERVER : 0);
    const id = span.spanId;
    let high: number;
    let low: number;
    if (spanIdWords !== undefined) {
      high = spanIdWords[0]!;
      low = spanIdWords[1]!;
    } else {
      high = id.length === 16 ? hexWord(id, 0) : -1;
      low = high < 0 ? -1 : hexWord(id, 8);
    }
    if (low < 0) this.oddIds[slot] = id;
    else {
      this.idHigh[slot] = high;
      this.idLow[slot] = low;
      if (this.oddIds[slot] !== undefined) this.oddIds[slot] = undefined;
    }
    let present = scan.mask;
    this.mask[slot] = present;
    const values = this.values[slot >> CHUNK_SHIFT]!;
    const at = (slot & CHUNK_MASK) * INLINE;
    const scanned = scan.values;
    let extra: (AttributeValue | undefined)[] | undefined;
    for (let index = 0, k = 0; present !== 0; index++, present >>>= 1) {
      if ((present & 1) === 0) continue;
      if (k < INLINE) values[at + k++] = scanned[index];
      else (extra ??= []).push(scanned[index]);
    }
    if (extra !== undefined || this.extra[slot] !== undefined) this.extra[slot] = extra;
    this.spanSize[slot] = this.spanBytes ?? this.eventBytes(slot);
    return slot;
  }

  /** A slot filled with `from`'s span in `at`. */
  private copy(from: SpanColumns, at: number): number {
    const slot = this.newSlot();
    this.start[slot] = from.start[at]!;
    this.end[slot] = from.end[at]!;
    this.kind[slot] = from.kind[at]!;
    this.idHigh[slot] = from.idHigh[at]!;
    this.idLow[slot] = from.idLow[at]!;
    if (from.oddIds[at] !== undefined || this.oddIds[slot] !== undefined) this.oddIds[slot] = from.oddIds[at];
    this.mask[slot] = from.mask[at]!;
    const values = this.values[slot >> CHUNK_SHIFT]!;
    const to = (slot & CHUNK_MASK) * INLINE;
    const fromValues = from.values[at >> CHUNK_SHIFT]!;
    const source = (at & CHUNK_MASK) * INLINE;
    for (let k = 0, n = Math.min(INLINE, bitCount(from.mask[at]!)); k < n; k++) values[to + k] = fromValues[source + k];
    const extra = from.extra[at];
    if (extra !== undefined || this.extra[slot] !== undefined) this.extra[slot] = extra && [...extra];
    this.spanSize[slot] = this.spanBytes ?? this.eventBytes(slot);
    return slot;
  }

  /** eventBytes (the tests' held-requests.ts) of the event the slot makes, without making it. */
  private eventBytes(slot: number): number {
    const id = this.oddIds[slot];
    let bytes = 72 + (id === undefined ? 16 : id.length) + TYPES[this.kind[slot]! & ~SERVER]!.length;
    const values = this.values[slot >> CHUNK_SHIFT]!;
    const at = (slot & CHUNK_MASK) * INLINE;
    const extra = this.extra[slot];
    for (let index = 0, k = 0, present = this.mask[slot]!; present !== 0; index++, present >>>= 1) {
      if ((present & 1) === 0) continue;
      const value = k < INLINE ? values[at + k] : extra![k - INLINE];
      k++;
      bytes += SHOWN[index]!.length + 6 + (typeof value === 'string' ? value.length * 3 : 8);
    }
    return bytes;
  }

  private newSlot(): number {
    let slot = this.freeSlot;
    if (slot !== NONE) this.freeSlot = this.next[slot]!;
    else {
      if (this.slots === this.next.length) this.growSlots();
      slot = this.slots++;
      // Filled, not left with holes: every chunk has the same elements kind, so the reads stay monomorphic.
      // The last chunk under the window's slot cap is made only as long as the slots it can have.
      if ((slot & CHUNK_MASK) === 0) {
        const length = Math.min(CHUNK_VALUES, (this.slotCap - slot) * INLINE);
        this.values.push(new Array<AttributeValue | undefined>(length).fill(undefined));
      }
    }
    this.next[slot] = NONE;
    return slot;
  }

  /** The timeline event of the span in `slot`, as timelineEvent makes it of the span. */
  private event(slot: number): TimelineEvent {
    const attributes: Record<string, AttributeValue> = {};
    const values = this.values[slot >> CHUNK_SHIFT]!;
    const at = (slot & CHUNK_MASK) * INLINE;
    const extra = this.extra[slot];
    for (let index = 0, k = 0, present = this.mask[slot]!; present !== 0; index++, present >>>= 1) {
      if ((present & 1) === 0) continue;
      attributes[SHOWN[index]!] = (k < INLINE ? values[at + k] : extra![k - INLINE])!;
      k++;
    }
    const kind = this.kind[slot]!;
    const event: TimelineEvent = {
      type: TYPES[kind & ~SERVER]!,
      start: this.start[slot]!,
      end: this.end[slot]!,
      span_id: this.oddIds[slot] ?? wordHex(this.idHigh[slot]!) + wordHex(this.idLow[slot]!),
      attributes,
    };
    if ((kind & SERVER) !== 0) event.server = true;
    return event;
  }

  /** Drops the request's span at `index` (after its first), counting it dropped. */
  private dropAt(r: number, index: number): void {
    let before = this.first[r]!;
    for (let i = 1; i < index; i++) before = this.next[before]!;
    const gone = this.next[before]!;
    this.next[before] = this.next[gone]!;
    if (this.last[r] === gone) this.last[r] = before;
    const size = this.spanSize[gone]!;
    this.freeSlotOf(gone);
    this.count[r]!--;
    this.dropped[r]!++;
    this.held[r]! -= size;
    this.total -= size;
  }

  private freeSlotOf(slot: number): void {
    // The values stay until the slot is filled again: only its mask's are ever read.
    this.next[slot] = this.freeSlot;
    this.freeSlot = slot;
  }

  /** A request of the key (not held: find gave NONE), in the table. */
  private newRequest(key: SpanKey): number {
    let r = this.freeRequest;
    if (r !== NONE) this.freeRequest = this.newer[r]!;
    else {
      if (this.requests === this.first.length) this.growRequests();
      r = this.requests++;
    }
    this.keyTag[r] = key.tag;
    this.keyHash[r] = key.hash & this.hashMask;
    this.keyA[r] = key.a;
    this.keyB[r] = key.b;
    this.keyC[r] = key.c;
    this.place(r);
    this.live++;
    this.count[r] = 0;
    this.dropped[r] = 0;
    this.held[r] = 0;
    this.first[r] = this.last[r] = NONE;
    return r;
  }

  private remove(r: number): void {
    this.displace(r);
    this.live--;
    // The parts let go of (they may be a long id's strings); FREE: not put back when the table grows.
    this.keyTag[r] = FREE;
    this.keyA[r] = this.keyB[r] = this.keyC[r] = '';
    if (this.lastRequest === r) this.lastRequest = NONE;
    this.unlink(r);
    this.total -= this.held[r]!;
    for (let slot = this.first[r]!; slot !== NONE;) {
      const following = this.next[slot]!;
      this.freeSlotOf(slot);
      slot = following;
    }
    this.newer[r] = this.freeRequest;
    this.freeRequest = r;
  }

  private link(r: number): void {
    this.older[r] = this.newest;
    this.newer[r] = NONE;
    if (this.newest !== NONE) this.newer[this.newest] = r;
    else this.oldest = r;
    this.newest = r;
  }

  private unlink(r: number): void {
    const older = this.older[r]!;
    const newer = this.newer[r]!;
    if (older !== NONE) this.newer[older] = newer;
    else this.oldest = newer;
    if (newer !== NONE) this.older[newer] = older;
    else this.newest = older;
    this.older[r] = this.newer[r] = NONE;
  }

  private makeNewest(r: number): void {
    if (this.newest === r) return;
    this.unlink(r);
    this.link(r);
  }

  private evictBeyondCap(keep: number): void {
    let r = this.oldest;
    while (r !== NONE && this.total > this.maxBytes) {
      const following = this.newer[r]!;
      if (r !== keep) this.remove(r);
      r = following;
    }
    // Only `keep` is left and still too big: its oldest spans beyond the head go.
    while (this.total > this.maxBytes && this.count[keep]! > 1) {
      this.dropAt(keep, Math.min(this.head, this.count[keep]! - 1));
    }
  }

  private growSlots(): void {
    let n = Math.max(FIRST_CAPACITY, this.next.length * 2);
    if (n > this.slotCap && this.slotCap > this.next.length) n = this.slotCap;
    this.start = grown(this.start, new Float64Array(n));
    this.end = grown(this.end, new Float64Array(n));
    this.kind = grown(this.kind, new Uint8Array(n));
    this.idHigh = grown(this.idHigh, new Uint32Array(n));
    this.idLow = grown(this.idLow, new Uint32Array(n));
    this.mask = grown(this.mask, new Uint32Array(n));
    this.spanSize = grown(this.spanSize, new Float64Array(n));
    this.next = grown(this.next, new Int32Array(n));
  }

  private growRequests(): void {
    const n = Math.max(FIRST_CAPACITY, this.first.length * 2);
    this.first = grown(this.first, new Int32Array(n));
    this.last = grown(this.last, new Int32Array(n));
    this.count = grown(this.count, new Int32Array(n));
    this.dropped = grown(this.dropped, new Float64Array(n));
    this.held = grown(this.held, new Float64Array(n));
    this.older = grown(this.older, new Int32Array(n));
    this.newer = grown(this.newer, new Int32Array(n));
    this.keyTag = grown(this.keyTag, new Uint8Array(n));
    this.keyHash = grown(this.keyHash, new Int32Array(n));
    // The table at twice the requests it may hold (at most half full), its requests put in again.
    this.table = new Int32Array(2 * n).fill(NONE);
    for (let r = 0; r < this.requests; r++) if (this.keyTag[r] !== FREE) this.place(r);
  }
}

function grown<T extends Float64Array | Uint32Array | Int32Array | Uint8Array>(from: T, to: T): T {
  to.set(from as never);
  return to;
}
