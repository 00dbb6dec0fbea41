import { hashOfId } from './id-hash.js';
import { holdShape } from './shapes.js';
import type { CursorMemory, StreamRecord } from './types.js';

/**
 * Longest event id, in UTF-8 bytes, the ring keeps: a delivery of a longer one is remembered without
 * its text, so it is never matched (never placed, never proof), and a longer cursor is not looked up.
 */
export const MAX_KEPT_ID_BYTES = 256;
/** An id at least this long is copied into the arena natively (see `keep`). */
const NATIVE_COPY_BYTES = 16;
/**
 * An arena at least this long gets a DataView (`words`), through which ids are written four bytes at
 * a time (`addWords`). Not a shorter one: the view costs its object (about 60 bytes), which a session
 * that saw a few events should not hold; a long arena is a session of many events, where it pays.
 */
const WORD_VIEW_BYTES = 1024;

/**
 * The ids' bytes a ring keeps, per slot on average: the ring's `slots × 64` bytes (16 KiB at the default
 * cap of 256) hold the ids of the latest deliveries; when ids are longer than that on average, the
 * oldest deliveries lose their text first (then they are never matched, as a forgotten one).
 */
const ARENA_BYTES_PER_SLOT = 64;

const EMPTY = new Uint8Array(0);

/** A delivery's fields in CursorRing's `slots`: SLOT of them, at these offsets. */
const SLOT = 5;
const HASH = 0;
const STREAM = 1;
const POSITION = 2;
const TEXT_START = 3;
const TEXT_LENGTH = 4;

/** Where a cursor's id was last delivered, by the ring's memory. */
export interface CursorPlace {
  /** The stream that last delivered the id (its text compared), undefined when none is remembered. */
  readonly stream: StreamRecord | undefined;
  /**
   * The place is ambiguous: the id was delivered on streams that carry different requests, or a
   * delivery with the same hash lost its text (it may have been this id). Such a cursor is not placed.
   */
  readonly ambiguous: boolean;
}

/**
 * The last `cap` deliveries of a session in a ring: a 30-bit FNV-1a hash of each event id (a small
 * integer stored unboxed), the id's UTF-8 bytes (up to MAX_KEPT_ID_BYTES, in a byte arena shared by the
 * slots: no string per delivery), the stream that delivered it and its position there. A cursor is
 * matched by its hash and then its bytes: two ids whose hashes collide (`evt-288934` and `evt-678010`)
 * are two ids. Writes per event: five numbers and the id's bytes (copied, no allocation); a scan only
 * when a cursor is placed. The arrays and the arena grow with the deliveries, so a session that saw few
 * events holds little: at the cap, five numbers (8 bytes each) and 64 arena bytes a delivery, about
 * 27 KiB a session at the default 256 (measured; the hashes alone took about 6 KiB).
 *
 * Not a RecentList of @resumewatch/bounded: that would cost an object per delivery (hash and stream
 * together) on the per-event path; one flat array of their fields costs none.
 */
export class CursorRing implements CursorMemory {
  /**
   * The deliveries, SLOT fields each, one after the other in one array: the id's hash, its stream, its
   * position on the stream (StreamRecord.deliveredEvents when it was delivered), where its id bytes start
   * in `arena` and how many there are (-1: not kept, too long). One array, not one per field: each array
   * costs its two headers (48 bytes) whatever it holds, which was a fifth of a small session's ring.
   */
  private slots: (number | StreamRecord)[] = [];
  /**
   * The kept ids' bytes, written one after the other around the arena: the latest ones that fit. A
   * typed array of its own, not a Buffer: a small Buffer is a slice of a shared 8 KiB pool, which a
   * session kept for an hour would keep alive whole.
   */
  private arena: Uint8Array = EMPTY;
  /**
   * `arena` seen as a DataView once it is long (WORD_VIEW_BYTES), else undefined: `addWords` writes
   * ids through it four bytes at a time.
   */
  private words: DataView | undefined = undefined;
  /**
   * The arena's size as the ring counts it (`slots × 64` bytes): where writes wrap and which ids are
   * overwritten. `arena` itself may be shorter while the ids written so far fit (it grows to this size
   * as they come), so that a session of a few short ids does not hold the bytes of 64 each.
   */
  private arenaSize = 0;
  private arenaNext = 0;
  /** Deliveries held: they fill slots 0..count-1 in order until the cap, then the ring wraps at `next`. */
  private count = 0;
  private next = 0;
  /** Streams with two deliveries in a row of the same hash (a server repeating ids: a coarse clock, a request id). */
  private repeating: WeakSet<StreamRecord> | undefined = undefined;
  /** Streams some of whose deliveries the ring overwrote (their earliest deliveries are forgotten). */
  private forgetful: WeakSet<StreamRecord> | undefined = undefined;
  /** The stream of the last overwritten delivery (so that `forgetful` is written once per run). */
  private lastForgotten: StreamRecord | undefined = undefined;

