import { isAbort } from './body-taps.js';
import type { BodyTap, ChunkSink, TapHost } from './body-taps.js';
import { holdShape } from './shapes.js';
import type { StreamRecord, WireRequest } from './types.js';

/*
 * A fetch's body observed in place: the application gets the very Response and ReadableStream fetch
 * returned, and each chunk passes the tap as the application's reader pulls it. No second web stream,
 * controller, Response or Headers is made: in Node 20 those are several KB per open body, kept as
 * long as the body is open (a session's standalone GET stream: its whole life).
 *
 * How: the prototype of that one stream instance (and of its Response, and of each reader it gives)
 * is set to one that overrides a few methods (ReadableStream.prototype itself is untouched).
 * `getReader()` returns the real reader whose `read`, `cancel` and `releaseLock` pass the tap.
 * undici's `text()`, `json()`, `arrayBuffer()` (fullyReadBody), `clone()` (`tee()`) and
 * `Readable.fromWeb` call these public methods on the instance, so they go through the tap too.
 * `pipeTo` and `pipeThrough` are re-implemented over the watched reader (Node's own use an internal
 * reader that would bypass it); `tee`, `values` and async iteration go through a plain stream pulling
 * from the watched reader (rare paths).
 *
 * Why prototypes, not own properties: a Node 20 ReadableStream has a map (hidden class) of its own,
 * not shared with other streams, so each own property added makes a new map for that one stream
 * (eight methods: some 650 bytes a stream); a prototype swap makes one, and a Response's or reader's,
 * whose maps are shared, none. The state of a stream is in a WeakMap for the same reason.
 */

const READER = Symbol('resumewatch.wire.watchedReader');

type Chunk = Uint8Array;
type Reader = ReadableStreamDefaultReader<Chunk>;
type ReadResult = Awaited<ReturnType<Reader['read']>>;
interface PipeOptions {
  preventClose?: boolean;
  preventAbort?: boolean;
  preventCancel?: boolean;
  signal?: AbortSignal;
}
type WatchedReaderInstance = Reader & { [READER]: WatchedReader };

/**
 * The state of each watched stream, deleted once the body is over and nothing forwarded waits (see
 * `forget`). V8 shrinks a WeakMap's table on `delete` but never when the collector clears a dead key:
 * left to the collector, the table stays at the capacity it grew to at the peak (16 B a slot, grown
 * counting dead keys not yet collected; 4,096 slots after 1,000 ended sessions).
 */
const bodies = new WeakMap<ReadableStream<Chunk>, WatchedBody>();

const proto = ReadableStream.prototype;
const realGetReader = proto.getReader as (this: ReadableStream<Chunk>, options?: unknown) => Reader;
const realCancel = proto.cancel;
const readerProto = ReadableStreamDefaultReader.prototype;
const realRead = readerProto.read as (this: Reader) => Promise<ReadResult>;
const realReaderCancel = readerProto.cancel;
const realReleaseLock = readerProto.releaseLock;

/** The state of one observed body: the tap, and the bytes the tap forwarded that no read has returned yet. */
class WatchedBody implements ChunkSink {
  /** The tap saw the end, or the body failed or was cancelled: nothing more is observed. */
  over = false;
  /** Observing it threw once: every later chunk passes as it came, unobserved. */
  private aside = false;
  /** Forwarded bytes not yet returned (a chunk whose events a filtering tap cut into several pieces). */
  private pending: Chunk[] | undefined = undefined;
  /** The one piece a chunk usually yields (the chunk itself), before any read returns it. */
  private next: Chunk | undefined = undefined;

  constructor(
    /** The watched stream: its key in `bodies`. */
    private readonly body: ReadableStream<Chunk>,
    private readonly observer: TapHost,
    private readonly request: WireRequest,
    private readonly stream: StreamRecord,
    private readonly tap: BodyTap,
  ) {}

  /** Called by the tap with the bytes the reader gets. */
  enqueue(chunk: Chunk): void {
    if (this.next === undefined) this.next = chunk;
    else (this.pending ??= []).push(chunk);
  }

  /** The next forwarded piece, if any. */
  take(): Chunk | undefined {
    const next = this.next;
    if (next === undefined) return undefined;
    const pending = this.pending;
    this.next = pending !== undefined && pending.length > 0 ? pending.shift() : undefined;
    if (this.over && this.next === undefined) bodies.delete(this.body);
    return next;
  }

