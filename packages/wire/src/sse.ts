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
  /**
   * Whether the data may hold a JSON `"id"` member: it contains the bytes `"id"` or a backslash (an
   * escaped key). Data without either cannot be a JSON-RPC request or response, so a reader looking
   * only for those can skip parsing it.
   */
  mayHoldId: boolean;
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
const COLON = 0x3a;
const SPACE = 0x20;
const EMPTY = new Uint8Array(0);
const decoder = new TextDecoder();

class ParsedEvent implements SseEvent {
  private decoded: string | undefined;

  constructor(
    readonly id: string | undefined,
    readonly event: string,
    /** The value bytes of each data line: one view, or several. */
    private readonly dataLines: Uint8Array | Uint8Array[] | undefined,
    readonly hasData: boolean,
    readonly mayHoldId: boolean,
    readonly dataLength: number,
    readonly retry: number | undefined,
    readonly raw: Uint8Array,
  ) {}

  get data(): string {
    if (this.decoded !== undefined) return this.decoded;
    const lines = this.dataLines;
    if (lines === undefined) this.decoded = '';
    else if (lines instanceof Uint8Array) this.decoded = decoder.decode(lines);
    else this.decoded = lines.map((line) => decoder.decode(line)).join('\n');
    return this.decoded;
  }
}

/**
 * The parser reads each chunk through a latin1 view of it: one character per byte, so character
 * positions are byte positions, and the searches for line ends, colons and `"id"` run natively.
 * Field values are decoded as UTF-8 from the bytes (ASCII values are taken from the view as is).
 */
export class SseParser {
  private pending: Uint8Array = EMPTY;
  /** Offset in `pending` of the first line not yet parsed. */
  private scanFrom = 0;
  /** Offset in `pending` where the search for that line's end resumes. */
  private searchFrom = 0;
  private skipLeadingLf = false;
  private atStreamStart = true;
  private id: string | undefined;
  private eventType = '';
  private data: Uint8Array | Uint8Array[] | undefined;
  private dataMayHoldId = false;
  private dataLength = 0;
  private retry: number | undefined;
  private sawField = false;
  /** Per push: the next `"id"` and backslash at or after the last look-up (Infinity: none left). */
  private nextIdMember = -1;
  private nextBackslash = -1;