  constructor(private readonly cap: number) {
    if (!(cap > 0)) throw new RangeError(`cursorsPerSession must be positive, got ${cap}`);
  }

  get size(): number {
    return this.count;
  }

  /** Each stream a remembered delivery stands on (a run of deliveries of one stream once): at a session's release. */
  forEachStream(visit: (stream: StreamRecord) => void): void {
    let last: StreamRecord | undefined;
    for (let i = 0; i < this.count; i++) {
      const stream = this.slots[i * SLOT + STREAM] as StreamRecord;
      if (stream !== last) visit((last = stream));
    }
  }

  /**
   * For a snapshot (observer-state.ts), never on the per-event path: each remembered delivery, oldest
   * first, with its id's text while the arena still holds it whole (undefined when it is gone: such a
   * delivery only makes a cursor of its hash ambiguous), and whether its stream repeats ids.
   */
  forEachDelivery(
    visit: (hash: number, id: string | undefined, stream: StreamRecord, position: number, repeats: boolean) => void,
  ): void {
    const n = this.count;
    const texts: (string | undefined)[] = new Array<string | undefined>(n);
    let used = 0;
    for (let k = 1; k <= n; k++) {
      const i = (this.next - k + n) % n;
      const length = this.slots[i * SLOT + TEXT_LENGTH] as number;
      if (length > 0) used += length;
      if (length < 0 || used > this.arenaSize) continue;
      const bytes = new Uint8Array(length);
      for (
        let b = 0, at = this.slots[i * SLOT + TEXT_START] as number;
        b < length;
        b++, at = at + 1 === this.arenaSize ? 0 : at + 1
      )
        bytes[b] = this.arena[at]!;
      texts[n - k] = Buffer.from(bytes).toString('utf8');
    }
    for (let k = n; k >= 1; k--) {
      const i = (this.next - k + n) % n;
      const stream = this.slots[i * SLOT + STREAM] as StreamRecord;
      visit(
        this.slots[i * SLOT + HASH] as number,
        texts[n - k],
        stream,
        this.slots[i * SLOT + POSITION] as number,
        this.repeating?.has(stream) === true,
      );
    }
  }

  /**
   * A restored delivery (observer-state.ts), in the order they were made. Its stream is taken to have
   * forgotten deliveries (a restart may have lost what the ring knew of it), so that a stream that
   * repeats ids places no cursor by an earliest delivery the ring may not hold: fail safe.
   */
  restore(hash: number, id: string | undefined, stream: StreamRecord, position: number, repeats: boolean): void {
    if (id === undefined) this.unkept(this.slot(hash, stream, position));
    else this.addText(hash, id, stream, position);
    (this.forgetful ??= new WeakSet()).add(stream);
    if (repeats) (this.repeating ??= new WeakSet()).add(stream);
  }

  /** Records a delivery of `id` at `position` of its stream. */
  add(id: string, stream: StreamRecord, position: number): void {
    this.addText(hashOfId(id), id, stream, position);
  }

  /** Records a delivery whose id (`hashOfId(id)` is `hash`) is text already (a short one, or one read). */
  addText(hash: number, id: string, stream: StreamRecord, position: number): void {
    const i = this.slot(hash, stream, position);
    const length = id.length;
    if (length > MAX_KEPT_ID_BYTES) return this.unkept(i);
    // An id whose UTF-8 bytes (three a character at most) surely fit is copied as it is checked, one
    // pass over its text: a character that is not ASCII (rare) stops the copy, and its UTF-8 bytes are
    // written over the same place, which they cover. A longer one is checked first: its UTF-8 bytes
    // may not be kept, and bytes copied before the check stopped would overwrite older ids' text.
    if (3 * length > MAX_KEPT_ID_BYTES || 3 * length > this.arenaSize)
      for (let k = 0; k < length; k++) if (id.charCodeAt(k) >= 0x80) return this.keepUtf8(i, id);
    if (length > this.arenaSize) return this.unkept(i);
    let at = this.arenaNext;
    const arena = this.room(at + length);
    for (let k = 0; k < length; k++) {
      const c = id.charCodeAt(k);
      if (c >= 0x80) return this.keepUtf8(i, id);
      arena[at] = c;
      if (++at === this.arenaSize) at = 0;
    }
    this.kept(i, length);
  }

