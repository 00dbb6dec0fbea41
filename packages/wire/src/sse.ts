import { Buffer } from 'node:buffer';

import { FNV_OFFSET, FNV_PRIME, ID_HASH_MASK, hashOfId } from './id-hash.js';
import { holdShape } from './shapes.js';

/**
 * Incremental parser of `text/event-stream` bodies (WHATWG HTML, "Server-sent events").
 *
 * It works on bytes so that a consumer can forward or drop each event's exact bytes (`raw`):
 * concatenating the `raw` of every reported event and the bytes returned by `end()` gives back the
 * input, byte for byte. Line terminators are CRLF, LF or CR, also when split across chunks.
 */
export interface SseEvent {
  /** Value of this event's own `id:` field, or undefined when it had none. */
  id: string | undefined;
  /** Value of the `event:` field, or '' when absent. */
  event: string;
  /** The `data:` lines joined with '\n', decoded when first read. */
  readonly data: string;
  /** Whether the event had at least one `data:` field (a browser dispatches only those). */
  hasData: boolean;
  /** Bytes of data, line breaks between data lines not counted. */
  dataLength: number;
  /** Value of a valid `retry:` field, in milliseconds. */
  retry: number | undefined;
  /** The event's bytes, including any comment lines since the previous event and its blank line. */
  raw: Uint8Array;
}

export type SseEventHandler = (event: SseEvent) => void;

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const COLON = 0x3a;
const A = 0x61;
const D = 0x64;
const E = 0x65;
const I = 0x69;
const N = 0x6e;
const R = 0x72;
const T = 0x74;
const V = 0x76;
const Y = 0x79;
/** V8 copies a substring shorter than this (SlicedString::kMinLength); a longer one refers to its parent. */
const COPIED_SUBSTRING = 13;
const EMPTY = new Uint8Array(0);
// A mark inside the stream is a character, as a client's decoder (one for the whole stream) keeps it:
// only the stream's first bytes may be one, skipped by the scanner. A TextDecoder would drop it from
// every line it decodes, and a data line after one would be a message the client cannot parse.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
/**
 * "None left in this push" for the forward look-ups: a position past any string V8 can build, kept a
 * small integer (Infinity would turn the fields into doubles, a change of the scanner's hidden class).
 */
const NONE_AHEAD = 2 ** 30 - 16;

/**
 * Bytes an event held for every data line beyond its first: the view of the line the scanner keeps
 * costs about this much, so that an event of many short data lines is held by what it costs.
 */
const DATA_LINE_BYTES = 64;
/**
 * The longest line of an oversized event the scanner still holds to read its field (an `id:` line,
 * so that the cursor is known); a longer one is skipped unread.
 */
const MAX_OVERSIZED_LINE = 4096;
/** The smallest buffer carried bytes are gathered in. */
const MIN_STORE_BYTES = 16 * 1024;
/** A carried event this much smaller than its buffer moves to one of its size (the rest is let go). */
const STORE_SHRINK = 4;

/** Receives the scanner's events. An object with a method, not a closure: see `SseScanner`. */
export interface SseSink {
  event(scanner: SseScanner): void;
  /**
   * After each chunk: the scanner would hold `bytes` of the event in progress (its bytes so far, and
   * the views of its data lines), 0 when none. Returning false makes that event oversized: the
   * scanner lets its bytes go and reads the rest of it only for its `id:` and `retry:` fields (see
   * `SseScanner.oversized`). Without this method the scanner holds any event whole.
   */
  held?(bytes: number): boolean;
}

/**
 * The byte-level SSE parser behind `SseParser` and the wire observer. It reports each event through
 * its own fields (offsets into `bytes`, valid during the call only, then reused), so the hot path
 * allocates nothing per event: no event object, no views, no decoded text, no id text until the id is
 * read (`id`, `deferId`), and the event type is reused while it repeats.
 *
 * Each chunk is read through a latin1 view of it: one character per byte, so character positions are
 * byte positions, and the searches for line ends, colons and `"id"` run natively.
 *
 * The sink is an object with a method, not a closure (why: the README, "Design").
 */
