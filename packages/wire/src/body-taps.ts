import { SseScanner } from './sse.js';
import type { SseSink } from './sse.js';
import type { JsonRpcMessage } from './jsonrpc.js';
import { parseJsonBody } from './jsonrpc.js';
import { utf8Text } from './utf8-text.js';
import { holdShape } from './shapes.js';
import type { Hold, HeldBytes } from './held-bytes.js';
import type { StreamEnd, StreamRecord, WireRequest } from './types.js';

/** What a tap tells the observer. */
export interface TapHost {
  clock(): number;
  streamEnded(request: WireRequest, stream: StreamRecord, how: StreamEnd, error: unknown): void;
  /**
   * Returns false when a listener removed the event (`takeReplacement` then gives what takes its place,
   * if anything). `arrival`: when the event's chunk arrived, read only for an event told to a listener.
   */
  sseEvent(request: WireRequest, stream: StreamRecord, scan: SseScanner, arrival: ChunkArrival): boolean;
  /** After each chunk's events, while its bytes are at hand: what `sseEvent` deferred is settled. */
  sseScanned(stream: StreamRecord, scan: SseScanner): void;
  /** The rewritten event (a batch less its removed messages) to put where the event just removed stood. */
  takeReplacement(): Uint8Array | undefined;
  jsonBody(request: WireRequest, stream: StreamRecord, messages: readonly JsonRpcMessage[]): void;
  /** A JSON body or an SSE event was passed on unparsed: over its bound, or past the held-bytes budget. */
  passedUnparsed(format: 'json' | 'sse'): void;
  /** Observing a body threw (a defect): the body stands aside from here, passed on unobserved. Never throws. */
  observationFailed(error: unknown): void;
}

/** When the chunk being scanned arrived. */
export interface ChunkArrival {
  arrivedAt(): number;
}

/** Where a tap puts the bytes the client gets: the watched body's reads (watched-body.ts), or a proxy's writer. */
export interface ChunkSink {
  enqueue(chunk: Uint8Array): void;
}

/** Sees each chunk of a body before the client does, and its clean end. */
export interface BodyTap {
  /** Returns whether anything was enqueued. */
  chunk(chunk: Uint8Array, controller: ChunkSink): boolean;
  /** The body ended cleanly: what the tap still holds for the client goes to `controller`; nothing is observed yet. */
  rest(controller: ChunkSink): void;
  /** After `rest`: what the body's end tells is observed (a JSON body is parsed), and its budget given back. */
  end(): void;
  /** The body is over (ended, failed or cancelled): what it held of the budget is given back. */
  release(): void;
  /**
   * A tap that observes later than it forwards (a decoded copy, decoded-tap.ts): runs `then` once all
   * it was given is observed, before the body's end (`broken`: the body failed) is. Absent: at once.
   */
  settled?(then: () => void, broken: boolean): void;
  /**
   * Observing `chunk` (or, undefined, the body's end) threw: what the client has not had of it and of
   * what the tap holds goes to `sink` as it came, unobserved, and the tap holds nothing from here.
   */
  standAside(sink: ChunkSink, chunk: Uint8Array | undefined): void;
}

/**
 * A body a proxy reads itself (from Node's HTTP client) and hands over chunk by chunk: the same taps as
 * a fetch's body, without a web stream or a Response. What its client must get goes to the sink.
 */
export class PushedBody {
  /** Observing it threw once: every later byte passes straight through, unobserved (`standAside`). */
  private aside = false;

  constructor(
    private readonly observer: TapHost,
    private readonly request: WireRequest,
    /** The stream's record (the observer's `proveReceived` takes it). */
    readonly stream: StreamRecord,
    private readonly tap: BodyTap,
  ) {}

