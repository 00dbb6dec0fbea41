import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';
import { UNKNOWN_SERVICE } from '../core/services.js';
import type { AttributeValue, SpanRecord, SpanSink } from '../core/types.js';
import {
  CONTRACT_NAMES,
  DETECTOR_KEYS,
  isContractSpan,
  isRequestSpanKey,
  mattersOffContract,
} from './detector-keys.js';
import { OtlpDecodeError, type DecodeResult } from './errors.js';
import { spanKind } from './kind.js';
import { readHex, readString, readUtf8 } from './strings.js';

/*
 * A hand-rolled decoder for opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest that reads
 * only what the detector needs and skips everything else by wire type:
 *   ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
 *   ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
 *   Resource { repeated KeyValue attributes = 1; }
 *   ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
 *   Span { bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5;
 *          SpanKind kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
 *          repeated KeyValue attributes = 9; }
 *   KeyValue { string key = 1; AnyValue value = 2; }
 *   AnyValue { oneof { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; ... } }
 */

const TWO_32 = 4294967296;
const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);

/*
 * Every read is checked against the end of the message it belongs to, and every length against the
 * bytes that remain, so a hostile body can neither move the position backwards (a negative length
 * used to loop forever) nor read past its message. Errors name the byte offset where the bad value starts.
 */
class Reader {
  pos = 0;
  /** detectorAttributesOnly. */
  slim = false;
  /** ProtobufDecodeOptions.onSkipped. */
  onSkipped: (() => void) | undefined = undefined;
  /** slim: the span's detector attributes read so far, as (key index, value start, value end), decoded at its end. */
  attrs = new Int32Array(16 * 3);
  attrCount = 0;
  /** Where the span id of the span read last starts (its 8 bytes): the sink is handed them as two words. */
  spanAt = 0;
  /** The words handed to the sink with each record (SpanSink), filled before each call. */
  readonly spanWords = new Uint32Array(2);
  /** Where the last trace id read starts, and its hex: the spans of one trace usually come together. */
  private lastTraceAt = -1;
  private lastTrace = '';
  constructor(readonly buf: Uint8Array) {}

  /** The 16-byte trace id at `at` as hex; the previous span's string again when the bytes are the same. */
  traceHex(at: number): string {
    const buf = this.buf;
    const last = this.lastTraceAt;
    if (last >= 0) {
      let i = 15;
      while (i >= 0 && buf[at + i] === buf[last + i]) i--;
      if (i < 0) return this.lastTrace;
    }
    this.lastTraceAt = at;
    return (this.lastTrace = readHex(buf, at, at + 16));
  }

  varint(end: number): number {
    const buf = this.buf;
    const at = this.pos;
    let pos = at;
    let lo = 0;
    let shift = 0;
    let b: number;
    do {
      if (pos >= end) throw new OtlpDecodeError(`malformed protobuf: truncated varint at byte ${at}`);
      b = buf[pos++]!;
      if (shift < 28) lo |= (b & 0x7f) << shift;
      else if (shift === 28) {
        lo = (lo >>> 0) + (b & 0x0f) * 0x10000000;
        let hi = (b & 0x70) >>> 4;
        let hs = 3;
        while (b & 0x80) {
          // A varint is at most 10 bytes: the fifth plus five more.
          if (hs > 31) throw new OtlpDecodeError(`malformed protobuf: varint longer than 10 bytes at byte ${at}`);
          if (pos >= end) throw new OtlpDecodeError(`malformed protobuf: truncated varint at byte ${at}`);
          b = buf[pos++]!;
          if (hs < 32) hi |= (b & 0x7f) << hs;
          hs += 7;
        }
        this.pos = pos;
        hi >>>= 0;
        // int64 two's complement: a set top bit is a negative number.
        return hi & 0x80000000 ? -((~hi >>> 0) * TWO_32 + (TWO_32 - lo)) : hi * TWO_32 + lo;
      }
      shift += 7;
    } while (b & 0x80);
    this.pos = pos;
    return lo >>> 0;
  }

  /** A field tag: a uint32 whose field number is at least 1. */
  tag(end: number): number {
    const at = this.pos;
    // One byte, as every tag of these messages is written: read here, the rest (and every error) below.
    if (at < end) {
      const b = this.buf[at]!;
      if (b >= 8 && b < 0x80) {
        this.pos = at + 1;
        return b;
      }
    }
    const t = this.varint(end);
    if (t < 8 || t > 0xffffffff) {
      throw new OtlpDecodeError(
        t >= 0 && t < 8
          ? `malformed protobuf: field number 0 at byte ${at}`
          : `malformed protobuf: tag ${t} out of range at byte ${at}`,
      );
    }
    return t;
  }

