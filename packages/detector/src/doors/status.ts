import type { ServerResponse } from 'node:http';
import { varint } from '../otlp/response.js';

/** google.rpc.Status codes used in OTLP error bodies. */
export const RpcCode = {
  INVALID_ARGUMENT: 3,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  UNAUTHENTICATED: 16,
} as const;

/** Sends an OTLP/HTTP error: a google.rpc.Status as protobuf or JSON, matching the request's encoding. */
export function sendStatus(res: ServerResponse, http: number, code: number, message: string, protobuf: boolean): void {
  const body = protobuf ? encodeStatus(code, message) : Buffer.from(JSON.stringify({ code, message }));
  res.writeHead(http, {
    'content-type': protobuf ? 'application/x-protobuf' : 'application/json',
    'content-length': body.length,
  });
  res.end(body);
}

/** google.rpc.Status { int32 code = 1; string message = 2; } */
function encodeStatus(code: number, message: string): Buffer {
  const msg = Buffer.from(message, 'utf8');
  return Buffer.concat([Buffer.from([0x08, code, 0x12]), varint(msg.length), msg]);
}