  /** A chunk as it arrived; the bytes the client gets (the chunk, or its kept events) go to `sink`. */
  chunk(chunk: Uint8Array, sink: ChunkSink): void {
    if (this.aside) return sink.enqueue(chunk);
    try {
      this.tap.chunk(chunk, sink);
    } catch (error) {
      this.standAside(error, sink, chunk);
    }
  }

  /**
   * The body ended cleanly: the rest of an unfinished event goes to `sink`, then `response` is ended (a
   * proxy's response to its client), and only then is the end observed (a JSON body parsed, its spans and
   * the detector's work): the client's last bytes do not wait for that work.
   */
  end(sink: ChunkSink, response?: { end(): unknown }): void {
    if (!this.aside) {
      try {
        this.tap.rest(sink);
      } catch (error) {
        this.standAside(error, sink, undefined);
      }
    }
    response?.end();
    if (this.aside || this.tap.settled === undefined) this.endedClean();
    else this.tap.settled(() => this.endedClean(), false);
  }

  /** The body broke (`error`), or the exchange was aborted (an AbortError: `abort`). */
  fail(error: unknown): void {
    if (this.aside || this.tap.settled === undefined) this.failed(error);
    else this.tap.settled(() => this.failed(error), true);
  }

  /** The body's end observed (a JSON body parsed), once the tap observed all it was given. */
  private endedClean(): void {
    if (!this.aside) {
      try {
        this.tap.end();
      } catch (failure) {
        // Nothing is left to give the client: the response has ended.
        this.aside = true;
        this.stream.unread = true;
        this.observer.observationFailed(failure);
      }
    }
    this.ended('clean', undefined);
  }

  private failed(error: unknown): void {
    try {
      this.tap.release();
    } catch (failure) {
      this.aside = true;
      this.stream.unread = true;
      this.observer.observationFailed(failure);
    }
    this.ended(isAbort(error) ? 'abort' : 'error', error);
  }

  /** The stream's end told to the observer; what that throws is counted, never raised into the caller's handler. */
  private ended(how: StreamEnd, error: unknown): void {
    try {
      this.observer.streamEnded(this.request, this.stream, how, error);
    } catch (failure) {
      this.aside = true;
      this.stream.unread = true;
      this.observer.observationFailed(failure);
    }
  }

  /**
   * Observing the body threw: a defect, never the client's or the upstream's. The exception goes no
   * further (it would reach an event emitter's handler, and end the process); the body stands aside:
   * what the tap held and the rest of `chunk` go to the client as they came, every later byte passes
   * straight through, nothing more of it is observed or held, and the failure is counted.
   */
  private standAside(error: unknown, sink: ChunkSink, chunk: Uint8Array | undefined): void {
    this.aside = true;
    this.stream.unread = true;
    try {
      this.tap.standAside(sink, chunk);
    } finally {
      this.observer.observationFailed(error);
    }
  }
}

/**
 * Sees an SSE body's events. With a filtering listener it forwards the bytes of kept events only: the
 * events of a chunk are scanned first, then what the client gets is enqueued once per chunk (the
 * chunk itself when every event of it is kept and none carried over). `event` never calls into the
 * reader's sink: optimised code of the scanner that inlined it would depend on the stream's objects,
 * which die with each body, and be thrown away at the next GC.
 */
export class SseTap implements BodyTap, SseSink, ChunkArrival {
  /**
   * Made at the body's first chunk: a listening GET stream may carry no event for as long as its
   * session lives, and an idle session should not hold a scanner (about 350 bytes) it never used.
   */
  private scanner: SseScanner | undefined = undefined;
  /**
   * When the chunk being scanned arrived: the clock read at most once per chunk, and only when one of
   * its events is told to a listener (most chunks' events are told to none: the read would cost as much
   * as a tenth of the chunk's scan). NaN until then, not undefined (README, "Design").
   */
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
  /** What the event in progress holds of the observer's budget: made when one is first carried over a chunk. */
  private hold: Hold | undefined = undefined;
  /** The chunk being scanned continues an oversized event, whose carried bytes were given out (`forward`). */
  private passing = false;

