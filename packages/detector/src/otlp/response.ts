import type { DecodeResult } from './errors.js';

/** The partial-success message for a decoded request: how many spans were rejected, and the first reason. */
export function rejectionMessage(result: DecodeResult): string {
  return result.invalid > 0 ? `${result.invalid} span(s) rejected; first: ${result.firstError ?? 'malformed'}` : '';
}

/** ExportTraceServiceResponse { ExportTracePartialSuccess partial_success = 1 { int64 rejected_spans = 1; string error_message = 2; } } */
export function encodeProtobufResponse(rejected: number, message: string): Buffer {
  if (rejected <= 0) return Buffer.alloc(0);
  const msg = Buffer.from(message, 'utf8');
  const inner = Buffer.concat([Buffer.from([0x08]), varint(rejected), Buffer.from([0x12]), varint(msg.length), msg]);
  return Buffer.concat([Buffer.from([0x0a]), varint(inner.length), inner]);
}

export function jsonResponse(rejected: number, message: string): string {
  if (rejected <= 0) return '{}';
  return JSON.stringify({ partialSuccess: { rejectedSpans: String(rejected), errorMessage: message } });
}

/** A protobuf base-128 varint. */
export function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return Buffer.from(out);
}
