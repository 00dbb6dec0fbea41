import { describe, expect, it } from 'vitest';
import { UnaryMessageReader } from '../src/doors/grpc-framing.js';
import { GrpcCode, percentEncode } from '../src/doors/grpc-reply.js';

/** A length-prefixed gRPC message: flag, 4-byte big-endian length, the bytes. */
function framed(message: Buffer, flag = 0, length = message.length): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = flag;
  prefix.writeUInt32BE(length, 1);
  return Buffer.concat([prefix, message]);
}

/** Feeds `chunks` in order; the first refusal, or the result of finish(). */
function read(max: number, chunks: Buffer[]) {
  const reader = new UnaryMessageReader(max);
  for (const c of chunks) {
    const failure = reader.push(c);
    if (failure) return { failure, reader };
  }
  const done = reader.finish();
  return Buffer.isBuffer(done) ? { message: done, reader } : { failure: done, reader };
}

describe('UnaryMessageReader: one length-prefixed message over DATA frames', () => {
  const message = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));

  it('reads a message whole, split at every byte, and split over uneven frames', () => {
    const whole = framed(message);
    expect(read(4096, [whole]).message).toEqual(message);
    const bytes = [...whole].map((b) => Buffer.from([b]));
    expect(read(4096, bytes).message).toEqual(message);
    const uneven = [whole.subarray(0, 3), whole.subarray(3, 7), whole.subarray(7, 600), whole.subarray(600)];
    expect(read(4096, uneven).message).toEqual(message);
  });

  it('reads an empty message (an empty ExportTraceServiceRequest), and the compressed flag', () => {
    expect(read(10, [framed(Buffer.alloc(0))]).message).toEqual(Buffer.alloc(0));
    const { message: m, reader } = read(4096, [framed(message, 1)]);
    expect(m).toEqual(message);
    expect(reader.compressed).toBe(true);
  });

  it('refuses a length prefix larger than the bound from the prefix alone, before any byte of the message', () => {
    const prefix = framed(Buffer.alloc(0), 0, 0xffff_ffff);
    const { failure } = read(256 * 1024, [prefix]);
    expect(failure).toEqual({
      code: GrpcCode.RESOURCE_EXHAUSTED,
      details: `Received message larger than max (${0xffff_ffff} vs ${256 * 1024})`,
    });
    // One byte over the bound is refused; the bound itself is read.
    expect(read(1000, [framed(message, 0, 1001)]).failure?.code).toBe(GrpcCode.RESOURCE_EXHAUSTED);
    expect(read(1000, [framed(message)]).message).toEqual(message);
  });

  it('refuses a request that ends inside the prefix or inside the message (INTERNAL), and one with no message (UNIMPLEMENTED)', () => {
    const whole = framed(message);
    expect(read(4096, [whole.subarray(0, 3)]).failure).toEqual({
      code: GrpcCode.INTERNAL,
      details: 'the request ended inside a message prefix (3 of 5 bytes)',
    });
    expect(read(4096, [whole.subarray(0, 500)]).failure).toEqual({
      code: GrpcCode.INTERNAL,
      details: 'the request ended inside its message (495 of 1000 bytes)',
    });
    expect(read(4096, []).failure?.code).toBe(GrpcCode.UNIMPLEMENTED);
    expect(read(4096, [Buffer.alloc(0)]).failure?.code).toBe(GrpcCode.UNIMPLEMENTED);
  });

  it('refuses a second message in a unary call (UNIMPLEMENTED), in the same frame or a later one', () => {
    const two = Buffer.concat([framed(message), framed(message)]);
    expect(read(4096, [two]).failure).toEqual({
      code: GrpcCode.UNIMPLEMENTED,
      details: 'Received a second request message for unary method Export',
    });
    expect(read(4096, [two.subarray(0, 700), two.subarray(700)]).failure?.code).toBe(GrpcCode.UNIMPLEMENTED);
    expect(read(4096, [framed(message), Buffer.from([0])]).failure?.code).toBe(GrpcCode.UNIMPLEMENTED);
  });

  it('refuses a compressed flag that is neither 0 nor 1', () => {
    expect(read(4096, [framed(message, 2)]).failure).toEqual({
      code: GrpcCode.INTERNAL,
      details: 'compressed flag 2 is neither 0 nor 1',
    });
  });

  it('copies a message split over frames into a buffer of its own: the frames can be reused after', () => {
    const whole = framed(message);
    const first = Buffer.from(whole.subarray(0, 400));
    const second = Buffer.from(whole.subarray(400));
    const reader = new UnaryMessageReader(4096);
    reader.push(first);
    reader.push(second);
    first.fill(0xee);
    second.fill(0xee);
    expect(reader.finish()).toEqual(message);
  });
});

describe('percentEncode: grpc-message', () => {
  it('keeps printable ASCII but %, and percent-encodes the UTF-8 bytes of everything else', () => {
    expect(percentEncode('Host "attacker.example" is not allowed (--allowed-hosts)')).toBe(
      'Host "attacker.example" is not allowed (--allowed-hosts)',
    );
    expect(percentEncode('100% é\n')).toBe('100%25 %C3%A9%0A');
    expect(decodeURIComponent(percentEncode('a%b é ✓ \t'))).toBe('a%b é ✓ \t');
  });
});