  constructor(
    private readonly observer: TapHost,
    private readonly request: WireRequest,
    private readonly stream: StreamRecord,
    private readonly filtering: boolean,
    private readonly budget: HeldBytes,
    /** Most bytes of one event held (`maxHeldEventBytes`). */
    private readonly maxEventBytes: number,
  ) {}

  chunk(chunk: Uint8Array, sink: ChunkSink): boolean {
    this.at = NaN;
    const scanner = (this.scanner ??= this.newScanner());
    if (!this.filtering) {
      scanner.push(chunk);
      this.observer.sseScanned(this.stream, scanner);
      scanner.releaseBytes();
      sink.enqueue(chunk);
      return true;
    }
    // An oversized event in progress passes as it comes: what the scanner carries of it was given out.
    const passing = (this.passing = scanner.oversized);
    this.eventsEnd = 0;
    scanner.push(chunk);
    this.observer.sseScanned(this.stream, scanner);
    const enqueued = this.forward(chunk, sink, passing);
    scanner.releaseBytes();
    return enqueued;
  }

  private newScanner(): SseScanner {
    const scanner = new SseScanner(this);
    // Filtering holds an event until it is complete, never the bytes that carry none (a `: ping`).
    scanner.settles = this.filtering;
    return scanner;
  }

  /**
   * Called by the scanner after each chunk: whether it may hold `bytes` of the event in progress. An
   * event over `maxEventBytes`, or past the observer's budget, may not: it becomes oversized, and is
   * given out as it comes, unparsed (README, "Bounds"). Its line in progress (at most 4 KiB) is held anyway.
   */
  held(bytes: number): boolean {
    let hold = this.hold;
    if (hold === undefined) {
      if (bytes === 0) return true;
      hold = this.hold = this.budget.holdFor(this);
    }
    if (bytes === hold.bytes) return true;
    const oversized = this.scanner!.oversized;
    if (!oversized && (bytes > this.maxEventBytes || !this.budget.set(hold, bytes))) {
      this.observer.passedUnparsed('sse');
      return false;
    }
    if (oversized) this.budget.set(hold, bytes, true);
    return true;
  }

  /** The chunk's time: the clock read at the first call for the chunk, while it is being scanned. */
  arrivedAt(): number {
    if (Number.isNaN(this.at)) this.at = this.observer.clock();
    return this.at;
  }

  /** Called by the scanner for each event. */
  event(scan: SseScanner): void {
    const kept = this.observer.sseEvent(this.request, this.stream, scan, this);
    if (!this.filtering) return;
    if (!kept) {
      // The event's own lines: a `: ping` before its first field is no part of it, and goes on.
      (this.removed ??= []).push(scan.fieldsStart(), scan.rawEnd);
      (this.replacements ??= []).push(this.observer.takeReplacement());
    }
    this.eventsEnd = scan.rawEnd;
  }

  rest(sink: ChunkSink): void {
    // No chunk came: nothing was held.
    if (this.scanner === undefined) return;
    // The rest of an oversized event was given out as it came.
    const passed = this.scanner.oversized;
    const rest = this.scanner.end();
    if (this.filtering && !passed && rest.length > 0) sink.enqueue(rest);
  }

  end(): void {
    this.release();
  }

  release(): void {
    if (this.hold !== undefined) this.budget.release(this.hold);
  }

  /**
   * Observation threw while `chunk` was scanned (before any of it was given out): unfiltered, the chunk
   * goes as it came (what came before went as it came); filtered, every byte not given out yet (the
   * event carried from earlier chunks, and the whole chunk: its events before the failure too, none
   * removed) goes as it came. The scanner's bytes are let go.
   */
  standAside(sink: ChunkSink, chunk: Uint8Array | undefined): void {
    const scanner = this.scanner;
    if (chunk !== undefined) {
      const bytes = scanner?.bytes;
      if (!this.filtering || bytes === undefined || bytes.length < chunk.length) sink.enqueue(chunk);
      else sink.enqueue(bytes.subarray(this.passing ? bytes.length - chunk.length : 0));
    }
    scanner?.releaseBytes();
    scanner?.end();
    this.release();
  }

