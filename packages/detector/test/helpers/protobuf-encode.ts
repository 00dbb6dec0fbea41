import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';
import type { AttributeValue, SpanRecord } from '../../src/index.js';

/*
 * A minimal writer of opentelemetry.proto ExportTraceServiceRequest, for tests that need exact bytes
 * (valid messages to mutate, and hostile ones). Field numbers as in src/otlp/protobuf.ts.
 */

export function varintBytes(n: bigint): number[] {
  let v = BigInt.asUintN(64, n);
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

function field(no: number, wire: number, body: number[]): number[] {
  const tag = varintBytes(BigInt((no << 3) | wire));
  return wire === 2 ? [...tag, ...varintBytes(BigInt(body.length)), ...body] : [...tag, ...body];
}

function fixed64(n: bigint): number[] {
  const out: number[] = [];
  for (let i = 0n; i < 8n; i++) out.push(Number((n >> (8n * i)) & 0xffn));
  return out;
}

const utf8 = (s: string): number[] => [...Buffer.from(s, 'utf8')];
const hex = (s: string): number[] => [...Buffer.from(s, 'hex')];

function anyValue(v: AttributeValue): number[] {
  if (typeof v === 'string') return field(1, 2, utf8(v));
  if (typeof v === 'boolean') return field(2, 0, [v ? 1 : 0]);
  if (Number.isInteger(v)) return field(3, 0, varintBytes(BigInt(v)));
  const f = new Float64Array([v]);
  return field(4, 1, [...new Uint8Array(f.buffer)]);
}

function keyValue(key: string, v: AttributeValue): number[] {
  return [...field(1, 2, utf8(key)), ...field(2, 2, anyValue(v))];
}

function encodeSpan(s: SpanRecord): number[] {
  const out = [
    ...field(1, 2, hex(s.traceId)),
    ...field(2, 2, hex(s.spanId)),
    ...field(5, 2, utf8(s.name)),
    ...field(6, 0, [s.kind]),
  ];
  out.push(
    ...field(7, 1, fixed64(BigInt(Math.round(s.startTimeUnixMs * 1e6)))),
    ...field(8, 1, fixed64(BigInt(Math.round(s.endTimeUnixMs * 1e6)))),
  );
  for (const [k, v] of Object.entries(s.attributes)) if (v !== undefined) out.push(...field(9, 2, keyValue(k, v)));
  return out;
}

/** One ResourceSpans per service, one ScopeSpans each. */
export function encodeRequest(spans: SpanRecord[]): Uint8Array {
  const byService = new Map<string, SpanRecord[]>();
  for (const s of spans) byService.set(s.service, [...(byService.get(s.service) ?? []), s]);
  const out: number[] = [];
  for (const [service, list] of byService) {
    const resource = field(1, 2, field(1, 2, keyValue(ATTR_SERVICE_NAME, service)));
    const scope = field(
      2,
      2,
      list.flatMap((s) => field(2, 2, encodeSpan(s))),
    );
    out.push(...field(1, 2, [...resource, ...scope]));
  }
  return Uint8Array.from(out);
}