export class SseScanner {
  /** The buffer the offsets refer to: the chunk, or the unparsed rest of earlier chunks and the chunk. */
  bytes: Uint8Array = EMPTY;
  /** The event's bytes: comment lines since the previous event, its fields and its blank line. */
  rawStart = 0;
  rawEnd = 0;
  /** The event has an id (a valid `id:` field); its value is `id`. */
  hasId = false;
  /** `hashOfId(id)` when the event has an id, computed while the id is read (internal: not on `SseEvent`). */
  idHash = 0;
  event = '';
  hasData = false;
  /** The value of the event's only data line, `bytes[dataStart, dataEnd)`, when it has exactly one. */
  dataStart = 0;
  dataEnd = 0;
  /** The values of all data lines, when there is more than one. */
  dataLines: Uint8Array[] | undefined = undefined;
  /**
   * The wire observer's JSON-RPC pre-filter, noted while the data lines are scanned anyway (internal:
   * not on `SseEvent`). `mayHoldId`: the data contains `"id"` or a backslash (an escaped key); without
   * either it is no request or response. `mayHoldMethod`: it holds a `"method"` key followed by a
   * colon; without it and without an id it is no JSON-RPC message at all (looked up only while
   * `mayHoldId` is false: with an id the observer parses the data anyway).
   */
  mayHoldId = false;
  mayHoldMethod = false;
  dataLength = 0;
  retry: number | undefined = undefined;
  /**
   * The event (in progress, or being reported) grew past what the sink lets the scanner hold
   * (`SseSink.held`): its bytes were let go as they came, so it has no raw bytes and no data, only
   * its `id`, `retry`, `event`, `hasData` and `dataLength` (an `id:` line longer than 4 KiB is not
   * read either). Internal: not on `SseEvent`.
   */
  oversized = false;
  /**
   * Set by a sink that forwards bytes only once it knows what they carry (a filtering tap): the bytes
   * that carry no event (comment lines, unknown fields and blank lines seen while no field of the next
   * event has been, such as a `: ping` keep-alive) are settled as soon as their line ends: not carried
   * into the next chunk, and not part of the next event's `raw`. Off (`SseParser`), they are part of
   * the next event's `raw`, so that the events' bytes give back the input.
   */
  settles = false;
  /**
   * With `settles`, after each push: the end of the bytes of `bytes` that are settled, the complete
   * events and the lines after them that carry none (see `settles`); what follows is the event in
   * progress, held. 0 otherwise, and while an oversized event is in progress.
   */
  settledEnd = 0;

  /** The unparsed rest of earlier chunks: the event in progress (of an oversized one, its line in progress). */
  private pending: Uint8Array = EMPTY;
  /**
   * The buffer `pending` is gathered in when it spans chunks: bytes `[0, storeEnd)` are written once
   * and never again (events handed out refer to them), a chunk is written after `pending` when it ends
   * there and there is room, else both move to a new buffer, twice as large when the event is
   * growing. So a long event costs its length (a few times) to gather, not its length times its chunks.
   */
  private store: Uint8Array = EMPTY;
  private storeEnd = 0;
  /** The event in progress was carried into the last chunk and is still not over: a long one, whose store doubles. */
  private spanning = false;
  /** The line in progress of an oversized event was too long to hold: the bytes up to its end are skipped. */
  private skipLine = false;
  /** The skipped line is a data line: its bytes count in `dataLength`. */
  private skippingData = false;
  /** Offset in `pending` of the first line not yet parsed. */
  private scanFrom = 0;
  /** Offset in `pending` where the search for that line's end resumes. */
  private searchFrom = 0;
  private skipLeadingLf = false;
  private atStreamStart = true;
  private sawField = false;
  /** Per push: the next `"id"` and backslash at or after the last look-up (NONE_AHEAD: none left). */
  private nextIdMember = -1;
  private nextBackslash = -1;
  private nextMethodKey = -1;
  /** `bytes` as a DataView (`idWords`), made at the second ask of a push; `idsInPush`: asked once. */
  private words: DataView | undefined = undefined;
  private idsInPush = false;
  /** The last event type: reused while it repeats, as it usually does. */
  private lastEventType = '';
  /**
   * The id's text, once made. An ASCII id is made text only when it is read (`id`): until then it is
   * `bytes[idStart, idEnd)`, and most events' ids are never read (the observer keeps their hash, and
   * the text of the last one only: `deferId`). One carried into the next chunk is made text first.
   */
  private idText: string | undefined = undefined;
  private idStart = 0;
  private idEnd = 0;
  /** An id the host deferred (`deferId`): `bytes[deferredStart, deferredEnd)`, or `deferredText`; -1: none. */
  private deferredStart = -1;
  private deferredEnd = 0;
  private deferredText: string | undefined = undefined;

  constructor(private readonly sink: SseSink) {}

  /** Value of this event's own `id:` field, or undefined when it had none. */
  get id(): string | undefined {
    if (!this.hasId) return undefined;
    return (this.idText ??= this.asciiText(this.idStart, this.idEnd));
  }

  /**
   * Keeps the event's id for the host, to be read with `takeDeferredId` before the push ends (its bytes
   * are the push's): the host that needs only the last id of a run of events makes one string, not one
   * an event. A later `deferId` replaces it.
   */
  deferId(): void {
    if (this.idText !== undefined) {
      this.deferredText = this.idText;
      this.deferredStart = -1;
    } else {
      this.deferredText = undefined;
      this.deferredStart = this.idStart;
      this.deferredEnd = this.idEnd;
    }
  }