  /**
   * The body is over: its entry in `bodies` goes once nothing forwarded waits for a read (else when
   * `take` returns the last piece). A stream without one is read as the over body was: `stateOf` gives
   * ENDED, over with nothing waiting, to a reader, pipe or cancel that comes after.
   */
  private forget(): void {
    if (this.next === undefined) bodies.delete(this.body);
  }

  chunk(value: Chunk): void {
    if (this.aside) return this.enqueue(value);
    try {
      this.tap.chunk(value, this);
    } catch (error) {
      this.standAside(error, value);
    }
  }

  end(): void {
    this.over = true;
    try {
      if (!this.aside) {
        this.tap.rest(this);
        this.tap.end();
      }
      this.observer.streamEnded(this.request, this.stream, 'clean', undefined);
    } catch (error) {
      if (!this.aside) this.standAside(error, undefined);
      else this.observer.observationFailed(error);
    }
    this.forget();
  }

  /**
   * Observing the body threw (a defect): the exception never reaches the application's read, and the
   * body stands aside, passed on as it came from here, unobserved (PushedBody's `standAside`).
   */
  private standAside(error: unknown, chunk: Chunk | undefined): void {
    this.aside = true;
    try {
      this.tap.standAside(this, chunk);
    } finally {
      this.observer.observationFailed(error);
    }
  }

  failed(error: unknown): void {
    if (this.over) return;
    this.over = true;
    this.tap.release();
    this.forget();
    this.observer.streamEnded(this.request, this.stream, isAbort(error) ? 'abort' : 'error', error);
  }

  /** A Response method refused to read the body (an aborted fetch's): an abort ends it. */
  refused(error: unknown): never {
    if (isAbort(error)) this.failed(error);
    throw error;
  }

  cancelled(reason: unknown): void {
    if (this.over) return;
    this.over = true;
    this.tap.release();
    this.forget();
    this.observer.streamEnded(this.request, this.stream, 'abort', reason);
  }
}

/** The state of a watched stream whose body is over and whose entry is gone: over, nothing waiting. */
const ENDED = new WatchedBody(
  undefined as never,
  undefined as never,
  undefined as never,
  undefined as never,
  undefined as never,
);
ENDED.over = true;

/** The state of a watched stream (one with `watchedStreamProto`). */
function stateOf(stream: ReadableStream<Chunk>): WatchedBody {
  return bodies.get(stream) ?? ENDED;
}

/** One reader of a watched body (a body may be read by several in turn: each releases its lock). */
class WatchedReader {
  /** The lock was released: a read it had pending fails without saying anything of the body. */
  released = false;
  /*
   * A read waits on a promise chain, not in an async function: an open stream has a read pending for
   * its whole life, and a suspended async function keeps a generator, its registers and the await's
   * closures. These handlers are made at the first read through `read()` (a pipe reads with its own).
   */
  private onRead: ((result: ReadResult) => ReadResult | Promise<ReadResult>) | undefined = undefined;
  private onError: ((error: unknown) => never) | undefined = undefined;

  constructor(
    readonly body: WatchedBody,
    readonly reader: Reader,
  ) {}

  /** The next read, as the reader's `read()` returns it. */
  next(): Promise<ReadResult> {
    const body = this.body;
    const piece = body.take();
    if (piece !== undefined) return Promise.resolve({ done: false, value: piece });
    if (body.over) return realRead.call(this.reader);
    this.onRead ??= (result) => this.accept(result) ?? this.readOn();
    this.onError ??= (error) => this.failed(error);
    return this.readOn();
  }

  private readOn(): Promise<ReadResult> {
    return realRead.call(this.reader).then(this.onRead, this.onError);
  }

  /**
   * What a read of the real reader gives the application: the bytes the tap forwarded, the rest of an
   * unfinished event before done, or undefined when every event of the chunk was removed (read on
   * rather than return an empty chunk).
   */
  accept(result: ReadResult): ReadResult | undefined {
    const body = this.body;
    if (body.over || this.released) return result;
    if (result.done) {
      body.end();
      const rest = body.take();
      return rest === undefined ? result : { done: false, value: rest };
    }
    const value = result.value;
    body.chunk(value);
    const piece = body.take();
    // The chunk forwarded whole (the usual case): the read's own result, no object made a chunk.
    return piece === undefined ? undefined : piece === value ? result : { done: false, value: piece };
  }

