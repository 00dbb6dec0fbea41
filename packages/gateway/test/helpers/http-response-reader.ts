/** One header line as received: name as spelled, value without surrounding whitespace. */
type HeaderLine = [name: string, value: string];

/** How a response's body is delimited (RFC 9112, 6.3). */
type Framing =
  | { kind: 'none' }
  | { kind: 'length'; length: number }
  | { kind: 'chunked' }
  /** No Content-Length, no chunked: the body runs to the connection's close (no keep-alive after it). */
  | { kind: 'close' };

export interface ResponseHead {
  status: number;
  reason: string;
  headers: HeaderLine[];
  framing: Framing;
  /** The server closes the connection after this response (`Connection: close`, or a close-delimited body). */
  closes: boolean;
}

/** What the reader hands out, in order, for each response of the connection. */
export interface ResponseSink {
  head(head: ResponseHead): void;
  /** Body bytes, framing removed. */
  body(bytes: Buffer): void;
  /** The response ended exactly where its framing says. */
  end(): void;
}

/** The bytes on the connection do not parse as HTTP/1.1 responses: the connection is out of step. */
export class FramingError extends Error {}

const MAX_HEAD_BYTES = 16 * 1024;
const STATUS_LINE = /^HTTP\/1\.1 (\d{3})(?: (.*))?$/;
const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;
const CHUNK_SIZE_LINE = /^([0-9A-Fa-f]{1,8})(?:;.*)?$/;

type State = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'close';

/**
 * A strict incremental reader of the HTTP/1.1 responses of one connection, one after another. It
 * parses only the bytes below a limit the caller gives (a client that reads k bytes and stops), and
 * stops at the end of each response: what follows must be the next response's status line, exactly.
 * Lines end with CRLF; a header block without a blank line within 16 KiB, a Content-Length that is not
 * one number, both Content-Length and Transfer-Encoding, a chunk whose data is not followed by CRLF:
 * each is a FramingError (the connection is out of step).
 */
export class HttpResponseReader {
  /** Received and not yet consumed. */
  private pending: Buffer = Buffer.alloc(0);
  /** Stream offset of `pending[0]`: every byte before it is consumed. */
  private base = 0;
  private state: State = 'head';
  /** Body bytes (Content-Length) or chunk bytes still to read. */
  private remaining = 0;

  constructor(private readonly sink: ResponseSink) {}

  /** Stream offset of the next byte to parse (the start of the next response between responses). */
  get offset(): number {
    return this.base;
  }

  /** Stream offset just past the last byte received. */
  get received(): number {
    return this.base + this.pending.length;
  }

  push(bytes: Buffer): void {
    this.pending = this.pending.length === 0 ? bytes : Buffer.concat([this.pending, bytes]);
  }

  /**
   * Parses what it can of the current response below stream offset `limit`; returns true once the
   * response ended (the reader then waits before the next one).
   */
  parse(limit: number): boolean {
    for (;;) {
      const available = Math.min(this.pending.length, limit - this.base);
      if (available <= 0) return false;
      switch (this.state) {
        case 'head': {
          const end = this.pending.subarray(0, available).indexOf('\r\n\r\n');
          if (end < 0) {
            if (available >= MAX_HEAD_BYTES) throw new FramingError(`no end of the header block in ${available} bytes`);
            return false;
          }
          const block = this.pending.subarray(0, end).toString('latin1');
          this.consume(end + 4);
          if (this.readHead(block)) return true;
          break;
        }
        case 'length': {
          const n = Math.min(available, this.remaining);
          this.sink.body(Buffer.from(this.pending.subarray(0, n)));
          this.consume(n);
          this.remaining -= n;
          if (this.remaining === 0) return this.ended();
          break;
        }
        case 'chunk-size': {
          const line = this.line(available);
          if (line === undefined) return false;
          const match = CHUNK_SIZE_LINE.exec(line);
          if (!match) throw new FramingError(`bad chunk-size line ${JSON.stringify(line.slice(0, 60))}`);
          this.remaining = parseInt(match[1]!, 16);
          this.state = this.remaining === 0 ? 'trailers' : 'chunk-data';
          break;
        }
        case 'chunk-data': {
          const n = Math.min(available, this.remaining);
          this.sink.body(Buffer.from(this.pending.subarray(0, n)));
          this.consume(n);
          this.remaining -= n;
          if (this.remaining === 0) this.state = 'chunk-end';
          break;
        }
        case 'chunk-end': {
          if (available < 2) return false;
          if (this.pending[0] !== 13 || this.pending[1] !== 10)
            throw new FramingError(`chunk data not followed by CRLF: ${JSON.stringify(this.text(8))}`);
          this.consume(2);
          this.state = 'chunk-size';
          break;
        }
        case 'trailers': {
          const line = this.line(available);
          if (line === undefined) return false;
          if (line === '') return this.ended();
          if (!HEADER_LINE.test(line)) throw new FramingError(`bad trailer line ${JSON.stringify(line.slice(0, 60))}`);
          break;
        }
        case 'close': {
          this.sink.body(Buffer.from(this.pending.subarray(0, available)));
          this.consume(available);
          break;
        }
      }
    }
  }