  /** Slot i's id, one that is not ASCII (rare): its UTF-8 bytes. */
  private keepUtf8(i: number, id: string): void {
    const bytes = Buffer.from(id, 'utf8');
    this.keep(i, bytes, 0, bytes.length);
  }

  /**
   * Records a delivery whose id is `bytes[start, end)` (ASCII, as the SSE scanner holds it before any
   * text is made; `hash` is its `hashOfId`): the bytes are copied, no string made.
   */
  addBytes(hash: number, bytes: Uint8Array, start: number, end: number, stream: StreamRecord, position: number): void {
    this.keep(this.slot(hash, stream, position), bytes, start, end);
  }

  /**
   * Records a delivery whose id is the bytes `[start, end)` of `source` (ASCII, as the SSE scanner
   * holds it; `hash` is its `hashOfId`), read and written four bytes at a time. The scanner makes the
   * DataView once per chunk. On Node 20 a DataView's `getInt32` and `setInt32` compile inline, where a
   * typed array's read costs about 20 instructions a byte and a native copy needs a view of the id's
   * bytes made per event (a `subarray` and its `set`: about 500 instructions for a 21-byte id).
   */
  addWords(hash: number, source: DataView, start: number, end: number, stream: StreamRecord, position: number): void {
    const i = this.slot(hash, stream, position);
    const length = end - start;
    if (length > MAX_KEPT_ID_BYTES || length > this.arenaSize) return this.unkept(i);
    let at = this.arenaNext;
    const arena = this.room(at + length);
    const words = this.words;
    let b = start;
    if (words !== undefined && at + length <= arena.length) {
      for (const stop = end - 3; b < stop; b += 4, at += 4) words.setInt32(at, source.getInt32(b, true), true);
      for (; b < end; b++) words.setUint8(at++, source.getUint8(b));
    } else
      // A short arena (a session's first ids), or a write across the arena's end: byte by byte.
      for (; b < end; b++) {
        arena[at] = source.getUint8(b);
        if (++at === this.arenaSize) at = 0;
      }
    this.kept(i, length);
  }

  /**
   * Where `eventId` was last delivered: the stream, unless its place is ambiguous (see CursorPlace).
   * An id longer than MAX_KEPT_ID_BYTES is never placed.
   */
  place(eventId: string): CursorPlace {
    const id = this.bytesOf(eventId);
    if (id === undefined) return { stream: undefined, ambiguous: false };
    const hash = hashOfId(eventId);
    let stream: StreamRecord | undefined;
    let ambiguous = false;
    this.scan(hash, id, (i, verified) => {
      const other = this.slots[i * SLOT + STREAM] as StreamRecord;
      if (!verified) {
        // A delivery of the same hash whose text was overwritten: maybe this id, maybe on another stream.
        if (stream === undefined || other !== stream) ambiguous = true;
        return;
      }
      if (stream === undefined) stream = other;
      else if (other !== stream && !sameLogicalStream(other, stream)) ambiguous = true;
    });
    return { stream: ambiguous ? undefined : stream, ambiguous };
  }

  /** The stream that last delivered `eventId` (its text compared), if the delivery is still remembered. */
  get(eventId: string): StreamRecord | undefined {
    const id = this.bytesOf(eventId);
    if (id === undefined) return undefined;
    let stream: StreamRecord | undefined;
    this.scan(hashOfId(eventId), id, (i, verified) => {
      if (verified) stream ??= this.slots[i * SLOT + STREAM] as StreamRecord;
    });
    return stream;
  }

