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
  /** The `data:` lines joined with '\n'. */
  data: string;
  /** Whether the event had at least one `data:` field (a browser dispatches only those). */
  hasData: boolean;
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

export class SseParser {
  private pending: Uint8Array = EMPTY;
  /** Offset in `pending` of the first line not yet parsed. */
  private scanFrom = 0;
  private skipLeadingLf = false;
  private atStreamStart = true;
  private id: string | undefined;
  private eventType = '';
  private data: string | undefined;
  private retry: number | undefined;
  private sawField = false;

  constructor(private readonly onEvent: SseEventHandler) {}

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    let work: Uint8Array;
    if (this.pending.length === 0) {
      work = chunk;
    } else {
      work = new Uint8Array(this.pending.length + chunk.length);
      work.set(this.pending, 0);
      work.set(chunk, this.pending.length);
    }
    let pos = this.scanFrom;
    if (this.atStreamStart && work.length - pos >= 3) {
      if (work[pos] === 0xef && work[pos + 1] === 0xbb && work[pos + 2] === 0xbf) pos += 3;
      this.atStreamStart = false;
    } else if (this.atStreamStart && work[pos] !== 0xef) {
      this.atStreamStart = false;
    }
    let blockStart = 0;
    const length = work.length;
    while (pos < length) {
      if (this.skipLeadingLf) {
        this.skipLeadingLf = false;
        if (work[pos] === LF) {
          pos++;
          continue;
        }
      }
      let end = pos;
      while (end < length) {
        const byte = work[end];
        if (byte === LF || byte === CR) break;
        end++;
      }
      if (end === length) break;
      let next = end + 1;
      if (work[end] === CR) {
        if (next < length) {
          if (work[next] === LF) next++;
        } else {
          this.skipLeadingLf = true;
        }
      }
      if (end === pos) {
        if (this.sawField) {
          this.dispatch(work.subarray(blockStart, next));
          blockStart = next;
        }
      } else {
        this.parseLine(work, pos, end);
      }
      pos = next;
    }
    this.pending = blockStart === length ? EMPTY : work.subarray(blockStart);
    this.scanFrom = pos - blockStart;
  }

  /** Ends the stream. Returns the bytes of an unterminated last event, which the spec discards. */
  end(): Uint8Array {
    const rest = this.pending;
    this.pending = EMPTY;
    this.scanFrom = 0;
    this.resetEvent();
    return rest;
  }

  private parseLine(work: Uint8Array, start: number, end: number): void {
    if (work[start] === COLON) return;
    let colon = start;
    while (colon < end && work[colon] !== COLON) colon++;
    let valueStart = colon < end ? colon + 1 : end;
    if (valueStart < end && work[valueStart] === SPACE) valueStart++;
    const nameLength = colon - start;
    const b0 = work[start];
    if (nameLength === 4 && b0 === 0x64 && work[start + 1] === 0x61 && work[start + 2] === 0x74 && work[start + 3] === 0x61) {
      const value = decoder.decode(work.subarray(valueStart, end));
      this.data = this.data === undefined ? value : `${this.data}\n${value}`;
      this.sawField = true;
    } else if (nameLength === 2 && b0 === 0x69 && work[start + 1] === 0x64) {
      const value = decoder.decode(work.subarray(valueStart, end));
      if (!value.includes('\0')) this.id = value;
      this.sawField = true;
    } else if (nameLength === 5 && b0 === 0x65 && decoder.decode(work.subarray(start, colon)) === 'event') {
      this.eventType = decoder.decode(work.subarray(valueStart, end));
      this.sawField = true;
    } else if (nameLength === 5 && b0 === 0x72 && decoder.decode(work.subarray(start, colon)) === 'retry') {
      const value = decoder.decode(work.subarray(valueStart, end));
      if (/^\d+$/.test(value)) this.retry = Number(value);
      this.sawField = true;
    }
  }

  private dispatch(raw: Uint8Array): void {
    const event: SseEvent = {
      id: this.id,
      event: this.eventType,
      data: this.data ?? '',
      hasData: this.data !== undefined,
      retry: this.retry,
      raw,
    };
    this.resetEvent();
    this.onEvent(event);
  }

  private resetEvent(): void {
    this.id = undefined;
    this.eventType = '';
    this.data = undefined;
    this.retry = undefined;
    this.sawField = false;
  }
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
