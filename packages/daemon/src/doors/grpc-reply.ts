import type { OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';

/** gRPC status codes (google.rpc.Code) the door answers with. */
export const GrpcCode = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAUTHENTICATED: 16,
} as const;

/** What the door answers with, as grpc-js did: protobuf messages, and the encodings it reads. */
const CONTENT_TYPE = 'application/grpc+proto';
export const ACCEPT_ENCODING = 'identity,deflate,gzip';
/** A message's prefix: its compressed flag (1 byte) and its length (4, big-endian). */
export const PREFIX_BYTES = 5;

/** The gRPC metadata the door reads and writes (PROTOCOL-HTTP2.md). */
export const GrpcHeader = {
  STATUS: 'grpc-status',
  MESSAGE: 'grpc-message',
  ENCODING: 'grpc-encoding',
  ACCEPT_ENCODING: 'grpc-accept-encoding',
  TIMEOUT: 'grpc-timeout',
  /** A google.rpc.Status with details (here RetryInfo), as OTLP exporters read it. */
  STATUS_DETAILS: 'grpc-status-details-bin',
} as const;

/** Bytes that go into grpc-message as they are: printable ASCII but '%' (PROTOCOL-HTTP2.md, Status-Message). */
const PLAIN = /^[\x20-\x24\x26-\x7e]*$/;

/** grpc-message is percent-encoded UTF-8: each byte outside 0x20–0x7E, and '%', as %XX. */
export function percentEncode(text: string): string {
  if (PLAIN.test(text)) return text;
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * Answers a call with a status and no message, as Trailers-Only: the status in the one HEADERS frame
 * that ends the stream. Every refusal is sent so, since the door sends nothing before its answer.
 * `trailers`: more of them (grpc-status-details-bin, grpc-accept-encoding).
 */
export function sendStatus(
  stream: ServerHttp2Stream,
  code: number,
  details: string,
  trailers?: OutgoingHttpHeaders,
): void {
  if (stream.headersSent || stream.closed || stream.destroyed) return;
  stream.respond(
    {
      ':status': 200,
      'content-type': CONTENT_TYPE,
      [GrpcHeader.STATUS]: String(code),
      [GrpcHeader.MESSAGE]: percentEncode(details),
      ...trailers,
    },
    { endStream: true },
  );
}

/** Answers a call with its response message and OK, in trailers after it. */
export function sendMessage(stream: ServerHttp2Stream, message: Buffer): void {
  if (stream.headersSent || stream.closed || stream.destroyed) return;
  const frame = Buffer.allocUnsafe(PREFIX_BYTES + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, PREFIX_BYTES);
  stream.respond(
    {
      ':status': 200,
      'content-type': CONTENT_TYPE,
      [GrpcHeader.ACCEPT_ENCODING]: ACCEPT_ENCODING,
      [GrpcHeader.ENCODING]: 'identity',
    },
    { waitForTrailers: true },
  );
  stream.once('wantTrailers', () => stream.sendTrailers({ [GrpcHeader.STATUS]: '0', [GrpcHeader.MESSAGE]: 'OK' }));
  stream.end(frame);
}
