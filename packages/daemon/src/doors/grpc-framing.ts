import { GrpcCode, PREFIX_BYTES } from './grpc-reply.js';

/**
 * The request of a unary gRPC call: one length-prefixed message (gRPC over HTTP/2, "Length-Prefixed-Message":
 * a compressed flag byte, a 4-byte big-endian length, the message), spread over any number of DATA frames.
 * The length is checked against the bound before a byte of the message is kept, and the message is copied
 * into one buffer of exactly its size (not zero-filled: every byte of it is written before it is read).
 */

/** Why a call's request cannot be read; `code` is the gRPC status it is answered with. */
export interface FramingError {
  code: number;
  details: string;
}

const { INTERNAL, RESOURCE_EXHAUSTED, UNIMPLEMENTED } = GrpcCode;

export class UnaryMessageReader {
  /** The prefix as it arrives (it may be split over frames); then the message itself. */
  private readonly prefix = Buffer.allocUnsafe(PREFIX_BYTES);
  private prefixFilled = 0;
  private message: Buffer | undefined;
  private filled = 0;
  /** The message's compressed flag (1: compressed with the call's grpc-encoding). */
  compressed = false;

  /** `max`: the largest message accepted (--max-decompressed), before any byte of it is kept. */
  constructor(private readonly max: number) {}

  /** Takes the next DATA chunk: undefined to go on, or why the call is refused. */
  push(chunk: Buffer): FramingError | undefined {
    let at = 0;
    if (this.message === undefined) {
      while (this.prefixFilled < PREFIX_BYTES && at < chunk.length) this.prefix[this.prefixFilled++] = chunk[at++]!;
      if (this.prefixFilled < PREFIX_BYTES) return undefined;
      const flag = this.prefix[0]!;
      if (flag > 1) return { code: INTERNAL, details: `compressed flag ${flag} is neither 0 nor 1` };
      this.compressed = flag === 1;
      const size = this.prefix.readUInt32BE(1);
      if (size > this.max)
        return { code: RESOURCE_EXHAUSTED, details: `Received message larger than max (${size} vs ${this.max})` };
      // A whole message in this chunk is kept as a view of it, without a copy.
      if (chunk.length - at < size) this.message = Buffer.allocUnsafe(size);
      else {
        this.message = chunk.subarray(at, at + size);
        this.filled = size;
        at += size;
      }
    }
    const left = chunk.length - at;
    if (left === 0) return undefined;
    const room = this.message.length - this.filled;
    if (left > room) return secondMessage();
    chunk.copy(this.message, this.filled, at);
    this.filled += left;
    return undefined;
  }

  /** At the end of the request stream: the message, or why there is none. */
  finish(): Buffer | FramingError {
    if (this.message === undefined) {
      if (this.prefixFilled === 0)
        return { code: UNIMPLEMENTED, details: 'Received no request message for unary method Export' };
      return {
        code: INTERNAL,
        details: `the request ended inside a message prefix (${this.prefixFilled} of ${PREFIX_BYTES} bytes)`,
      };
    }
    if (this.filled < this.message.length)
      return {
        code: INTERNAL,
        details: `the request ended inside its message (${this.filled} of ${this.message.length} bytes)`,
      };
    return this.message;
  }
}

function secondMessage(): FramingError {
  return { code: UNIMPLEMENTED, details: 'Received a second request message for unary method Export' };
}
