import { gunzip, inflate } from 'node:zlib';
import type { FramingError } from './grpc-framing.js';
import { ACCEPT_ENCODING, GrpcCode, GrpcHeader } from './grpc-reply.js';

/** A refusal, with the trailers that go with it. */
export interface DecompressError extends FramingError {
  trailers?: Record<string, string>;
}

/**
 * A message whose compressed flag is set, decompressed with the call's grpc-encoding (gzip, as OTLP
 * exporters send it with compression on; deflate, which grpc-js read too), off the main thread, stopping
 * once it passes `max` bytes (--max-decompressed): a gzip bomb costs at most `max` and a chunk.
 * A compressed message without an encoding, and one in an encoding not read here, are refused
 * (INTERNAL and UNIMPLEMENTED, gRPC's compression.md).
 */
export function decompress(
  encoding: string | undefined,
  message: Buffer,
  max: number,
  done: (failure: DecompressError | undefined, plain?: Buffer) => void,
): void {
  if (encoding === undefined || encoding === 'identity') {
    done({ code: GrpcCode.INTERNAL, details: 'compressed flag set on a message without grpc-encoding' });
    return;
  }
  const method = encoding === 'gzip' ? gunzip : encoding === 'deflate' ? inflate : undefined;
  if (method === undefined) {
    done({
      code: GrpcCode.UNIMPLEMENTED,
      details: `Received message compressed with unsupported encoding "${encoding}"`,
      trailers: { [GrpcHeader.ACCEPT_ENCODING]: ACCEPT_ENCODING },
    });
    return;
  }
  method(message, { maxOutputLength: Math.max(1, max) }, (error, plain) => {
    if (!error) done(undefined, plain);
    else if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      done({
        code: GrpcCode.RESOURCE_EXHAUSTED,
        details: `Received message that decompresses to a size larger than ${max}`,
      });
    else done({ code: GrpcCode.INTERNAL, details: 'Failed to decompress message' });
  });
}