  failed(error: unknown): never {
    if (!this.released) this.body.failed(error);
    throw error;
  }
}

/*
 * The overriding prototypes. Their methods find the state of the instance: a reader's under a symbol
 * (readers share maps), a stream's in `bodies`.
 */

const watchedReaderProto = Object.create(readerProto, {
  read: {
    value: function read(this: WatchedReaderInstance): Promise<ReadResult> {
      return this[READER].next();
    },
  },
  cancel: {
    value: function cancel(this: WatchedReaderInstance, reason?: unknown): Promise<void> {
      const state = this[READER];
      if (!state.released) state.body.cancelled(reason);
      return realReaderCancel.call(this, reason);
    },
  },
  releaseLock: {
    value: function releaseLock(this: WatchedReaderInstance): void {
      realReleaseLock.call(this);
      this[READER].released = true;
    },
  },
}) as object;

/** A reader of the body whose reads pass the tap. */
function watchedReader(stream: ReadableStream<Chunk>): WatchedReaderInstance {
  const reader = realGetReader.call(stream) as WatchedReaderInstance;
  reader[READER] = new WatchedReader(stateOf(stream), reader);
  Object.setPrototypeOf(reader, watchedReaderProto);
  return reader;
}

const watchedStreamProto = Object.create(proto, {
  getReader: {
    value: function getReader(this: ReadableStream<Chunk>, options?: { mode?: string }): Reader {
      if (options?.mode === 'byob') return realGetReader.call(bytesOf(this), options);
      return watchedReader(this);
    },
  },
  cancel: {
    value: function cancel(this: ReadableStream<Chunk>, reason?: unknown): Promise<void> {
      // A locked stream refuses (and nothing ended); a free one is cancelled.
      if (!this.locked) stateOf(this).cancelled(reason);
      return realCancel.call(this, reason);
    },
  },
  pipeTo: { value: pipeTo },
  pipeThrough: {
    value: function pipeThrough<T>(
      this: ReadableStream<Chunk>,
      transform: { writable: WritableStream<Chunk>; readable: ReadableStream<T> },
      options?: PipeOptions,
    ): ReadableStream<T> {
      if (this.locked) throw new TypeError('ReadableStream is locked');
      if (transform.writable.locked) throw new TypeError('WritableStream is locked');
      // As the standard's pipeThrough: the pipe's promise is marked handled; its errors reach `readable`.
      pipeTo.call(this, transform.writable, options).then(undefined, ignore);
      return transform.readable;
    },
  },
  tee: {
    value: function tee(this: ReadableStream<Chunk>): [ReadableStream<Chunk>, ReadableStream<Chunk>] {
      return proto.tee.call(plainOf(this)) as [ReadableStream<Chunk>, ReadableStream<Chunk>];
    },
  },
  values: { value: values },
  [Symbol.asyncIterator]: { value: values },
}) as object;

function pipeTo(this: ReadableStream<Chunk>, destination: WritableStream<Chunk>, options?: PipeOptions): Promise<void> {
  if (this.locked) return Promise.reject(new TypeError('ReadableStream is locked'));
  if (destination.locked) return Promise.reject(new TypeError('WritableStream is locked'));
  return new Pipe(watchedReader(this)[READER], destination.getWriter(), options).start();
}

function values(this: ReadableStream<Chunk>, options?: { preventCancel?: boolean }): AsyncIterableIterator<Chunk> {
  return (proto as unknown as { values(o?: unknown): AsyncIterableIterator<Chunk> }).values.call(
    plainOf(this),
    options,
  );
}

