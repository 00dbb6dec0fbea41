import fc from 'fast-check';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_SESSION_ID,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { OtlpDecodeError, decodeProtobufRequest, type SpanRecord } from '../src/index.js';
import { byteMutation, mutated } from './helpers/byte-mutations.js';
import { encodeRequest, varintBytes } from './helpers/protobuf-encode.js';

function decode(bytes: Uint8Array | number[]): SpanRecord[] {
  const out: SpanRecord[] = [];
  decodeProtobufRequest(bytes instanceof Uint8Array ? bytes : Uint8Array.from(bytes), (s) =>
    out.push({ ...s, attributes: { ...s.attributes } }),
  );
  return out;
}

function errorOf(bytes: number[]): string {
  try {
    decode(bytes);
  } catch (e) {
    expect(e).toBeInstanceOf(OtlpDecodeError);
    return (e as Error).message;
  }
  throw new Error('decoded without error');
}

/** A length-delimited field with an arbitrary (possibly hostile) length varint. */
const ld = (no: number, len: bigint, body: number[] = []): number[] => [(no << 3) | 2, ...varintBytes(len), ...body];
const NEG_ONE_BILLION = -11n; // any negative int64: a 10-byte varint

describe('protobuf reader: hostile lengths and tags', () => {
  it('rejects the 11-byte body with a negative length (it used to loop forever), naming the offset', () => {
    const body = [0x12, 0xf5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    expect(errorOf(body)).toBe('malformed protobuf: negative length -11 at byte 1');
  });

  it('rejects a negative length at every nesting level: request, ResourceSpans, ScopeSpans, Span, KeyValue, AnyValue', () => {
    const wrap = (path: number[], inner: number[]): number[] =>
      path.reduceRight((acc, no) => ld(no, BigInt(acc.length), acc), inner);
    const cases: [number[], number][] = [
      [[], 0], // ExportTraceServiceRequest.resource_spans
      [[1], 2], // ResourceSpans.scope_spans
      [[1, 2], 4], // ScopeSpans.spans
      [[1, 2, 2], 6], // Span.attributes
      [[1, 2, 2, 9], 8], // KeyValue.value
      [[1, 2, 2, 9, 2], 10], // AnyValue.string_value
    ];
    const fieldAt: Record<number, number> = { 0: 1, 2: 2, 4: 2, 6: 9, 8: 2, 10: 1 };
    for (const [path, depth] of cases) {
      const body = wrap(path, ld(fieldAt[depth]!, NEG_ONE_BILLION));
      expect(errorOf(body)).toBe(`malformed protobuf: negative length -11 at byte ${depth + 1}`);
    }
  });

  it('rejects field number 0, an overlong varint and a length past the end', () => {
    expect(errorOf([0x02, 0x00])).toBe('malformed protobuf: field number 0 at byte 0');
    expect(errorOf([0x0a, 0x02, 0x00, 0x00])).toBe('malformed protobuf: field number 0 at byte 2');
    expect(errorOf([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])).toBe(
      'malformed protobuf: varint longer than 10 bytes at byte 1',
    );
    expect(errorOf([0x0a, 0x05, 0x00])).toBe(
      'malformed protobuf: length 5 at byte 1 runs past the end of its message (byte 3)',
    );
    expect(errorOf([0x0a, 0x80, 0x80, 0x80, 0x80, 0x10])).toBe(
      'malformed protobuf: length 4294967296 at byte 1 runs past the end of its message (byte 6)',
    );
    expect(errorOf([0x0a, 0x03, 0x12, 0x05, 0x00])).toBe(
      'malformed protobuf: length 5 at byte 3 runs past the end of its message (byte 5)',
    );
    expect(errorOf([0x80, 0x80, 0x80, 0x80, 0x80, 0x01])).toBe(
      'malformed protobuf: tag 34359738368 out of range at byte 0',
    );
  });
});

const hex = (bytes: number) =>
  fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => Buffer.from(b).toString('hex'));
const spanArb: fc.Arbitrary<SpanRecord> = fc.record({
  traceId: hex(16),
  spanId: hex(8),
  name: fc.constantFrom(SPAN_REQUEST_TERMINAL, SPAN_STREAM_RESUME, 'other'),
  kind: fc.constantFrom(0, 1, 2, 3, 4, 5) as fc.Arbitrary<SpanRecord['kind']>,
  startTimeUnixMs: fc.integer({ min: 0, max: 2_000_000_000_000 }),
  endTimeUnixMs: fc.integer({ min: 0, max: 2_000_000_000_000 }),
  attributes: fc.record({
    [ATTR_MCP_SESSION_ID]: fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => s.length > 0),
    [ATTR_JSONRPC_REQUEST_ID]: fc.oneof(
      fc.string({ minLength: 1, maxLength: 12 }),
      fc.integer({ min: 0, max: 1_000_000 }),
    ),
    flag: fc.boolean(),
    ratio: fc.double({ noNaN: true, min: -1e9, max: 1e9 }).filter((d) => !Object.is(d, -0)),
  }),
  service: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
});
const requestArb = fc.array(spanArb, { maxLength: 6 }).map((spans) => ({ spans, bytes: encodeRequest(spans) }));

