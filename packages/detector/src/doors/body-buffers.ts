/**
 * Reusable buffers for request bodies of a declared length. A body is copied chunk by chunk into one
 * buffer taken here and given back once it is decoded, instead of a list of chunks joined into a new
 * allocation per request: at OTLP batch sizes (100 KB and more) every such allocation is fresh pages
 * from the kernel (page faults, then unmapping) and external memory that V8 must collect, which cost
 * the receiver more than copying the bytes.
 *
 * Bounded: at most `maxBuffers` are kept while idle, each of at most `maxBytes`; a larger body gets a
 * buffer of its own that is never kept. What a request holds at once stays bounded by the in-flight budget.
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
    // A kept buffer too small is dropped: the new one, sized for this body, replaces it.
    if (size > this.maxBytes) return Buffer.allocUnsafeSlow(size);
    return Buffer.allocUnsafeSlow(Math.min(this.maxBytes, roundUp(size)));
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

/** Sizes rounded up to 64 KiB, so that bodies of a similar size share buffers. */
function roundUp(size: number): number {
  return Math.ceil(size / 65536) * 65536;
}