  /**
   * The server closed the connection: a close-delimited body ends here (true); any other response
   * cut before its end did not (false). Between responses: true.
   */
  closed(): boolean {
    if (this.state === 'close') {
      this.ended();
      return true;
    }
    return this.state === 'head';
  }

  /** What a response that stopped short is missing, for a report. */
  shortfall(): string {
    switch (this.state) {
      case 'head':
        return `header block incomplete (${this.pending.length} bytes, no blank line)`;
      case 'length':
        return `Content-Length body ${this.remaining} bytes short`;
      case 'chunk-size':
      case 'chunk-data':
      case 'chunk-end':
      case 'trailers':
        return `chunked body without its last chunk (state ${this.state})`;
      case 'close':
        return 'close-delimited body, connection still open';
    }
  }

  /** The first bytes not consumed, as text, for a report. */
  text(max: number): string {
    return this.pending.subarray(0, max).toString('latin1');
  }

  /** Parses a header block; returns true when the response has no body (it ended with its head). */
  private readHead(block: string): boolean {
    const lines = block.split('\r\n');
    const statusLine = lines[0]!;
    const status = STATUS_LINE.exec(statusLine);
    if (!status) throw new FramingError(`expected a status line, got ${JSON.stringify(statusLine.slice(0, 80))}`);
    const headers: HeaderLine[] = [];
    for (const line of lines.slice(1)) {
      if (line.includes('\n') || line.includes('\r'))
        throw new FramingError(`bare CR or LF in header line ${JSON.stringify(line)}`);
      const match = HEADER_LINE.exec(line);
      if (!match) throw new FramingError(`bad header line ${JSON.stringify(line.slice(0, 80))}`);
      headers.push([match[1]!, match[2]!]);
    }
    const code = Number(status[1]);
    const values = (name: string) => headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
    const lengths = values('content-length');
    const codings = values('transfer-encoding');
    const closes = values('connection').some((v) => /(^|,)\s*close\s*(,|$)/i.test(v));
    let framing: Framing;
    if (code < 200 || code === 204 || code === 304) {
      if (code < 200) throw new FramingError(`unexpected interim response ${code}`);
      framing = { kind: 'none' };
    } else if (codings.length > 0) {
      if (lengths.length > 0) throw new FramingError('both Transfer-Encoding and Content-Length');
      if (!/(^|,)\s*chunked\s*$/i.test(codings.join(',')))
        throw new FramingError(`transfer coding ${codings.join(',')} does not end in chunked`);
      framing = { kind: 'chunked' };
    } else if (lengths.length > 0) {
      const distinct = new Set(lengths.flatMap((v) => v.split(',').map((s) => s.trim())));
      const [only] = distinct;
      if (distinct.size !== 1 || !/^\d{1,15}$/.test(only!))
        throw new FramingError(`bad Content-Length ${lengths.join(', ')}`);
      framing = Number(only) === 0 ? { kind: 'none' } : { kind: 'length', length: Number(only) };
    } else {
      framing = { kind: 'close' };
    }
    this.sink.head({
      status: code,
      reason: status[2] ?? '',
      headers,
      framing,
      closes: closes || framing.kind === 'close',
    });
    if (framing.kind === 'none') return this.ended();
    this.state = framing.kind === 'length' ? 'length' : framing.kind === 'chunked' ? 'chunk-size' : 'close';
    if (framing.kind === 'length') this.remaining = framing.length;
    return false;
  }

  /** The next CRLF-terminated line within `available` bytes (consumed), or undefined if none yet. */
  private line(available: number): string | undefined {
    const end = this.pending.subarray(0, available).indexOf('\r\n');
    if (end < 0) {
      if (available > 1024) throw new FramingError(`no CRLF in ${available} bytes of chunk framing`);
      return undefined;
    }
    const text = this.pending.subarray(0, end).toString('latin1');
    this.consume(end + 2);
    return text;
  }

  private consume(n: number): void {
    this.pending = this.pending.subarray(n);
    this.base += n;
  }

  private ended(): true {
    this.state = 'head';
    this.sink.end();
    return true;
  }
}