  /** The id last deferred (`deferId`) since the last take, as text; undefined when none. */
  takeDeferredId(): string | undefined {
    let text = this.deferredText;
    if (text !== undefined) this.deferredText = undefined;
    else if (this.deferredStart !== -1) text = this.asciiText(this.deferredStart, this.deferredEnd);
    this.deferredStart = -1;
    return text;
  }

  /**
   * @internal The id's text if it was made, else undefined: its ASCII bytes are then
   * `bytes[idByteStart, idByteEnd)`, which the cursor ring copies (no string made).
   */
  get madeId(): string | undefined {
    return this.idText;
  }

  /**
   * @internal `bytes` as a DataView for the cursor ring to read an id's bytes four at a time
   * (`CursorRing.addWords`), made once a push and only from its second id on: undefined at the first
   * (then the ring copies `bytes[idByteStart, idByteEnd)` natively). The view costs about as much as
   * the copy of one id, so a chunk of one event (a proxy's) does not make it. Valid, like `bytes`,
   * during the push only.
   */
  idWords(): DataView | undefined {
    if (this.words !== undefined) return this.words;
    if (!this.idsInPush) {
      this.idsInPush = true;
      return undefined;
    }
    const bytes = this.bytes;
    return (this.words = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }

  /** @internal See `madeId`. */
  get idByteStart(): number {
    return this.idStart;
  }

  /** @internal See `madeId`. */
  get idByteEnd(): number {
    return this.idEnd;
  }

  /** The ASCII text of `bytes[start, end)`: a copy, never a slice of a chunk's text (see `fieldValue`). */
  private asciiText(start: number, end: number): string {
    return latin1(this.bytes, start, end);
  }

  push(chunk: Uint8Array): void {
    this.settledEnd = 0;
    this.words = undefined;
    this.idsInPush = false;
    if (chunk.length === 0) return;
    let work: Uint8Array;
    if (this.skipLine) {
      // The rest of a line too long to hold (nothing is carried): skipped up to its end, unread.
      this.bytes = chunk;
      const end = firstLineEnd(chunk);
      if (this.skippingData) this.dataLength += end === -1 ? chunk.length : end;
      if (end === -1) return;
      this.skipLine = false;
      let next = end + 1;
      if (chunk[end] === CR && next < chunk.length && chunk[next] === LF) next++;
      if (next === chunk.length) {
        // Nothing after it here: a CR may be the first half of a CRLF.
        this.skipLeadingLf = chunk[end] === CR;
        this.carry(chunk, next, next, next, false);
        return;
      }
      this.scanFrom = next;
      this.searchFrom = next;
      work = chunk;
    } else if (this.pending.length === 0) {
      work = chunk;
    } else {
      work = this.append(chunk);
      if (!this.skipLeadingLf && !hasLineEnd(chunk)) {
        // The line in progress goes on past this chunk: nothing to parse yet, and reading the
        // carried bytes again for each chunk would make a long line cost its length times its chunks.
        this.bytes = work;
        this.carry(work, 0, this.scanFrom, work.length, true);
        return;
      }
    }
    this.bytes = work;
    let base = this.scanFrom;
    if (this.atStreamStart && work.length - base >= 3) {
      if (work[base] === 0xef && work[base + 1] === 0xbb && work[base + 2] === 0xbf) base += 3;
      this.atStreamStart = false;
    } else if (this.atStreamStart && work[base] !== 0xef) {
      this.atStreamStart = false;
    }
    const length = work.length;
    // Positions below are in `text`, which starts at byte `base` of `work`.
    const text = latin1(work, base, length);
    const textLength = text.length;
    let nextCr = text.indexOf('\r');
    let searchFrom = Math.max(0, this.searchFrom - base);
    let blockStart = 0;
    let pos = 0;
    this.nextIdMember = -1;
    this.nextBackslash = -1;
    this.nextMethodKey = -1;
    // A CR ending the previous push may be the first half of a CRLF.
    if (this.skipLeadingLf) {
      this.skipLeadingLf = false;
      if (textLength > 0 && text.charCodeAt(0) === LF) pos = 1;
    }
    if (nextCr === -1) {
      // No CR in the text, the usual case: lines end at LF only.
      while (pos < textLength) {
        const from = searchFrom > pos ? searchFrom : pos;
        // The blank line that ends an event is told by its byte: a native search costs about five times as much.
        const end = work[base + from] === LF ? from : text.indexOf('\n', from);
        if (end === -1) {
          searchFrom = textLength;
          break;
        }
        searchFrom = 0;
        if (end === pos) {
          if (this.sawField) {
            this.rawStart = blockStart;
            this.rawEnd = base + end + 1;
            this.sink.event(this);
            this.resetEvent();
            blockStart = base + end + 1;
          }
        } else {
          this.parseLine(work, text, base, pos, end);
        }
        pos = end + 1;
      }
    }
    while (pos < textLength) {
      const from = searchFrom > pos ? searchFrom : pos;
      let end = text.indexOf('\n', from);
      if (nextCr !== -1) {
        if (nextCr < from) nextCr = text.indexOf('\r', from);
        if (nextCr !== -1 && (end === -1 || nextCr < end)) end = nextCr;
      }
      if (end === -1) {
        searchFrom = textLength;
        break;
      }
      searchFrom = 0;
      let next = end + 1;
      if (text.charCodeAt(end) === CR) {
        if (next < textLength) {
          if (text.charCodeAt(next) === LF) next++;
        } else {
          this.skipLeadingLf = true;
        }
      }
      if (end === pos) {
        if (this.sawField) {
          this.rawStart = blockStart;
          this.rawEnd = base + next;
          this.sink.event(this);
          this.resetEvent();
          blockStart = base + next;
        }
      } else {
        this.parseLine(work, text, base, pos, end);
      }
      pos = next;
    }
    this.carry(work, blockStart, base + pos, pos < textLength ? base + searchFrom : base + pos, work !== chunk);
    this.words = undefined;
    this.idsInPush = false;
  }

  /**
   * The carried bytes and the chunk, contiguous. The chunk is written after them when they end the
   * store and it has room; else both move to a new store: of their size when the carried event began
   * in the last chunk (most events span two chunks at most), twice it when it had been carried into
   * it already (`spanning`: a long event, whose stores double, so gathering it costs a few times its length).
   */
  private append(chunk: Uint8Array): Uint8Array {
    const pending = this.pending;
    const store = this.store;
    const start = pending.byteOffset - store.byteOffset;
    const length = pending.length + chunk.length;
    if (pending.buffer === store.buffer && start + pending.length === this.storeEnd) {
      if (this.storeEnd + chunk.length <= store.length) {
        store.set(chunk, this.storeEnd);
        this.storeEnd += chunk.length;
        return store.subarray(start, this.storeEnd);
      }
    }
    const growing = this.spanning;
    const next = storeOf(growing ? Math.max(2 * length, MIN_STORE_BYTES) : length);
    next.set(pending, 0);
    next.set(chunk, pending.length);
    this.store = next;
    this.storeEnd = length;
    return growing ? next.subarray(0, length) : next;
  }

  /**
   * A line of an oversized event too long to hold, `work[start, end)` so far: it is skipped unread,
   * but a known field still counts as one (the event is dispatched), and a data line as data (its
   * length counted as the rest of it passes).
   */
  private skipping(work: Uint8Array, start: number, end: number): void {
    const c0 = work[start];
    const named = (name: string) =>
      sameText(work, start, 0, name.length, name) && nameEndsAt(work, start, name.length, end - start);
    this.skippingData = c0 === D && named('data');
    if (this.skippingData) {
      this.hasData = true;
      this.dataLength += end - start - valueAfter(work, start, 4, end - start);
    }
    if (this.skippingData || (c0 === I && named('id')) || (c0 === E && named('event')) || (c0 === R && named('retry')))
      this.sawField = true;
  }

  /**
   * Keeps what the next chunk needs: the event in progress from `blockStart` (all of `work` offsets),
   * or, of an oversized one, its line in progress. `lineStart`: the first line not parsed;
   * `searchAt`: where the search for its end resumes; `carried`: `work` began with carried bytes.
   */
  private carry(work: Uint8Array, blockStart: number, lineStart: number, searchAt: number, carried: boolean): void {
    const length = work.length;
    // The id of the event in progress is made text while its bytes are at hand.
    if (this.hasId && this.idText === undefined) this.idText = this.asciiText(this.idStart, this.idEnd);
    this.spanning = carried && blockStart === 0 && !this.oversized;
    let from = blockStart;
    // Once per push, never per event: the lines before the event in progress that carry none of it.
    if (this.settles && !this.oversized) this.settledEnd = from = this.settledFrom(work, blockStart, lineStart);
    const sink = this.sink;
    if (!this.oversized && sink.held !== undefined) {
      const lines = this.dataLines === undefined ? 0 : this.dataLines.length * DATA_LINE_BYTES;
      if (!sink.held(length - from + lines)) this.oversized = true;
    }
    if (this.oversized) {
      // Its bytes so far are let go: only its line in progress is held, to read it if it is a field.
      from = length - lineStart > MAX_OVERSIZED_LINE ? length : lineStart;
      this.skipLine = from === length && lineStart < length;
      if (this.skipLine) this.skipping(work, lineStart, length);
      this.dataLines = undefined;
      sink.held?.(length - from);
    }
    const pending = from === length ? EMPTY : work.subarray(from);
    this.pending = pending;
    this.scanFrom = this.skipLine ? 0 : lineStart - from;
    this.searchFrom = this.skipLine ? 0 : searchAt - from;
    if (from > 0 && this.hasData && this.dataLines === undefined) {
      this.dataStart -= from;
      this.dataEnd -= from;
    }
    if (pending.length === 0) {
      this.store = EMPTY;
      this.storeEnd = 0;
    } else if (
      pending.buffer === this.store.buffer &&
      this.store.length > STORE_SHRINK * pending.length + MIN_STORE_BYTES
    ) {
      // A long event ended and a short one is carried: it moves, and the long one's store is let go.
      const store = storeOf(2 * pending.length);
      store.set(pending, 0);
      this.store = store;
      this.storeEnd = pending.length;
      this.pending = store.subarray(0, pending.length);
    }
  }

  /**
   * Where the event in progress begins, of the complete lines `work[blockStart, lineStart)` and the
   * line in progress at `lineStart`: with no field of it seen yet, at the line in progress (the lines
   * before are comments, unknown fields or blank lines); else at its first field line, found by reading
   * the lines from `blockStart` up to it (once: the next push's bytes begin there). A line that might be
   * a field (a BOM before its name included) is taken for one: what is wrongly held only waits longer.
   */
  private settledFrom(work: Uint8Array, blockStart: number, lineStart: number): number {
    return this.sawField ? firstFieldLine(work, blockStart, lineStart) : lineStart;
  }

  /**
   * Where the event being reported begins without the lines before its first field (comments, unknown
   * fields, blank lines: `bytes[rawStart, fieldsStart())` carry no event): what a filtering sink removes
   * of an event it drops, so that a `: ping` before it still reaches the client. Read for a removed event only.
   */
  fieldsStart(): number {
    return firstFieldLine(this.bytes, this.rawStart, this.rawEnd);
  }

  /** Ends the stream. Returns the bytes of an unterminated last event, which the spec discards. */
  end(): Uint8Array {
    const rest = this.pending;
    this.pending = EMPTY;
    this.store = EMPTY;
    this.storeEnd = 0;
    this.spanning = false;
    this.skipLine = false;
    this.skippingData = false;
    this.scanFrom = 0;
    this.searchFrom = 0;
    this.deferredStart = -1;
    this.deferredText = undefined;
    this.resetEvent();
    return rest;
  }

  /**
   * Drops the reference to the chunk last scanned once its events have been read (the offsets are
   * valid during the push only): an open stream that waits for its next event would otherwise keep
   * that chunk and its buffer. What is left unparsed stays in `pending`.
   */
  releaseBytes(): void {
    this.bytes = EMPTY;
    this.words = undefined;
    this.idsInPush = false;
  }

  /** The event's data, decoded. */
  decodeData(): string {
    if (!this.hasData) return '';
    return this.dataLines === undefined
      ? decoder.decode(this.bytes.subarray(this.dataStart, this.dataEnd))
      : joinLines(this.dataLines);
  }

  /**
   * One field line, `text[start, end)`. A known field is told by its first letters and by a colon (or
   * the line's end) right after its name, so the usual lines cost a few character reads: no search for
   * the colon, no substring compared. Any other name is ignored, as the spec says.
   */
  private parseLine(work: Uint8Array, text: string, base: number, start: number, end: number): void {
    // Characters are read from the bytes (`work[base + i]` is `text.charCodeAt(i)`): a typed array
    // read costs less than charCodeAt, which checks the string's representation at each call.
    const b = base;
    const c0 = work[b + start];
    if (c0 === D) {
      if (!(
        work[b + start + 1] === A &&
        work[b + start + 2] === T &&
        work[b + start + 3] === A &&
        nameEndsAt(work, b, start + 4, end)
      ))
        return;
      const valueStart = valueAfter(work, b, start + 4, end);
      if (this.oversized) {
        // Its bytes are let go: no view of the line, only its length.
        this.hasData = true;
        this.dataLength += end - valueStart;
        this.sawField = true;
        return;
      }
      if (!this.hasData) {
        this.hasData = true;
        this.dataStart = base + valueStart;
        this.dataEnd = base + end;
      } else {
        this.dataLines ??= [work.subarray(this.dataStart, this.dataEnd)];
        this.dataLines.push(work.subarray(base + valueStart, base + end));
      }
      this.dataLength += end - valueStart;
      if (!this.mayHoldId) this.mayHoldId = this.mayHoldIdIn(text, valueStart, end);
      // The method key matters only to data with no "id" member (the observer parses any other), so
      // it is not looked up in a response's or a request's data once its "id" is seen.
      if (!this.mayHoldId && !this.mayHoldMethod) this.mayHoldMethod = this.methodKeyIn(text, valueStart, end);
      this.sawField = true;
    } else if (c0 === I) {
      if (!(work[b + start + 1] === D && nameEndsAt(work, b, start + 2, end))) return;
      this.idValue(work, text, base, valueAfter(work, b, start + 2, end), end);
      this.sawField = true;
    } else if (c0 === E) {
      if (!(
        work[b + start + 1] === V &&
        work[b + start + 2] === E &&
        work[b + start + 3] === N &&
        work[b + start + 4] === T &&
        nameEndsAt(work, b, start + 5, end)
      ))
        return;
      const valueStart = valueAfter(work, b, start + 5, end);
      const last = this.lastEventType;
      if (sameText(work, b, valueStart, end, last)) {
        this.event = last;
      } else {
        this.event = this.lastEventType = this.fieldValue(work, text, base, valueStart, end, false)!;
      }
      this.sawField = true;
    } else if (c0 === R) {
      if (!(
        work[b + start + 1] === E &&
        work[b + start + 2] === T &&
        work[b + start + 3] === R &&
        work[b + start + 4] === Y &&
        nameEndsAt(work, b, start + 5, end)
      ))
        return;
      const value = this.fieldValue(work, text, base, valueAfter(work, b, start + 5, end), end, false)!;
      if (/^\d+$/.test(value)) this.retry = Number(value);
      this.sawField = true;
    }
  }

  /** Whether text[start, end) contains `"id"` or a backslash; look-ups only move forward within a push. */
  private mayHoldIdIn(text: string, start: number, end: number): boolean {
    if (this.nextIdMember < start) {
      // Searched as `id"` then checked for the opening quote: `"` is the commonest byte of JSON,
      // which would make a search led by it slow.
      let at = text.indexOf('id"', start + 1);
      while (at !== -1 && text.charCodeAt(at - 1) !== QUOTE) at = text.indexOf('id"', at + 1);
      this.nextIdMember = at === -1 ? NONE_AHEAD : at - 1;
    }
    if (this.nextBackslash < start) {
      const at = text.indexOf('\\', start);
      this.nextBackslash = at === -1 ? NONE_AHEAD : at;
    }
    return this.nextIdMember + 4 <= end || this.nextBackslash < end;
  }

  /** Whether text[start, end) contains `"method"` followed by optional spaces and a colon; forward look-ups only. */
  private methodKeyIn(text: string, start: number, end: number): boolean {
    while (this.nextMethodKey < start) {
      let at = text.indexOf('method"', start + 1);
      while (at !== -1 && text.charCodeAt(at - 1) !== QUOTE) at = text.indexOf('method"', at + 1);
      if (at === -1) {
        this.nextMethodKey = NONE_AHEAD;
        break;
      }
      let colon = at + 7;
      while (colon < text.length && (text.charCodeAt(colon) === SPACE || text.charCodeAt(colon) === 0x09)) colon++;
      if (text.charCodeAt(colon) === COLON) this.nextMethodKey = at - 1;
      else start = at + 7;
    }
    return this.nextMethodKey + 8 <= end;
  }

  /**
   * Reads an id field's value into `id` and its hash into `idHash`; an id holding NUL is ignored, as
   * the spec says. An ASCII id is hashed from its bytes in the loop that checks them (the same hash as
   * `hashOfId` of the string); any other is decoded, then hashed.
   *
   * Four bytes a turn while they are ASCII and not NUL: an id is read for every event, ids are often 20
   * to 60 bytes, and a typed array read and the loop's own test cost more than the hash of a byte.
   */
  private idValue(work: Uint8Array, text: string, base: number, start: number, end: number): void {
    // `| 0`: the offset basis as an int32 (the same bits), so that the hash stays a small integer
    // and the loop takes no heap number; the prime a local for the same reason.
    let hash = FNV_OFFSET | 0;
    const prime = FNV_PRIME;
    let i = base + start;
    const stop = base + end;
    for (; i + 4 <= stop; i += 4) {
      const c0 = work[i]!;
      const c1 = work[i + 1]!;
      const c2 = work[i + 2]!;
      const c3 = work[i + 3]!;
      // One of them not ASCII or NUL: the loop below reads them one by one.
      if ((c0 | c1 | c2 | c3) >= 0x80 || c0 === 0 || c1 === 0 || c2 === 0 || c3 === 0) break;
      hash = Math.imul(Math.imul(Math.imul(Math.imul(hash ^ c0, prime) ^ c1, prime) ^ c2, prime) ^ c3, prime);
    }
    for (; i < stop; i++) {
      const c = work[i]!;
      if (c >= 0x80) {
        const value = this.fieldValue(work, text, base, start, end, true);
        if (value === undefined) return;
        this.hasId = true;
        this.idText = value;
        this.idHash = hashOfId(value);
        return;
      }
      if (c === 0) return;
      hash = Math.imul(hash ^ c, prime);
    }
    this.hasId = true;
    // Made text when read (`id`); a short one now, as a substring is cheap below V8's copy bound.
    this.idText = end - start < COPIED_SUBSTRING ? text.slice(start, end) : undefined;
    this.idStart = base + start;
    this.idEnd = base + end;
    this.idHash = hash & ID_HASH_MASK;
  }

  /**
   * A field value, UTF-8 decoded, or undefined when it holds NUL and `noNul` is set. ASCII values are copies, never
   * slices of the chunk's latin1 view, which a kept slice would keep alive whole: a short one is a
   * substring, which V8 copies below 13 characters; a longer one is copied from the chunk's bytes.
   */
  private fieldValue(
    work: Uint8Array,
    text: string,
    base: number,
    start: number,
    end: number,
    noNul: boolean,
  ): string | undefined {
    for (let i = base + start; i < base + end; i++) {
      const c = work[i]!;
      if (c >= 0x80) {
        const value = decoder.decode(work.subarray(base + start, base + end));
        return noNul && value.includes('\0') ? undefined : value;
      }
      if (c === 0 && noNul) return undefined;
    }
    return end - start < COPIED_SUBSTRING ? text.slice(start, end) : latin1(work, base + start, base + end);
  }

  private resetEvent(): void {
    this.hasId = false;
    this.idText = undefined;
    this.idHash = 0;
    this.event = '';
    this.hasData = false;
    this.dataLines = undefined;
    this.mayHoldId = false;
    this.mayHoldMethod = false;
    this.dataLength = 0;
    this.retry = undefined;
    this.sawField = false;
    this.oversized = false;
  }
}

interface Latin1Sliced {
  latin1Slice?(this: Buffer, start: number, end: number): string;
}
/**
 * Node's latin1 decoder, looked up once: a look-up on each chunk's view went up its prototype chain
 * by the generic inline cache.
 */
const LATIN1_SLICE = (Buffer.prototype as Latin1Sliced).latin1Slice;

/**
 * The latin1 text of `bytes[start, end)` (`start <= end <= bytes.length`), by the decoder that
 * Buffer's toString calls once it has checked its arguments and looked the encoding up by name: the
 * scanner decodes every chunk, and that look-up cost a third as much as the decoding of a chunk of one
 * event. The decoder is Node's own, undocumented (Buffer.prototype.latin1Slice, as old as Buffer), and
 * takes any Uint8Array as its receiver (Node checks for an ArrayBufferView, not a Buffer): a fetch's
 * chunks, plain Uint8Arrays, are decoded without a Buffer made over each (a typed array made and
 * Buffer.from's checks: about 400 instructions a chunk). Where it is missing, a Buffer view's toString.
 */
function latin1(bytes: Uint8Array, start: number, end: number): string {
  if (LATIN1_SLICE !== undefined) return LATIN1_SLICE.call(bytes as Buffer, start, end);
  const view = bytes instanceof Buffer ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return view.toString('latin1', start, end);
}

/**
 * The start of the first line of `bytes[from, to)` that may be a field (`to` when none): the lines
 * are complete but the last maybe, and a line that might be a field is taken for one. A line is told by
 * its first bytes before it is read to its end, so a long field line (an event's data) costs nothing.
 */
function firstFieldLine(bytes: Uint8Array, from: number, to: number): number {
  let at = from;
  while (at < to) {
    if (mayBeField(bytes, at, to)) return at;
    let end = at;
    while (end < to && bytes[end] !== LF && bytes[end] !== CR) end++;
    if (end === to) return at;
    at = end + 1;
    if (bytes[end] === CR && at < to && bytes[at] === LF) at++;
  }
  return to;
}

/**
 * Whether the line at `start` (within `bytes[start, to)`) may be a field the scanner reads (`data`,
 * `id`, `event`, `retry`, a BOM before it too): its name followed by a colon, a line end, or `to`.
 */
function mayBeField(bytes: Uint8Array, start: number, to: number): boolean {
  if (to - start >= 3 && bytes[start] === 0xef && bytes[start + 1] === 0xbb && bytes[start + 2] === 0xbf) start += 3;
  for (const name of FIELD_NAMES) {
    const at = start + name.length;
    if (at > to || !sameText(bytes, start, 0, name.length, name)) continue;
    const next = bytes[at];
    if (at === to || next === COLON || next === LF || next === CR) return true;
  }
  return false;
}
const FIELD_NAMES = ['data', 'id', 'event', 'retry'] as const;

/**
 * A buffer to gather carried bytes in. Not zeroed: every byte of it is written before it is read (the
 * store is read only below `storeEnd`), and zeroing a chunk-sized buffer cost about 150 instructions
 * an event on a fetch's 16 KB chunks. Its own memory, never a slice of Node's shared pool (which a
 * carried event would keep alive whole). A plain Uint8Array over it, not the Buffer: the views the
 * cursor ring takes of an id's bytes would go through Buffer's own `subarray`, which costs more.
 */
function storeOf(size: number): Uint8Array {
  return new Uint8Array(Buffer.allocUnsafeSlow(size).buffer, 0, size);
}

/** Whether the bytes hold a line end (LF or CR). */
function hasLineEnd(bytes: Uint8Array): boolean {
  return bytes.indexOf(LF) !== -1 || bytes.indexOf(CR) !== -1;
}

/** The first line end (CR or LF) in the bytes, or -1. */
function firstLineEnd(bytes: Uint8Array): number {
  const lf = bytes.indexOf(LF);
  const cr = (lf === -1 ? bytes : bytes.subarray(0, lf)).indexOf(CR);
  return cr === -1 ? lf : cr;
}

/*
 * The helpers below take positions in the latin1 text and read its characters from the bytes:
 * `bytes[base + i]` is character i.
 */

/** Whether text[start, end) is `value`, compared by character (the value is short: an event type). */
function sameText(bytes: Uint8Array, base: number, start: number, end: number, value: string): boolean {
  if (end - start !== value.length) return false;
  for (let i = 0; i < value.length; i++) if (bytes[base + start + i] !== value.charCodeAt(i)) return false;
  return true;
}

/** Whether a field name ends at `at`: the line ends there or a colon follows. */
function nameEndsAt(bytes: Uint8Array, base: number, at: number, end: number): boolean {
  return at === end || (at < end && bytes[base + at] === COLON);
}

/** Where the value of a field whose name ends at `at` starts: after the colon and one space. */
function valueAfter(bytes: Uint8Array, base: number, at: number, end: number): number {
  if (at === end) return end;
  return at + 1 < end && bytes[base + at + 1] === SPACE ? at + 2 : at + 1;
}

function joinLines(lines: readonly Uint8Array[]): string {
  return lines.map((line) => decoder.decode(line)).join('\n');
}

/**
 * An event taken from the scanner: its fields copied, its data and raw bytes kept as offsets into the
 * scanned buffer (never written to after), made into views or text only when read.
 */
export class ScannedEvent implements SseEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly hasData: boolean;
  readonly dataLength: number;
  readonly retry: number | undefined;
  private readonly bytes: Uint8Array;
  private readonly rawStart: number;
  private readonly rawEnd: number;
  private readonly dataStart: number;
  private readonly dataEnd: number;
  private readonly dataLines: Uint8Array[] | undefined;
  private decoded: string | undefined;