  /** Reads a length prefix and returns the end of the field, checked against `end`. */
  len(end: number): number {
    const at = this.pos;
    // A one-byte length that fits (most fields' within a span): read here, the rest (and every error) below.
    if (at < end) {
      const n = this.buf[at]!;
      if (n < 0x80 && n <= end - at - 1) {
        this.pos = at + 1;
        return at + 1 + n;
      }
    }
    const n = this.varint(end);
    if (n < 0) throw new OtlpDecodeError(`malformed protobuf: negative length ${n} at byte ${at}`);
    if (n > end - this.pos) {
      throw new OtlpDecodeError(
        `malformed protobuf: length ${n} at byte ${at} runs past the end of its message (byte ${end})`,
      );
    }
    return this.pos + n;
  }

  fixed64(end: number): number {
    const p = this.pos;
    if (p + 8 > end) throw new OtlpDecodeError(`malformed protobuf: truncated fixed64 at byte ${p}`);
    const b = this.buf;
    const lo = (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
    const hi = (b[p + 4]! | (b[p + 5]! << 8) | (b[p + 6]! << 16) | (b[p + 7]! << 24)) >>> 0;
    this.pos = p + 8;
    return hi * TWO_32 + lo;
  }

  double(end: number): number {
    const p = this.pos;
    if (p + 8 > end) throw new OtlpDecodeError(`malformed protobuf: truncated double at byte ${p}`);
    for (let i = 0; i < 8; i++) f64Bytes[i] = this.buf[p + i]!;
    this.pos = p + 8;
    return f64[0]!;
  }

  skip(wireType: number, end: number): void {
    switch (wireType) {
      case 0:
        this.varint(end);
        return;
      case 1:
        if (this.pos + 8 > end) throw new OtlpDecodeError(`malformed protobuf: truncated fixed64 at byte ${this.pos}`);
        this.pos += 8;
        return;
      case 2:
        this.pos = this.len(end);
        return;
      case 5:
        if (this.pos + 4 > end) throw new OtlpDecodeError(`malformed protobuf: truncated fixed32 at byte ${this.pos}`);
        this.pos += 4;
        return;
      default:
        throw new OtlpDecodeError(`malformed protobuf: unsupported wire type ${wireType} at byte ${this.pos}`);
    }
  }
}

export interface ProtobufDecodeOptions {
  /**
   * Convert only the attributes the detector reads (src/otlp/detector-keys.ts): a KeyValue whose key is
   * not one of them is skipped by its length, its value never decoded; off the contract spans only the
   * MCP method name is kept. For receivers that feed nothing but a Detector.
   */
  detectorAttributesOnly?: boolean;
  /**
   * With detectorAttributesOnly: called for each valid span that cannot matter to the detector or to the
   * page's evidence (mattersOffContract in src/otlp/detector-keys.ts), in its place among the spans handed
   * to the sink; no record is made of it (the whole message is still walked and checked as before).
   */
  onSkipped?: () => void;
}

/** Decodes a binary ExportTraceServiceRequest; throws OtlpDecodeError on a malformed message. */
export function decodeProtobufRequest(buf: Uint8Array, sink: SpanSink, options?: ProtobufDecodeOptions): DecodeResult {
  const r = new Reader(buf);
  r.slim = options?.detectorAttributesOnly === true;
  if (r.slim) r.onSkipped = options?.onSkipped;
  const result: DecodeResult = { spans: 0, invalid: 0 };
  const end = buf.length;
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag >>> 3 === 1 && (tag & 7) === 2) {
      const stop = r.len(end);
      resourceSpans(r, stop, sink, result);
      r.pos = stop;
    } else r.skip(tag & 7, end);
  }
  return result;
}

function resourceSpans(r: Reader, end: number, sink: SpanSink, result: DecodeResult): void {
  const start = r.pos;
  let service = UNKNOWN_SERVICE;
  // The resource may follow its spans on the wire; read it first.
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === ((1 << 3) | 2)) {
      const stop = r.len(end);
      service = resourceService(r, stop) ?? service;
      r.pos = stop;
    } else r.skip(tag & 7, end);
  }
  r.pos = start;
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === ((2 << 3) | 2)) {
      const stop = r.len(end);
      scopeSpans(r, stop, service, sink, result);
      r.pos = stop;
    } else r.skip(tag & 7, end);
  }
}