  constructor(private readonly onEvent: SseEventHandler) {}

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    let work: Uint8Array;
    if (this.pending.length === 0) {
      // A plain Uint8Array view: Buffer's own subarray (chunks are often Buffers) costs more.
      work = chunk.constructor === Uint8Array ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    } else {
      work = new Uint8Array(this.pending.length + chunk.length);
      work.set(this.pending, 0);
      work.set(chunk, this.pending.length);
    }
    let base = this.scanFrom;
    if (this.atStreamStart && work.length - base >= 3) {
      if (work[base] === 0xef && work[base + 1] === 0xbb && work[base + 2] === 0xbf) base += 3;
      this.atStreamStart = false;
    } else if (this.atStreamStart && work[base] !== 0xef) {
      this.atStreamStart = false;
    }
    const length = work.length;
    // Positions below are in `text`, which starts at byte `base` of `work`.
    const text = Buffer.from(work.buffer, work.byteOffset, work.byteLength).toString('latin1', base, length);
    const textLength = text.length;
    let nextCr = text.indexOf('\r');
    let searchFrom = Math.max(0, this.searchFrom - base);
    let blockStart = 0;
    let pos = 0;
    this.nextIdMember = -1;
    this.nextBackslash = -1;
    while (pos < textLength) {
      if (this.skipLeadingLf) {
        this.skipLeadingLf = false;
        if (text.charCodeAt(pos) === LF) {
          pos++;
          continue;
        }
      }
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
          this.dispatch(work.subarray(blockStart, base + next));
          blockStart = base + next;
        }
      } else {
        this.parseLine(work, text, base, pos, end);
      }
      pos = next;
    }
    this.pending = blockStart === length ? EMPTY : work.subarray(blockStart);
    this.scanFrom = base + pos - blockStart;
    this.searchFrom = pos < textLength ? base + searchFrom - blockStart : this.scanFrom;
  }

  /** Ends the stream. Returns the bytes of an unterminated last event, which the spec discards. */
  end(): Uint8Array {
    const rest = this.pending;
    this.pending = EMPTY;
    this.scanFrom = 0;
    this.searchFrom = 0;
    this.resetEvent();
    return rest;
  }

  private parseLine(work: Uint8Array, text: string, base: number, start: number, end: number): void {
    const c0 = text.charCodeAt(start);
    if (c0 === COLON) return;
    let colon = text.indexOf(':', start);
    if (colon === -1 || colon > end) colon = end;
    let valueStart = colon < end ? colon + 1 : end;
    if (valueStart < end && text.charCodeAt(valueStart) === SPACE) valueStart++;
    const nameLength = colon - start;
    if (nameLength === 4 && c0 === 0x64 && text.startsWith('data', start)) {
      const value = work.subarray(base + valueStart, base + end);
      const data = this.data;
      if (data === undefined) this.data = value;
      else if (data instanceof Uint8Array) this.data = [data, value];
      else data.push(value);
      this.dataLength += value.length;
      if (!this.dataMayHoldId) this.dataMayHoldId = this.mayHoldId(text, valueStart, end);
      this.sawField = true;
    } else if (nameLength === 2 && c0 === 0x69 && text.charCodeAt(start + 1) === 0x64) {
      const value = fieldValue(work, text, base, valueStart, end);
      if (!value.includes('\0')) this.id = value;
      this.sawField = true;
    } else if (nameLength === 5 && c0 === 0x65 && text.startsWith('event', start)) {
      this.eventType = fieldValue(work, text, base, valueStart, end);
      this.sawField = true;
    } else if (nameLength === 5 && c0 === 0x72 && text.startsWith('retry', start)) {
      const value = fieldValue(work, text, base, valueStart, end);
      if (/^\d+$/.test(value)) this.retry = Number(value);
      this.sawField = true;
    }
  }

  /** Whether text[start, end) contains `"id"` or a backslash; look-ups only move forward within a push. */
  private mayHoldId(text: string, start: number, end: number): boolean {
    if (this.nextIdMember < start) {
      // Searched as `id"` then checked for the opening quote: `"` is the commonest byte of JSON,
      // which would make a search led by it slow.
      let at = text.indexOf('id"', start + 1);
      while (at !== -1 && text.charCodeAt(at - 1) !== 0x22) at = text.indexOf('id"', at + 1);
      this.nextIdMember = at === -1 ? Infinity : at - 1;
    }
    if (this.nextBackslash < start) {
      const at = text.indexOf('\\', start);
      this.nextBackslash = at === -1 ? Infinity : at;
    }
    return this.nextIdMember + 4 <= end || this.nextBackslash < end;
  }

  private dispatch(raw: Uint8Array): void {
    const event = new ParsedEvent(this.id, this.eventType, this.data, this.data !== undefined, this.dataMayHoldId, this.dataLength, this.retry, raw);
    this.resetEvent();
    this.onEvent(event);
  }

  private resetEvent(): void {
    this.id = undefined;
    this.eventType = '';
    this.data = undefined;
    this.dataMayHoldId = false;
    this.dataLength = 0;
    this.retry = undefined;
    this.sawField = false;
  }
}

/** A field value: taken from the latin1 view when it is ASCII, decoded from the bytes otherwise. */
function fieldValue(work: Uint8Array, text: string, base: number, start: number, end: number): string {
  for (let i = start; i < end; i++) {
    if (text.charCodeAt(i) >= 0x80) return decoder.decode(work.subarray(base + start, base + end));
  }
  return text.slice(start, end);
}

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
