import type { ServerResponse } from 'node:http';
import { protobufVarint as varint } from '@resumewatch/detector';

/** google.rpc.Status codes used in OTLP error bodies. */
export const RpcCode = {
  INVALID_ARGUMENT: 3,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNIMPLEMENTED: 12,
  UNAUTHENTICATED: 16,
} as const;

/**
 * Sends an OTLP/HTTP error: a google.rpc.Status as protobuf or JSON, matching the request's encoding.
 * `end` writes the body and ends the response (`endAfterRefusedBody` for a request whose body is unread).
 */
export function sendStatus(
  res: ServerResponse,
  http: number,
  code: number,
  message: string,
  protobuf: boolean,
  retryAfterMs?: number,
  end: (body: Buffer) => void = (body) => res.end(body),
): void {
  if (res.headersSent || res.destroyed) return;
  const retry = retryAfterMs === undefined ? undefined : retryInfo(retryAfterMs);
  const body = protobuf
    ? encodeStatus(code, message, retry)
    : Buffer.from(
        JSON.stringify(
          retryAfterMs === undefined
            ? { code, message }
            : {
                code,
                message,
                details: [{ '@type': RETRY_INFO_TYPE, retryDelay: `${(retryAfterMs / 1000).toFixed(3)}s` }],
              },
        ),
      );
  const headers: Record<string, string | number> = {
    'content-type': protobuf ? 'application/x-protobuf' : 'application/json',
    'content-length': body.length,
  };
  // OTLP/HTTP exporters honour Retry-After (whole seconds) on 429 and 503.
  if (retryAfterMs !== undefined) headers['retry-after'] = Math.max(1, Math.ceil(retryAfterMs / 1000));
  res.writeHead(http, headers);
  end(body);
}

const RETRY_INFO_TYPE = 'type.googleapis.com/google.rpc.RetryInfo';

/** google.rpc.RetryInfo { google.protobuf.Duration retry_delay = 1 { int64 seconds = 1; int32 nanos = 2; } } */
export function retryInfo(ms: number): Buffer {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1e6);
  const duration = Buffer.concat([
    Buffer.from([0x08]),
    varint(seconds),
    ...(nanos > 0 ? [Buffer.from([0x10]), varint(nanos)] : []),
  ]);
  return Buffer.concat([Buffer.from([0x0a]), varint(duration.length), duration]);
}

/** google.protobuf.Any { string type_url = 1; bytes value = 2; } */
function any(typeUrl: string, value: Buffer): Buffer {
  const url = Buffer.from(typeUrl);
  return Buffer.concat([
    Buffer.from([0x0a]),
    varint(url.length),
    url,
    Buffer.from([0x12]),
    varint(value.length),
    value,
  ]);
}

/** google.rpc.Status { int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3; } */
export function encodeStatus(code: number, message: string, retry?: Buffer): Buffer {
  const msg = Buffer.from(message, 'utf8');
  const parts = [Buffer.from([0x08, code, 0x12]), varint(msg.length), msg];
  if (retry) {
    const detail = any(RETRY_INFO_TYPE, retry);
    parts.push(Buffer.from([0x1a]), varint(detail.length), detail);
  }
  return Buffer.concat(parts);
}