  /**
   * The position on `stream` of the EARLIEST remembered delivery of `eventId` there: a cursor a server
   * gave several events names the first of them (its reader may have read no further). 0 when none is
   * remembered, or when an earlier delivery of it may be unknown: a delivery of the same hash on the
   * stream lost its text, or the stream repeats ids and the ring forgot some of its deliveries.
   */
  positionOn(eventId: string, stream: StreamRecord): number {
    const id = this.bytesOf(eventId);
    if (id === undefined) return 0;
    let earliest = 0;
    let matches = 0;
    let unsure = false;
    this.scan(hashOfId(eventId), id, (i, verified) => {
      if ((this.slots[i * SLOT + STREAM] as StreamRecord) !== stream) return;
      if (!verified) unsure = true;
      else {
        earliest = this.slots[i * SLOT + POSITION] as number;
        matches++;
      }
    });
    const repeats = matches > 1 || this.repeating?.has(stream) === true;
    if (unsure || (repeats && this.forgetful?.has(stream) === true)) return 0;
    return earliest;
  }

  /**
   * Calls `visit(slot, verified)` for each remembered delivery of the hash, newest first: `verified`
   * when its kept bytes equal `id`, false when its text is gone (too long to keep, or overwritten in
   * the arena). A kept delivery whose bytes differ (a hash collision) is not visited.
   */
  private scan(hash: number, id: Uint8Array, visit: (slot: number, verified: boolean) => void): void {
    const n = this.count;
    const arena = this.arena;
    const capacity = this.arenaSize;
    /** Bytes kept by the deliveries newer than this one and this one: past the arena's size, overwritten. */
    let used = 0;
    for (let k = 1; k <= n; k++) {
      const i = (this.next - k + n) % n;
      const length = this.slots[i * SLOT + TEXT_LENGTH] as number;
      if (length > 0) used += length;
      if ((this.slots[i * SLOT + HASH] as number) !== hash) continue;
      if (length < 0 || used > capacity) {
        visit(i, false);
        continue;
      }
      if (length !== id.length) continue;
      let at = this.slots[i * SLOT + TEXT_START] as number;
      let equal = true;
      for (let b = 0; b < length; b++) {
        if (arena[at] !== id[b]) {
          equal = false;
          break;
        }
        if (++at === capacity) at = 0;
      }
      if (equal) visit(i, true);
    }
  }

  /** A cursor's bytes to compare, undefined when it is too long to have been kept. */
  private bytesOf(eventId: string): Uint8Array | undefined {
    if (eventId.length > MAX_KEPT_ID_BYTES) return undefined;
    const bytes = Buffer.from(eventId, 'utf8');
    return bytes.length > MAX_KEPT_ID_BYTES ? undefined : bytes;
  }

  /** The slot of a new delivery, its hash, stream and position written; its text is for the caller to keep. */
  private slot(hash: number, stream: StreamRecord, position: number): number {
    let i: number;
    if (this.count < this.cap) {
      if (this.count * SLOT === this.slots.length) this.grow();
      i = this.count++;
    } else {
      i = this.next;
      this.next = i + 1 === this.cap ? 0 : i + 1;
      const old = this.slots[i * SLOT + STREAM] as StreamRecord;
      if (old !== this.lastForgotten) {
        (this.forgetful ??= new WeakSet()).add(old);
        this.lastForgotten = old;
      }
    }
    // The delivery before this one, on the same stream with the same hash: the stream repeats ids.
    const previous = (i === 0 ? this.count : i) - 1;
    if (
      previous >= 0 &&
      previous !== i &&
      (this.slots[previous * SLOT + HASH] as number) === hash &&
      (this.slots[previous * SLOT + STREAM] as StreamRecord) === stream
    )
      (this.repeating ??= new WeakSet()).add(stream);
    this.slots[i * SLOT + HASH] = hash;
    this.slots[i * SLOT + STREAM] = stream;
    this.slots[i * SLOT + POSITION] = position;
    return i;
  }

  /** Keeps `bytes[start, end)` as slot `i`'s text (not when longer than MAX_KEPT_ID_BYTES or the arena). */
  private keep(i: number, bytes: Uint8Array, start: number, end: number): void {
    const length = end - start;
    if (length > MAX_KEPT_ID_BYTES || length > this.arenaSize) return this.unkept(i);
    let at = this.arenaNext;
    const arena = this.room(at + length);
    if (length >= NATIVE_COPY_BYTES && at + length <= arena.length) {
      // Every event's id is kept: a long one is copied natively (a view and a memmove cost about as
      // much as 12 bytes copied one by one here, and ids are often 20 to 60 bytes).
      arena.set(bytes.subarray(start, end), at);
    } else
      for (let b = start; b < end; b++) {
        arena[at] = bytes[b]!;
        if (++at === this.arenaSize) at = 0;
      }
    this.kept(i, length);
  }