function resourceService(r: Reader, end: number): string | undefined {
  let service: string | undefined;
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === ((1 << 3) | 2)) {
      const stop = r.len(end);
      const kv = keyValue(r, stop);
      if (kv !== undefined && kv[0] === ATTR_SERVICE_NAME && typeof kv[1] === 'string' && kv[1].length > 0)
        service = kv[1];
      r.pos = stop;
    } else r.skip(tag & 7, end);
  }
  return service;
}

function scopeSpans(r: Reader, end: number, service: string, sink: SpanSink, result: DecodeResult): void {
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === ((2 << 3) | 2)) {
      const stop = r.len(end);
      const s = r.slim ? slimSpan(r, stop, service) : span(r, stop, service);
      if (s === undefined) {
        result.skipped = (result.skipped ?? 0) + 1;
        r.onSkipped!();
      } else if (typeof s === 'string') {
        result.invalid++;
        result.firstError ??= s;
      } else {
        result.spans++;
        const at = r.spanAt;
        const words = r.spanWords;
        words[0] = word(r.buf, at);
        words[1] = word(r.buf, at + 4);
        sink(s, words);
      }
      r.pos = stop;
    } else r.skip(tag & 7, end);
  }
}

/** A Span message whole (every attribute; slimSpan is the detector's). */
function span(r: Reader, end: number, service: string): SpanRecord | string {
  const buf = r.buf;
  let traceId = '';
  let spanId = '';
  let parentSpanId: string | undefined;
  let name = '';
  let kind = 0;
  let start = -1;
  let stop = -1;
  const attributes: Record<string, AttributeValue> = {};
  while (r.pos < end) {
    const tag = r.tag(end);
    switch (tag) {
      case (1 << 3) | 2: {
        const e = r.len(end);
        if (e - r.pos !== 16) return `span trace_id is ${e - r.pos} bytes, not 16`;
        traceId = r.traceHex(r.pos);
        r.pos = e;
        break;
      }
      case (2 << 3) | 2: {
        const e = r.len(end);
        if (e - r.pos !== 8) return `span span_id is ${e - r.pos} bytes, not 8`;
        spanId = readHex(buf, r.pos, e);
        r.spanAt = r.pos;
        r.pos = e;
        break;
      }
      case (4 << 3) | 2: {
        const e = r.len(end);
        if (e > r.pos) parentSpanId = readHex(buf, r.pos, e);
        r.pos = e;
        break;
      }
      case (5 << 3) | 2: {
        const e = r.len(end);
        name = CONTRACT_NAMES.find(buf, r.pos, e) ?? readString(buf, r.pos, e);
        r.pos = e;
        break;
      }
      case (6 << 3) | 0:
        kind = r.varint(end);
        break;
      case (7 << 3) | 1:
        start = r.fixed64(end);
        break;
      case (8 << 3) | 1:
        stop = r.fixed64(end);
        break;
      case (9 << 3) | 2: {
        const e = r.len(end);
        const kv = keyValue(r, e);
        if (kv !== undefined) attributes[kv[0]] = kv[1];
        r.pos = e;
        break;
      }
      default:
        r.skip(tag & 7, end);
    }
  }
  if (traceId === '') return 'span without trace_id';
  if (spanId === '') return 'span without span_id';
  if (start < 0 || stop < 0) return 'span without start or end time';
  return {
    traceId,
    spanId,
    parentSpanId,
    name,
    kind: spanKind(kind),
    startTimeUnixMs: start / 1e6,
    endTimeUnixMs: stop / 1e6,
    attributes,
    service,
  };
}

/**
 * span() for detectorAttributesOnly: positions are kept while the span is walked (its ids, name and each
 * detector attribute's value) and strings are made at its end, once the span is known to be kept; with
 * onSkipped, a valid span that cannot matter is undefined, none of them made. The checks, their order and
 * the record are span()'s: the last of a repeated field counts, an attribute's last value with it.
 */
