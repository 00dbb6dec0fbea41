import { SseScanner } from './sse.js';
import type { SseSink } from './sse.js';
import type { JsonRpcMessage } from './jsonrpc.js';
import { parseMessages } from './jsonrpc.js';
import { holdShape } from './shapes.js';
import type { StreamEnd, StreamRecord, WireRequest } from './types.js';

/** What a tap tells the observer. */
export interface TapHost {
  clock(): number;
  streamEnded(request: WireRequest, stream: StreamRecord, how: StreamEnd, error: unknown): void;
  /** Returns false when a listener removed the event (`takeReplacement` then gives what takes its place, if anything). */
  sseEvent(request: WireRequest, stream: StreamRecord, scan: SseScanner, at: number): boolean;
  /** The rewritten event (a batch less its removed messages) to put where the event just removed stood. */
  takeReplacement(): Uint8Array | undefined;
  jsonBody(request: WireRequest, stream: StreamRecord, messages: readonly JsonRpcMessage[]): void;
}

/** Where a tap puts the bytes the client gets: the watched body's reads (watched-body.ts), or a proxy's writer. */
export interface ChunkSink {
  enqueue(chunk: Uint8Array): void;
}

/** Sees each chunk of a body before the client does, and its clean end. */
export interface BodyTap {
  /** Returns whether anything was enqueued. */
  chunk(chunk: Uint8Array, controller: ChunkSink): boolean;
  end(controller: ChunkSink): void;
}

/**
 * A body a proxy reads itself (from Node's HTTP client) and hands over chunk by chunk: the same taps as
 * a fetch's body, without a web stream or a Response. What its client must get goes to the sink.
 */
export class PushedBody {
  constructor(
    private readonly observer: TapHost,
    private readonly request: WireRequest,
    /** The stream's record (the observer's `proveReceived` takes it). */
    readonly stream: StreamRecord,
    private readonly tap: BodyTap,
  ) {}

  /** A chunk as it arrived; the bytes the client gets (the chunk, or its kept events) go to `sink`. */
  chunk(chunk: Uint8Array, sink: ChunkSink): void {
    this.tap.chunk(chunk, sink);
  }

  /** The body ended cleanly: the rest of an unfinished event goes to `sink`. */
  end(sink: ChunkSink): void {
    this.tap.end(sink);
    this.observer.streamEnded(this.request, this.stream, 'clean', undefined);
  }

  /** The body broke (`error`), or the exchange was aborted (an AbortError: `abort`). */
  fail(error: unknown): void {
    this.observer.streamEnded(this.request, this.stream, isAbort(error) ? 'abort' : 'error', error);
  }
}

/**
 * Sees an SSE body's events. With a filtering listener it forwards the bytes of kept events only: the
 * events of a chunk are scanned first, then what the client gets is enqueued once per chunk (the
 * chunk itself when every event of it is kept and none carried over). `event` never calls into the
 * reader's sink: optimised code of the scanner that inlined it would depend on the stream's objects,
 * which die with each body, and be thrown away at the next GC.
 */
export class SseTap implements BodyTap, SseSink {
  private readonly scanner = new SseScanner(this);
  /** When the chunk being scanned arrived: one clock read per chunk. NaN until then, not undefined (README, "Design"). */
  private at = NaN;
  /** End of the last complete event of the chunk being scanned, in the scanner's buffer. */
  private eventsEnd = 0;
  /**
   * Removed events of the chunk being scanned: start and end offsets, in pairs (usually none). Made at
   * the first removed event: most streams never lose one.
   */
  private removed: number[] | undefined = undefined;
  /** Per pair of `removed`: the bytes that take the removed event's place (its batch less some messages), or undefined. */
  private replacements: (Uint8Array | undefined)[] | undefined = undefined;

  constructor(
    private readonly observer: TapHost,
    private readonly request: WireRequest,
    private readonly stream: StreamRecord,
    private readonly filtering: boolean,
  ) {}

  chunk(chunk: Uint8Array, sink: ChunkSink): boolean {
    this.at = this.observer.clock();
    if (!this.filtering) {
      this.scanner.push(chunk);
      this.scanner.releaseBytes();
      sink.enqueue(chunk);
      return true;
    }
    this.eventsEnd = 0;
    this.scanner.push(chunk);
    const enqueued = this.forward(chunk, sink);
    this.scanner.releaseBytes();
    return enqueued;
  }

  /** Called by the scanner for each event. */
  event(scan: SseScanner): void {
    const kept = this.observer.sseEvent(this.request, this.stream, scan, this.at);
    if (!this.filtering) return;
    if (!kept) {
      (this.removed ??= []).push(scan.rawStart, scan.rawEnd);
      (this.replacements ??= []).push(this.observer.takeReplacement());
    }
    this.eventsEnd = scan.rawEnd;
  }

  end(sink: ChunkSink): void {
    const rest = this.scanner.end();
    if (this.filtering && rest.length > 0) sink.enqueue(rest);
  }

  /** Enqueues the kept events of the chunk just scanned; returns whether anything was enqueued. */
  private forward(chunk: Uint8Array, sink: ChunkSink): boolean {
    const end = this.eventsEnd;
    if (end === 0) return false;
    const bytes = this.scanner.bytes;
    const removed = this.removed;
    if (removed === undefined || removed.length === 0) {
      // Every event of the chunk kept and none carried over: the chunk itself, no view.
      const whole = end === chunk.length && bytes.buffer === chunk.buffer && bytes.byteOffset === chunk.byteOffset;
      sink.enqueue(whole ? chunk : bytes.subarray(0, end));
      return true;
    }
    const replacements = this.replacements!;
    let from = 0;
    let enqueued = false;
    for (let i = 0; i < removed.length; i += 2) {
      if (removed[i]! > from) {
        sink.enqueue(bytes.subarray(from, removed[i]!));
        enqueued = true;
      }
      const replacement = replacements[i / 2];
      if (replacement !== undefined) {
        sink.enqueue(replacement);
        enqueued = true;
      }
      from = removed[i + 1]!;
    }
    removed.length = 0;
    replacements.length = 0;
    if (end > from) {
      sink.enqueue(bytes.subarray(from, end));
      enqueued = true;
    }
    return enqueued;
  }
}

export class JsonTap implements BodyTap {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;

  constructor(
    private readonly observer: TapHost,
    private readonly request: WireRequest,
    private readonly stream: StreamRecord,
    private readonly maxBytes: number,
  ) {}

  chunk(chunk: Uint8Array, sink: ChunkSink): boolean {
    this.size += chunk.length;
    if (this.size <= this.maxBytes) this.chunks.push(chunk);
    sink.enqueue(chunk);
    return true;
  }

  end(): void {
    if (this.size > this.maxBytes) return;
    const messages = parseMessages(Buffer.concat(this.chunks).toString('utf8'));
    this.chunks.length = 0;
    if (messages.length > 0) this.observer.jsonBody(this.request, this.stream, messages);
  }
}

holdShape(new SseTap(undefined as never, undefined as never, undefined as never, false));
holdShape(new JsonTap(undefined as never, undefined as never, undefined as never, 0));
holdShape(new PushedBody(undefined as never, undefined as never, undefined as never, undefined as never));
export function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}