  /** Slot `i`'s text is the `length` bytes at the arena's write position, just written. */
  private kept(i: number, length: number): void {
    this.slots[i * SLOT + TEXT_START] = this.arenaNext;
    this.slots[i * SLOT + TEXT_LENGTH] = length;
    this.arenaNext = (this.arenaNext + length) % this.arenaSize;
  }

  /**
   * The arena, long enough for a write that ends at `end` (past `arenaSize`: it wraps, so the whole
   * arena). It grows by half again, in 64-byte steps: a few copies while a session's first ids come,
   * none once it has reached `arenaSize`.
   */
  private room(end: number): Uint8Array {
    const old = this.arena;
    if (end <= old.length || old.length === this.arenaSize) return old;
    const size = Math.max(end, old.length + (old.length >> 1));
    const arena = new Uint8Array(Math.min(this.arenaSize, roundUp(size)));
    arena.set(old);
    return this.arenaIs(arena);
  }

  /** `arena` is the ring's arena from now on, and `words` its view when it is long. */
  private arenaIs(arena: Uint8Array): Uint8Array {
    this.words =
      arena.length >= WORD_VIEW_BYTES ? new DataView(arena.buffer, arena.byteOffset, arena.length) : undefined;
    return (this.arena = arena);
  }

  private unkept(i: number): void {
    this.slots[i * SLOT + TEXT_START] = 0;
    this.slots[i * SLOT + TEXT_LENGTH] = -1;
  }

  /**
   * Room for more deliveries: 4 slots, then doubling up to the cap, and 64 arena bytes a slot (counted:
   * the arena allocated holds the ids copied and one more of that size, and grows as they come). An
   * array's own growth (half again plus 16 slots) would give a session that saw a handful of events 17
   * slots in each array. The ring has not wrapped yet (it grows only below the cap): slots 0..count-1
   * are in order, and the ids still in the arena (the latest that fit) are copied to the new one.
   */
  private grow(): void {
    const size = Math.min(this.cap, Math.max(4, this.count * 2));
    const slots = new Array<number | StreamRecord>(size * SLOT);
    const old = this.arena;
    const oldSize = this.arenaSize;
    // The ids still whole in the old arena: the latest ones whose bytes add up to its size at most.
    let used = 0;
    let first = this.count;
    while (first > 0) {
      const length = this.slots[(first - 1) * SLOT + TEXT_LENGTH] as number;
      if (length > 0 && used + length > oldSize) break;
      if (length > 0) used += length;
      first--;
    }
    this.arenaSize = size * ARENA_BYTES_PER_SLOT;
    // The ids copied, and room for one more of the average size.
    const arena = new Uint8Array(Math.min(this.arenaSize, roundUp(used + ARENA_BYTES_PER_SLOT)));
    let next = 0;
    for (let i = 0; i < this.count; i++) {
      const o = i * SLOT;
      slots[o + HASH] = this.slots[o + HASH]!;
      slots[o + STREAM] = this.slots[o + STREAM]!;
      slots[o + POSITION] = this.slots[o + POSITION]!;
      const length = this.slots[i * SLOT + TEXT_LENGTH] as number;
      if (i < first || length < 0) {
        slots[o + TEXT_START] = 0;
        slots[o + TEXT_LENGTH] = -1;
        continue;
      }
      slots[o + TEXT_START] = next;
      slots[o + TEXT_LENGTH] = length;
      let at = this.slots[i * SLOT + TEXT_START] as number;
      for (let b = 0; b < length; b++) {
        arena[next++] = old[at]!;
        if (++at === oldSize) at = 0;
      }
    }
    this.slots = slots;
    this.arenaIs(arena);
    this.arenaNext = next % this.arenaSize;
  }
}

/** `bytes` rounded up to a multiple of 64. */
const roundUp = (bytes: number): number => (bytes + 63) & ~63;

/** Two streams carrying the same requests, of one kind (a resume carries those of the stream it resumes): one logical stream. */
export function sameLogicalStream(a: StreamRecord, b: StreamRecord): boolean {
  if (a === b) return true;
  if (a.requests.length !== b.requests.length || a.kind !== b.kind) return false;
  for (let i = 0; i < a.requests.length; i++) if (a.requests[i] !== b.requests[i]) return false;
  return true;
}

holdShape(new CursorRing(1));
