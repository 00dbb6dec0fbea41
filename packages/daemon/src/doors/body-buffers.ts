/**
 * Reusable buffers for request bodies of a declared length. A body is copied chunk by chunk into one
 * buffer taken here and given back once it is decoded, instead of a list of chunks joined into a new
 * allocation per request: at OTLP batch sizes (hundreds of KB) such an allocation is mostly fresh pages
 * from the kernel (page faults, then unmapping) and external memory that V8 must collect; in the serve
 * benchmark's profile that cost more than copying the bytes.
 *
 * Bounded: at most `maxBuffers` are kept while idle, each of at most `maxBytes`; a larger body gets a
 * buffer of its own that is never kept. Beyond what the in-flight budget counts, requests hold at most the
 * kept buffers' bytes (a kept buffer may be longer than the body it is given to).
 */
export class BodyBuffers {
  private readonly free: Buffer[] = [];

  constructor(
    readonly maxBuffers: number,
    readonly maxBytes: number,
  ) {}

  /** A buffer of at least `size` bytes (its content is whatever it held before). */
  take(size: number): Buffer {
    const kept = this.free.pop();
    if (kept !== undefined && kept.length >= size) return kept;
    // A kept buffer too small is dropped: the new one, sized for this body, replaces it once given back, so
    // the kept buffers grow to the sizes of the bodies received. Sized exactly: beyond what the in-flight
    // budget counts, only the kept buffers can hold more bytes than their body.
    return Buffer.allocUnsafeSlow(size);
  }

  /** Gives a buffer back; the caller must hold no view of it any more. */
  give(buf: Buffer): void {
    if (buf.length <= this.maxBytes && this.free.length < this.maxBuffers) this.free.push(buf);
  }

  /** Buffers kept now (for tests). */
  get kept(): number {
    return this.free.length;
  }
}