  constructor(scanner: SseScanner, decoded?: string) {
    this.id = scanner.id;
    this.event = scanner.event;
    this.hasData = scanner.hasData;
    this.dataLength = scanner.dataLength;
    this.retry = scanner.retry;
    this.bytes = scanner.bytes;
    this.rawStart = scanner.rawStart;
    this.rawEnd = scanner.rawEnd;
    this.dataStart = scanner.dataStart;
    this.dataEnd = scanner.dataEnd;
    this.dataLines = scanner.dataLines;
    this.decoded = decoded;
  }

  get data(): string {
    if (this.decoded !== undefined) return this.decoded;
    if (!this.hasData) this.decoded = '';
    else if (this.dataLines === undefined)
      this.decoded = decoder.decode(this.bytes.subarray(this.dataStart, this.dataEnd));
    else this.decoded = joinLines(this.dataLines);
    return this.decoded;
  }

  get raw(): Uint8Array {
    return this.bytes.subarray(this.rawStart, this.rawEnd);
  }
}

/**
 * Incremental parser of SSE bodies that reports an event object per event. The parser reads bytes
 * (see `SseScanner`); field values are decoded as UTF-8.
 */
export class SseParser implements SseSink {
  private readonly scanner = new SseScanner(this);

  constructor(private readonly onEvent: SseEventHandler) {}

  /** Called by the scanner. */
  event(scanner: SseScanner): void {
    this.onEvent(new ScannedEvent(scanner));
  }

  push(chunk: Uint8Array): void {
    this.scanner.push(chunk);
  }

  /** Ends the stream. Returns the bytes of an unterminated last event, which the spec discards. */
  end(): Uint8Array {
    return this.scanner.end();
  }
}

holdShape(new SseParser(() => undefined));
holdShape(new ScannedEvent(new SseScanner({ event: () => undefined })));

/**
 * Reads a whole SSE body. Resolves when the body ends cleanly, rejects when it errors or is aborted.
 */
export async function readSse(body: ReadableStream<Uint8Array>, onEvent: SseEventHandler): Promise<void> {
  const parser = new SseParser(onEvent);
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.push(value);
    }
    parser.end();
  } finally {
    reader.releaseLock();
  }
}
