import { SseScanner } from './sse.js';
import type { SseSink } from './sse.js';
import type { JsonRpcMessage } from './jsonrpc.js';
import { parseMessages } from './jsonrpc.js';
import { holdShape } from './shapes.js';
import type { StreamEnd, StreamRecord, WireRequest } from './types.js';

const NO_BYTES = new Uint8Array(0);

/** What a tap tells the observer. */
export interface TapHost {
  clock(): number;
  streamEnded(request: WireRequest, stream: StreamRecord, how: StreamEnd, error: unknown): void;
  /** Returns false when a listener removed the event. */
  sseEvent(request: WireRequest, stream: StreamRecord, scan: SseScanner, at: number): boolean;
  jsonBody(request: WireRequest, stream: StreamRecord, messages: readonly JsonRpcMessage[]): void;
}

/** Sees each chunk of a body before the client does, and its clean end. */
export interface BodyTap {
  /** Returns whether anything was enqueued. */
  chunk(chunk: Uint8Array, controller: ReadableStreamDefaultController<Uint8Array>): boolean;
  end(controller: ReadableStreamDefaultController<Uint8Array>): void;
}

/**
 * The underlying source of an observed body. The hot path goes through methods of a few classes
 * rather than closures made per stream, so its optimised code outlives each stream.
 */
export class TappedSource {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(
    private readonly observer: TapHost,
    private readonly request: WireRequest,
    private readonly stream: StreamRecord,
    source: ReadableStream<Uint8Array>,
    private readonly tap: BodyTap,
  ) {
    this.reader = source.getReader();
  }

  async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    // A pull that enqueues nothing is not called again, so read on until something is given to the
    // client (every event of a chunk may have been removed) or the body ends.
    for (;;) {
      let result: Awaited<ReturnType<typeof this.reader.read>>;
      try {
        result = await this.reader.read();
      } catch (error) {
        this.observer.streamEnded(this.request, this.stream, isAbort(error) ? 'abort' : 'error', error);
        controller.error(error);
        return;
      }
      if (result.done) {
        this.tap.end(controller);
        this.observer.streamEnded(this.request, this.stream, 'clean', undefined);
        controller.close();
        return;
      }
      if (this.tap.chunk(result.value, controller)) return;
    }
  }

  async cancel(reason: unknown): Promise<void> {
    this.observer.streamEnded(this.request, this.stream, 'abort', reason);
    await this.reader.cancel(reason);
  }
}

export class SseTap implements BodyTap, SseSink {
  private readonly scanner = new SseScanner(this);
  /**
   * When the chunk being scanned arrived: one clock read per chunk. A double from the start, as every
   * later value is, so the shape of SseTap instances never changes.
   */
  private at = NaN;
  private out: ReadableStreamDefaultController<Uint8Array> | undefined;
  private chunkIn: Uint8Array = NO_BYTES;
  private enqueued = false;
  /** Kept event bytes not yet given to the client: one run of adjacent events in one buffer. */
  private runBytes: Uint8Array = NO_BYTES;
  private runStart = 0;
  private runEnd = 0;

  constructor(
    private readonly observer: TapHost,
    private readonly request: WireRequest,
    private readonly stream: StreamRecord,
    private readonly filtering: boolean,
  ) {}

  chunk(chunk: Uint8Array, controller: ReadableStreamDefaultController<Uint8Array>): boolean {
    this.at = this.observer.clock();
    if (!this.filtering) {
      this.scanner.push(chunk);
      controller.enqueue(chunk);
      return true;
    }
    this.out = controller;
    this.chunkIn = chunk;
    this.enqueued = false;
    this.scanner.push(chunk);
    this.flush();
    this.runBytes = NO_BYTES;
    this.chunkIn = NO_BYTES;
    this.out = undefined;
    return this.enqueued;
  }

  /** Called by the scanner for each event. */
  event(scan: SseScanner): void {
    const kept = this.observer.sseEvent(this.request, this.stream, scan, this.at);
    if (!this.filtering || !kept) return;
    if (scan.bytes !== this.runBytes || scan.rawStart !== this.runEnd) {
      this.flush();
      this.runBytes = scan.bytes;
      this.runStart = scan.rawStart;
    }
    this.runEnd = scan.rawEnd;
  }

  end(controller: ReadableStreamDefaultController<Uint8Array>): void {
    const rest = this.scanner.end();
    if (this.filtering && rest.length > 0) controller.enqueue(rest);
  }

  private flush(): void {
    if (this.runEnd === this.runStart) return;
    const chunk = this.chunkIn;
    const bytes = this.runBytes;
    // Every event of the chunk kept and none carried over: the chunk itself, no view.
    const whole = this.runStart === 0 && this.runEnd === chunk.length && bytes.buffer === chunk.buffer && bytes.byteOffset === chunk.byteOffset;
    this.out!.enqueue(whole ? chunk : bytes.subarray(this.runStart, this.runEnd));
    this.runStart = this.runEnd = 0;
    this.enqueued = true;
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

  chunk(chunk: Uint8Array, controller: ReadableStreamDefaultController<Uint8Array>): boolean {
    this.size += chunk.length;
    if (this.size <= this.maxBytes) this.chunks.push(chunk);
    controller.enqueue(chunk);
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
holdShape(new TappedSource(undefined as never, undefined as never, undefined as never, new ReadableStream(), undefined as never));

export function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}