function slimSpan(r: Reader, end: number, service: string): SpanRecord | string | undefined {
  const buf = r.buf;
  let traceAt = -1;
  let spanAt = -1;
  let parentStart = -1;
  let parentEnd = -1;
  let nameStart = -1;
  let nameEnd = -1;
  let kind = 0;
  let start = -1;
  let stop = -1;
  r.attrCount = 0;
  while (r.pos < end) {
    const tag = r.tag(end);
    switch (tag) {
      case (1 << 3) | 2: {
        const e = r.len(end);
        if (e - r.pos !== 16) return `span trace_id is ${e - r.pos} bytes, not 16`;
        traceAt = r.pos;
        r.pos = e;
        break;
      }
      case (2 << 3) | 2: {
        const e = r.len(end);
        if (e - r.pos !== 8) return `span span_id is ${e - r.pos} bytes, not 8`;
        spanAt = r.pos;
        r.pos = e;
        break;
      }
      case (4 << 3) | 2: {
        const e = r.len(end);
        // An empty parent leaves the one before it, as span() does.
        if (e > r.pos) {
          parentStart = r.pos;
          parentEnd = e;
        }
        r.pos = e;
        break;
      }
      case (5 << 3) | 2: {
        const e = r.len(end);
        nameStart = r.pos;
        nameEnd = e;
        r.pos = e;
        break;
      }
      case (6 << 3) | 0:
        kind = r.varint(end);
        break;
      case (7 << 3) | 1:
        start = r.fixed64(end);
        break;
      case (8 << 3) | 1:
        stop = r.fixed64(end);
        break;
      case (9 << 3) | 2: {
        const e = r.len(end);
        detectorKeyValueAt(r, e);
        r.pos = e;
        break;
      }
      default:
        r.skip(tag & 7, end);
    }
  }
  if (traceAt < 0) return 'span without trace_id';
  if (spanAt < 0) return 'span without span_id';
  r.spanAt = spanAt;
  if (start < 0 || stop < 0) return 'span without start or end time';
  const contract = nameStart >= 0 ? CONTRACT_NAMES.find(buf, nameStart, nameEnd) : undefined;
  const a = r.attrs;
  const n = r.attrCount;
  if (contract === undefined && r.onSkipped !== undefined) {
    let matters = false;
    for (let i = 0; i < n && !matters; i++) matters = mattersOffContract(DETECTOR_KEYS.values[a[i * 3]!]!);
    // The contract names are ASCII: no other bytes decode to them.
    if (!matters) return undefined;
  }
  const name = contract ?? (nameStart >= 0 ? readString(buf, nameStart, nameEnd) : '');
  // Off the contract spans, the request span's keys are all the detector reads.
  const requestSpan = !isContractSpan(name);
  const attributes: Record<string, AttributeValue> = {};
  for (let i = 0; i < n; i++) {
    const key = DETECTOR_KEYS.values[a[i * 3]!]!;
    if (requestSpan && !isRequestSpanKey(key)) continue;
    r.pos = a[i * 3 + 1]!;
    const value = anyValue(r, a[i * 3 + 2]!);
    if (value !== undefined) attributes[key] = value;
  }
  return {
    traceId: r.traceHex(traceAt),
    spanId: readHex(buf, spanAt, spanAt + 8),
    parentSpanId: parentStart >= 0 ? readHex(buf, parentStart, parentEnd) : undefined,
    name,
    kind: spanKind(kind),
    startTimeUnixMs: start / 1e6,
    endTimeUnixMs: stop / 1e6,
    attributes,
    service,
  };
}

/**
 * A KeyValue for slimSpan: when its key is one the detector reads (matched by its bytes) and it has a
 * value, the key's index and the value's place are added to the span's attributes read. Wire order is
 * free (the value may come first), so both are located before either is kept; as in keyValue, the last of
 * each counts. Every value is walked (checkAnyValue), so a malformed one is refused exactly as keyValue
 * refuses it.
 */
function detectorKeyValueAt(r: Reader, end: number): void {
  const buf = r.buf;
  let key = -1;
  let valueStart = -1;
  let valueEnd = -1;
  const asWritten = keyValueAsWritten(buf, r.pos, end);
  if (asWritten >= 0) {
    // The key's bytes end where the value's tag is, two bytes before its start.
    key = DETECTOR_KEYS.indexOf(buf, r.pos + 2, asWritten - 2);
    valueStart = asWritten;
    valueEnd = end;
    r.pos = end;
  }
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === ((1 << 3) | 2)) {
      const e = r.len(end);
      key = DETECTOR_KEYS.indexOf(buf, r.pos, e);
      r.pos = e;
    } else if (tag === ((2 << 3) | 2)) {
      const e = r.len(end);
      valueStart = r.pos;
      valueEnd = e;
      checkAnyValue(r, e);
      r.pos = e;
    } else r.skip(tag & 7, end);
  }
  if (key < 0 || valueStart < 0) return;
  const n = r.attrCount++;
  if ((n + 1) * 3 > r.attrs.length) {
    const grown = new Int32Array(r.attrs.length * 2);
    grown.set(r.attrs);
    r.attrs = grown;
  }
  r.attrs[n * 3] = key;
  r.attrs[n * 3 + 1] = valueStart;
  r.attrs[n * 3 + 2] = valueEnd;
}