/*
 * Out-of-bounds reads of a Uint8Array return undefined silently, so the property tests decode a Proxy
 * that throws on any index read at or past the end, and counts the reads: the decoder's work is linear,
 * each byte read about once (at most 1.06 times over these runs), so a body read more than twice over
 * is a loop (the negative length used to loop forever) and is stopped there. The string readers (native
 * Buffer slices, which need a real typed array) are replaced by index-by-index ones that go through the
 * same Proxy.
 */
vi.mock('../src/otlp/strings.js', () => {
  const bytes = (buf: Uint8Array, start: number, end: number): number[] => {
    const out: number[] = [];
    for (let i = start; i < end; i++) out.push(buf[i]!);
    return out;
  };
  return {
    readHex: (buf: Uint8Array, start: number, end: number) => Buffer.from(bytes(buf, start, end)).toString('hex'),
    readString: (buf: Uint8Array, start: number, end: number) => Buffer.from(bytes(buf, start, end)).toString('utf8'),
    readUtf8: (buf: Uint8Array, start: number, end: number) => Buffer.from(bytes(buf, start, end)).toString('utf8'),
  };
});

class OutOfBoundsRead extends Error {}
class ReadPastBudget extends Error {}

/** Byte reads allowed for a body of `length` bytes: each byte twice, and a few more for an empty body. */
const readBudget = (length: number): number => 2 * length + 16;

function guarded(bytes: Uint8Array): Uint8Array {
  let reads = 0;
  const budget = readBudget(bytes.length);
  return new Proxy(bytes, {
    get(target, key) {
      if (typeof key === 'string' && /^\d+$/.test(key)) {
        if (Number(key) >= target.length) throw new OutOfBoundsRead(`read of byte ${key} of ${target.length}`);
        if (++reads > budget) throw new ReadPastBudget(`${reads} byte reads of a ${target.length}-byte body`);
      }
      return Reflect.get(target, key);
    },
  });
}

it('the guard catches an out-of-bounds read, and a body read more than twice over', () => {
  expect(() => guarded(Uint8Array.from([1]))[1]).toThrow(OutOfBoundsRead);
  expect(guarded(Uint8Array.from([7]))[0]).toBe(7);
  const looped = guarded(Uint8Array.from([7]));
  let sum = 0;
  expect(() => {
    for (;;) sum += looped[0]!;
  }).toThrow(ReadPastBudget);
  expect(sum).toBe(7 * readBudget(1));
});

/**
 * The decoder's contract on any input: it returns, or throws an OtlpDecodeError naming a byte within the
 * body, and reads nothing past it.
 */
function returnsOrThrowsClearly(bytes: Uint8Array): void {
  const view = guarded(bytes);
  let spans = 0;
  try {
    const result = decodeProtobufRequest(view, (s) => {
      spans++;
      expect(s.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(s.spanId).toMatch(/^[0-9a-f]{16}$/);
    });
    expect(result.spans).toBe(spans);
  } catch (e) {
    if (!(e instanceof OtlpDecodeError)) throw e;
    const at = /at byte (\d+)/.exec(e.message);
    expect(at, e.message).not.toBeNull();
    expect(Number(at![1])).toBeLessThanOrEqual(bytes.length);
  }
}

describe('protobuf reader: property-based (fast-check)', () => {
  it('decodes generated valid messages exactly', () => {
    fc.assert(
      fc.property(requestArb, ({ spans, bytes }) => {
        // Times cross the wire as nanoseconds: compare at the microsecond.
        const got = decode(bytes).map((s) => ({
          ...s,
          startTimeUnixMs: Math.round(s.startTimeUnixMs * 1000) / 1000,
          endTimeUnixMs: Math.round(s.endTimeUnixMs * 1000) / 1000,
        }));
        const want = [...new Map(spans.map((s) => [s.service, 0])).keys()].flatMap((svc) =>
          spans.filter((s) => s.service === svc),
        );
        expect(got).toEqual(want.map((s) => ({ ...s, parentSpanId: undefined })));
      }),
      { numRuns: 300, seed: 10 },
    );
  });

  it('returns or throws a clear error on every truncation of a valid message', () => {
    fc.assert(
      fc.property(requestArb, fc.nat(), ({ bytes }, cut) => {
        returnsOrThrowsClearly(bytes.subarray(0, bytes.length === 0 ? 0 : cut % bytes.length));
      }),
      { numRuns: 500, seed: 11 },
    );
  });

  it('returns or throws a clear error on mutated messages (byte flips, insertions, hostile varints)', () => {
    fc.assert(
      fc.property(requestArb, fc.array(byteMutation, { minLength: 1, maxLength: 4 }), ({ bytes }, mutations) => {
        returnsOrThrowsClearly(mutated(bytes, mutations));
      }),
      { numRuns: 2000, seed: 12 },
    );
  });

  it('returns or throws a clear error on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => returnsOrThrowsClearly(bytes)),
      { numRuns: 2000, seed: 13 },
    );
  });
});