/** A default stream pulling from the watched reader (for tee and iteration). */
function plainOf(stream: ReadableStream<Chunk>): ReadableStream<Chunk> {
  const reader = watchedReader(stream);
  return new ReadableStream<Chunk>(
    {
      pull: (controller) =>
        reader.read().then((result) => (result.done ? controller.close() : controller.enqueue(result.value))),
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/** A byte stream pulling from the watched reader (for a BYOB reader): its chunks are copies, as it takes their buffers. */
function bytesOf(stream: ReadableStream<Chunk>): ReadableStream<Chunk> {
  const reader = watchedReader(stream);
  return new ReadableStream({
    type: 'bytes',
    pull: (controller) =>
      reader.read().then((result) => {
        if (result.done) {
          controller.close();
          controller.byobRequest?.respond(0);
        } else controller.enqueue(result.value.slice());
      }),
    cancel: (reason) => reader.cancel(reason),
  });
}

function ignore(): void {}

/**
 * `pipeTo` over the watched reader, as the WHATWG streams standard's ReadableStreamPipeTo: writes wait
 * for the destination's backpressure (`writer.ready`); the source's end closes the destination unless
 * preventClose; its error aborts it unless preventAbort; the destination's error (or its refusal of
 * a write, when it was closed early) cancels the source unless preventCancel; the signal's abort does
 * both (unless prevented); the locks are released when it settles. One object and a promise chain of
 * its methods: it lives as long as the body is open. It reads the real reader and passes each result
 * through the tap itself (one promise a chunk, not two).
 */
class Pipe {
  private shuttingDown = false;
  /** The last write's promise: the shutdown waits for every chunk read to be written. */
  private lastWrite: Promise<void> | undefined = undefined;
  private resolve: () => void = ignore;
  private reject: (error: unknown) => void = ignore;
  private readonly signal: AbortSignal | undefined;
  private readonly preventClose: boolean;
  private readonly preventAbort: boolean;
  private readonly preventCancel: boolean;
  private readonly onReady = (): void => this.pull();
  private readonly onRead = (result: ReadResult): void => this.read(result);
  private readonly onSourceError = (error: unknown): void => this.sourceFailed(error);
  /** The destination's error; also a refused write (a destination closed early refuses the next one). */
  private readonly onDestError = (error: unknown): void => this.destinationFailed(error);
  private onAbort: (() => void) | undefined = undefined;
  /**
   * Whether `step` asks the destination for room before it waits for `ready`: until once it had none.
   * A TransformStream's writable (a decoder's, the SDKs') keeps each chunk queued until its transform
   * has run, so it never has room right after a write, and asking (its public getter: a brand check and
   * megamorphic loads, about 450 instructions) would only add to the `ready` promise every chunk waits on.
   */
  private askRoom = true;

  constructor(
    private readonly source: WatchedReader,
    private readonly writer: WritableStreamDefaultWriter<Chunk>,
    options: PipeOptions | undefined,
  ) {
    this.preventClose = options?.preventClose === true;
    this.preventAbort = options?.preventAbort === true;
    this.preventCancel = options?.preventCancel === true;
    this.signal = options?.signal;
  }

  start(): Promise<void> {
    const promise = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.source.reader.closed.then(undefined, this.onSourceError);
    this.writer.closed.then(undefined, this.onDestError);
    const signal = this.signal;
    if (signal?.aborted) this.aborted();
    else {
      if (signal) signal.addEventListener('abort', (this.onAbort = () => this.aborted()), { once: true });
      this.step();
    }
    return promise;
  }

  private step(): void {
    if (this.shuttingDown) return;
    // Room in the destination's queue: read on at once, without a promise a chunk.
    if (this.askRoom) {
      if ((this.writer.desiredSize ?? 0) > 0) return this.pull();
      this.askRoom = false;
    }
    // A rejected ready means the destination errored: `closed` reports it.
    this.writer.ready.then(this.onReady, ignore);
  }

  private pull(): void {
    if (this.shuttingDown) return;
    const piece = this.source.body.take();
    if (piece !== undefined) this.write(piece);
    else realRead.call(this.source.reader).then(this.onRead, this.onSourceError);
  }

  private read(result: ReadResult): void {
    if (this.shuttingDown) return;
    const given = this.source.accept(result);
    if (given === undefined) this.pull();
    else if (given.done) this.sourceClosed();
    else this.write(given.value);
  }

  private write(chunk: Chunk): void {
    const written = this.writer.write(chunk);
    written.then(undefined, this.onDestError);
    this.lastWrite = written;
    this.step();
  }

  private sourceClosed(): void {
    if (this.preventClose) {
      this.shutdown(undefined, false);
      return;
    }
    this.shuttingDown = true;
    this.writer.close().then(
      () => this.finish(undefined, false),
      (error: unknown) => this.finish(error, true),
    );
  }

  private sourceFailed(error: unknown): void {
    if (this.shuttingDown) return;
    // Also seen by `closed` while no read was pending (the destination's backpressure).
    this.source.body.failed(error);
    this.shutdown(error, true, this.preventAbort ? undefined : () => this.writer.abort(error));
  }

  private destinationFailed(error: unknown): void {
    if (this.shuttingDown) return;
    this.shutdownNow(error, this.preventCancel ? undefined : () => this.cancelSource(error));
  }

  private cancelSource(reason: unknown): Promise<void> {
    return (this.source.reader as WatchedReaderInstance).cancel(reason);
  }

  private aborted(): void {
    if (this.shuttingDown) return;
    const error = this.signal!.reason as unknown;
    const abortDestination = !this.preventAbort;
    const cancelSource = !this.preventCancel;
    this.shutdown(
      error,
      true,
      abortDestination || cancelSource
        ? () =>
            Promise.all([
              abortDestination ? this.writer.abort(error) : undefined,
              cancelSource ? this.cancelSource(error) : undefined,
            ])
        : undefined,
    );
  }

  /** Shuts down after every chunk read has been written (the destination is still writable). */
  private shutdown(error: unknown, failed: boolean, action?: () => Promise<unknown>): void {
    this.shuttingDown = true;
    const then = () => this.act(error, failed, action);
    if (this.lastWrite === undefined) then();
    else this.lastWrite.then(then, then);
  }

  /** Shuts down at once: the destination cannot take the pending writes. */
  private shutdownNow(error: unknown, action?: () => Promise<unknown>): void {
    this.shuttingDown = true;
    this.act(error, true, action);
  }

  private act(error: unknown, failed: boolean, action: (() => Promise<unknown>) | undefined): void {
    if (action === undefined) {
      this.finish(error, failed);
      return;
    }
    action().then(
      () => this.finish(error, failed),
      (actionError: unknown) => this.finish(actionError, true),
    );
  }

  private finish(error: unknown, failed: boolean): void {
    if (this.onAbort) this.signal!.removeEventListener('abort', this.onAbort);
    this.writer.releaseLock();
    (this.source.reader as WatchedReaderInstance).releaseLock();
    if (failed) this.reject(error);
    else this.resolve();
  }
}

type Consume = (this: Response) => Promise<unknown>;

/*
 * The Response's own readers of its body (text, json...). undici's refuse at once, without reading,
 * when the fetch was aborted: a body read that way would never tell its end. So these are overridden
 * too, to see an abort they report.
 */
const watchedResponseProto = Object.create(
  Response.prototype,
  Object.fromEntries(
    ['arrayBuffer', 'blob', 'bytes', 'formData', 'json', 'text']
      .filter((name) => typeof (Response.prototype as unknown as Record<string, unknown>)[name] === 'function')
      .map((name) => {
        const real = (Response.prototype as unknown as Record<string, Consume>)[name]!;
        const consume: Consume = function (this: Response) {
          const body = this.body === null ? undefined : bodies.get(this.body);
          const consumed = real.call(this);
          return body === undefined ? consumed : consumed.then(undefined, (error: unknown) => body.refused(error));
        };
        return [name, { value: consume }];
      }),
  ),
) as object;

/**
 * Observes the body of `response` in place: its reads pass `tap`, and the observer is told how it
 * ended. Returns the same response; or, when another observer already watches it (one wrapped fetch
 * around another), a copy reading through that observer's reader, watched in turn.
 */
export function watchResponse(
  observer: TapHost,
  request: WireRequest,
  stream: StreamRecord,
  observed: Response,
  tap: BodyTap,
): Response {
  // Watched already: its prototype says so (its entry in `bodies` may be gone, the body over).
  const response = Object.getPrototypeOf(observed.body) === watchedStreamProto ? copyOf(observed) : observed;
  const body = response.body!;
  bodies.set(body, new WatchedBody(body, observer, request, stream, tap));
  Object.setPrototypeOf(body, watchedStreamProto);
  Object.setPrototypeOf(response, watchedResponseProto);
  return response;
}

/** A Response over a plain stream pulling from the watched reader of `response`'s body. */
function copyOf(response: Response): Response {
  const copy = new Response(plainOf(response.body!), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  Object.defineProperty(copy, 'url', { value: response.url });
  Object.defineProperty(copy, 'redirected', { value: response.redirected });
  return copy;
}

// Shapes held (shapes.ts): the per-body and per-reader objects, and a response and reader with the overriding prototypes.
{
  const response = holdShape(
    watchResponse(undefined as never, undefined as never, undefined as never, new Response('held'), undefined as never),
  );
  holdShape(bodies.get(response.body!)!);
  holdShape(response.body!.getReader());
}