/*
 * A KeyValue as exporters write it, the key then the value filling the rest, each with a one-byte tag and
 * length, the value one scalar field (string, bool, int or double) ending at the KeyValue's end:
 * 0a <n> key 12 <m> (0a <l> bytes | 10 varint | 18 varint | 21 8 bytes). Where the value starts, or -1 for
 * any other layout, which detectorKeyValueAt's walk reads field by field. Every check the walk would make
 * on these bytes is made here (lengths within their message, a varint of at most 10 bytes ending at the
 * value's end), so both take the same bytes and refuse the same: this path only declines, never throws.
 */
function keyValueAsWritten(buf: Uint8Array, p: number, end: number): number {
  if (p + 2 > end || buf[p] !== 0x0a) return -1;
  const n = buf[p + 1]!;
  const q = p + 2 + n;
  if (n >= 0x80 || q + 2 > end || buf[q] !== 0x12) return -1;
  const m = buf[q + 1]!;
  const v = q + 2;
  if (m >= 0x80 || v + m !== end) return -1;
  if (m === 0) return v;
  const t = buf[v]!;
  if (t === 0x0a) return m >= 2 && buf[v + 1]! < 0x80 && v + 2 + buf[v + 1]! === end ? v : -1;
  if (t === 0x21) return m === 9 ? v : -1;
  if (t !== 0x10 && t !== 0x18) return -1;
  // A varint of 1 to 10 bytes: every byte but the last with its high bit set.
  if (m < 2 || m > 11 || buf[end - 1]! >= 0x80) return -1;
  for (let i = v + 1; i < end - 1; i++) if (buf[i]! < 0x80) return -1;
  return v;
}

const kvOut: [string, AttributeValue] = ['', ''];

/** Returns a shared tuple (valid until the next call), or undefined for values the detector does not use. */
function keyValue(r: Reader, end: number): [string, AttributeValue] | undefined {
  const buf = r.buf;
  let key = '';
  let value: AttributeValue | undefined;
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === ((1 << 3) | 2)) {
      const e = r.len(end);
      key = readString(buf, r.pos, e);
      r.pos = e;
    } else if (tag === ((2 << 3) | 2)) {
      const e = r.len(end);
      value = anyValue(r, e);
      r.pos = e;
    } else r.skip(tag & 7, end);
  }
  if (value === undefined || key === '') return undefined;
  kvOut[0] = key;
  kvOut[1] = value;
  return kvOut;
}

/** Walks an AnyValue as anyValue does, throwing what it throws, without making its value. */
function checkAnyValue(r: Reader, end: number): void {
  while (r.pos < end) {
    const tag = r.tag(end);
    switch (tag) {
      case (1 << 3) | 2:
        r.pos = r.len(end);
        break;
      case (2 << 3) | 0:
      case (3 << 3) | 0:
        r.varint(end);
        break;
      case (4 << 3) | 1:
        r.double(end);
        break;
      default:
        r.skip(tag & 7, end);
    }
  }
}

function anyValue(r: Reader, end: number): AttributeValue | undefined {
  let value: AttributeValue | undefined;
  while (r.pos < end) {
    const tag = r.tag(end);
    switch (tag) {
      case (1 << 3) | 2: {
        const e = r.len(end);
        // Values (session, stream ids) are mostly distinct: decoded, not interned.
        value = readUtf8(r.buf, r.pos, e);
        r.pos = e;
        break;
      }
      case (2 << 3) | 0:
        value = r.varint(end) !== 0;
        break;
      case (3 << 3) | 0:
        value = r.varint(end);
        break;
      case (4 << 3) | 1:
        value = r.double(end);
        break;
      default:
        r.skip(tag & 7, end);
    }
  }
  return value;
}

/** The big-endian 32-bit word of buf[at, at + 4): what hexWord reads off its 8 hex digits. */
function word(buf: Uint8Array, at: number): number {
  return (buf[at]! << 24) | (buf[at + 1]! << 16) | (buf[at + 2]! << 8) | buf[at + 3]!;
}