  /**
   * Enqueues the kept events of the chunk just scanned, and, when an oversized event is in progress,
   * what arrived of it (`passing`: it was in progress before this chunk, and what the scanner carried
   * of it was given out already); returns whether anything was enqueued.
   */
  private forward(chunk: Uint8Array, sink: ChunkSink, passing: boolean): boolean {
    const scanner = this.scanner!;
    const bytes = scanner.bytes;
    const start = passing ? bytes.length - chunk.length : 0;
    // The complete events, and the lines after them that carry no event (`SseScanner.settles`).
    const end = scanner.oversized ? bytes.length : Math.max(this.eventsEnd, scanner.settledEnd);
    if (end <= start) return false;
    const removed = this.removed;
    if (removed === undefined || removed.length === 0) {
      // All of the chunk's bytes and nothing carried: the chunk itself, no view.
      const whole = end - start === chunk.length && end === bytes.length;
      sink.enqueue(whole ? chunk : bytes.subarray(start, end));
      return true;
    }
    const replacements = this.replacements!;
    let from = start;
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

/** A body the observer cannot read (an unknown or stacked `Content-Encoding`): it passes as it comes, unobserved. */
export class UnreadTap implements BodyTap {
  chunk(chunk: Uint8Array, sink: ChunkSink): boolean {
    sink.enqueue(chunk);
    return true;
  }
  rest(): void {}
  end(): void {}
  release(): void {}
  /** Every byte went out as it came already. */
  standAside(): void {}
}

/**
 * Reads a JSON body whole, to parse it at its end. A body over `maxBytes`, or one that would take the
 * observer's held bytes past its budget, is passed on unparsed from there, and what was held of it let go.
 */
export class JsonTap implements BodyTap {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;
  private unparsed = false;
  private hold: Hold | undefined = undefined;

  constructor(
    private readonly observer: TapHost,
    private readonly request: WireRequest,
    private readonly stream: StreamRecord,
    private readonly maxBytes: number,
    private readonly budget: HeldBytes,
  ) {}

  chunk(chunk: Uint8Array, sink: ChunkSink): boolean {
    if (!this.unparsed) {
      this.size += chunk.length;
      const hold = (this.hold ??= this.budget.holdFor(this));
      if (this.size <= this.maxBytes && this.budget.set(hold, this.size)) {
        this.chunks.push(chunk);
      } else {
        this.unparsed = true;
        this.chunks.length = 0;
        this.release();
        this.observer.passedUnparsed('json');
      }
    }
    sink.enqueue(chunk);
    return true;
  }

  /** Every chunk was given out as it came. */
  rest(): void {}

  end(): void {
    if (!this.unparsed) {
      const messages = parseJsonBody(utf8Text(this.chunks));
      this.chunks.length = 0;
      this.release();
      if (messages.length > 0) this.observer.jsonBody(this.request, this.stream, messages);
    }
  }

  release(): void {
    this.chunks.length = 0;
    if (this.hold !== undefined) this.budget.release(this.hold);
  }

  /** Each chunk goes as it comes, after what holding it took: the one whose holding threw goes now. */
  standAside(sink: ChunkSink, chunk: Uint8Array | undefined): void {
    this.unparsed = true;
    this.release();
    if (chunk !== undefined) sink.enqueue(chunk);
  }
}

holdShape(new SseTap(undefined as never, undefined as never, undefined as never, false, undefined as never, 0));
holdShape(new JsonTap(undefined as never, undefined as never, undefined as never, 0, undefined as never));
holdShape(new PushedBody(undefined as never, undefined as never, undefined as never, undefined as never));
export function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}
