/**
 * The OTLP/JSON decoder as it was before the scanning one (src/otlp/json.ts): JSON.parse of the whole body,
 * then a walk over the objects. Kept only as the reference the equivalence test compares the scanner with.
 */
import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_SESSION_ID,
  ATTR_SERVICE_NAME,
  SPAN_LISTENING_REFUSED,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';
import { UNKNOWN_SERVICE } from '../../src/core/services.js';
import type { AttributeValue, SpanRecord } from '../../src/core/types.js';
import { OtlpDecodeError, type DecodeResult } from '../../src/otlp/errors.js';
import { spanKind } from '../../src/otlp/kind.js';

type Json = Record<string, unknown>;

/** Off the contract spans, slim keeps what the core reads of a request span. */
const REQUEST_SPAN_KEYS: readonly string[] = [
  ATTR_MCP_METHOD_NAME,
  ATTR_ERROR_TYPE,
  ATTR_MCP_SESSION_ID,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_PROTOCOL_VERSION,
];

export interface JsonDecodeOptions {
  /**
   * Convert only the attributes the detector reads: all of them on its contract spans (terminal, resume,
   * reattach), only the MCP method name on any other span. For receivers that feed nothing but a Detector.
   */
  detectorAttributesOnly?: boolean;
}

/** Decodes an OTLP/JSON ExportTraceServiceRequest (text or already parsed) into span records. */
export function referenceDecodeJsonRequest(
  body: string | unknown,
  sink: (s: SpanRecord) => void,
  options?: JsonDecodeOptions,
): DecodeResult {
  const slim = options?.detectorAttributesOnly === true;
  let doc: unknown = body;
  if (typeof body === 'string') {
    try {
      doc = JSON.parse(body);
    } catch (e) {
      throw new OtlpDecodeError(`malformed JSON: ${(e as Error).message}`);
    }
  }
  if (!isObject(doc)) throw new OtlpDecodeError('malformed OTLP/JSON: the body is not a JSON object');
  const result: DecodeResult = { spans: 0, invalid: 0 };
  const rss = doc.resourceSpans;
  if (rss === undefined) return result;
  if (!Array.isArray(rss)) throw new OtlpDecodeError('malformed OTLP/JSON: resourceSpans is not an array');
  for (let i = 0; i < rss.length; i++) {
    const rs = rss[i];
    if (!isObject(rs)) throw new OtlpDecodeError(`malformed OTLP/JSON: resourceSpans[${i}] is not an object`);
    const service = serviceOf(rs.resource, i);
    const sss = rs.scopeSpans;
    if (sss === undefined) continue;
    if (!Array.isArray(sss))
      throw new OtlpDecodeError(`malformed OTLP/JSON: resourceSpans[${i}].scopeSpans is not an array`);
    for (let j = 0; j < sss.length; j++) {
      const ss = sss[j];
      const spans = isObject(ss) ? ss.spans : undefined;
      if (!isObject(ss) || (spans !== undefined && !Array.isArray(spans))) {
        throw new OtlpDecodeError(`malformed OTLP/JSON: resourceSpans[${i}].scopeSpans[${j}] is not a ScopeSpans`);
      }
      if (spans === undefined) continue;
      for (let k = 0; k < spans.length; k++) {
        const span = toRecord(spans[k], service, slim);
        if (typeof span === 'string') {
          result.invalid++;
          result.firstError ??= `resourceSpans[${i}].scopeSpans[${j}].spans[${k}]: ${span}`;
        } else {
          result.spans++;
          sink(span);
        }
      }
    }
  }
  return result;
}

function serviceOf(resource: unknown, i: number): string {
  if (resource === undefined) return UNKNOWN_SERVICE;
  if (!isObject(resource))
    throw new OtlpDecodeError(`malformed OTLP/JSON: resourceSpans[${i}].resource is not an object`);
  const attrs = resource.attributes;
  if (!Array.isArray(attrs)) return UNKNOWN_SERVICE;
  for (const kv of attrs) {
    if (isObject(kv) && kv.key === ATTR_SERVICE_NAME) {
      const v = anyValue(kv.value);
      if (typeof v === 'string' && v.length > 0) return v;
    }
  }
  return UNKNOWN_SERVICE;
}

/** A span record, or why the span was rejected. */
function toRecord(s: unknown, service: string, slim: boolean): SpanRecord | string {
  if (!isObject(s)) return 'not an object';
  const traceId = id(s.traceId, 16);
  if (traceId === undefined) return 'traceId is not 16 bytes of hex';
  const spanId = id(s.spanId, 8);
  if (spanId === undefined) return 'spanId is not 8 bytes of hex';
  const parent = s.parentSpanId === undefined || s.parentSpanId === '' ? undefined : id(s.parentSpanId, 8);
  const start = nanosToMs(s.startTimeUnixNano);
  const end = nanosToMs(s.endTimeUnixNano);
  if (start === undefined || end === undefined) return 'startTimeUnixNano/endTimeUnixNano is not an unsigned integer';
  const name = typeof s.name === 'string' ? s.name : '';
  const attrs = s.attributes;
  const attributes: Record<string, AttributeValue> = {};
  if (Array.isArray(attrs)) {
    if (
      slim &&
      name !== SPAN_REQUEST_TERMINAL &&
      name !== SPAN_STREAM_RESUME &&
      name !== SPAN_SESSION_REATTACH &&
      name !== SPAN_LISTENING_REFUSED
    ) {
      for (let i = 0; i < attrs.length; i++) {
        const kv = attrs[i];
        if (isObject(kv) && typeof kv.key === 'string' && REQUEST_SPAN_KEYS.includes(kv.key)) {
          const v = anyValue(kv.value);
          if (v !== undefined) attributes[kv.key] = v;
        }
      }
    } else {
      for (let i = 0; i < attrs.length; i++) {
        const kv = attrs[i] as Json | null;
        if (typeof kv !== 'object' || kv === null) continue;
        const key = kv.key;
        if (typeof key !== 'string') continue;
        const v = anyValue(kv.value);
        if (v !== undefined) attributes[key] = v;
      }
    }
  }
  return {
    traceId,
    spanId,
    parentSpanId: parent,
    name,
    kind: spanKind(s.kind),
    startTimeUnixMs: start,
    endTimeUnixMs: end,
    attributes,
    service,
  };
}

function anyValue(value: unknown): AttributeValue | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Json;
  const str = v.stringValue;
  if (typeof str === 'string') return str;
  const bool = v.boolValue;
  if (typeof bool === 'boolean') return bool;
  const int = v.intValue;
  if (int !== undefined) {
    if (typeof int === 'number') return Number.isFinite(int) ? int : undefined;
    const n = typeof int === 'string' ? Number(int) : NaN;
    return Number.isFinite(n) ? n : undefined;
  }
  const dbl = v.doubleValue;
  if (typeof dbl === 'number') return dbl;
  if (typeof dbl === 'string') return Number(dbl);
  return undefined;
}

/** OTLP/JSON ids are hex; some senders use base64 (the protobuf JSON mapping), accepted too. */
function id(v: unknown, bytes: number): string | undefined {
  if (typeof v !== 'string') return undefined;
  if (v.length === bytes * 2) {
    let upper = false;
    let i = 0;
    for (; i < v.length; i++) {
      const c = v.charCodeAt(i);
      if ((c >= 48 && c <= 57) || (c >= 97 && c <= 102)) continue;
      if (c >= 65 && c <= 70) upper = true;
      else break;
    }
    if (i === v.length) return upper ? v.toLowerCase() : v;
  }
  if (v.length === Math.ceil(bytes / 3) * 4) {
    const b = Buffer.from(v, 'base64');
    if (b.length === bytes) return b.toString('hex');
  }
  return undefined;
}

function nanosToMs(v: unknown): number | undefined {
  if (typeof v === 'string') {
    // Number() on a 19-digit string takes V8's slow path; digits are summed instead, the last six
    // (below a millisecond) apart so that the milliseconds stay exact.
    const len = v.length;
    if (len > 6 && len <= 21) {
      let ms = 0;
      let ns = 0;
      let i = 0;
      for (; i < len - 6; i++) {
        const d = v.charCodeAt(i) - 48;
        if (d < 0 || d > 9) break;
        ms = ms * 10 + d;
      }
      for (; i < len; i++) {
        const d = v.charCodeAt(i) - 48;
        if (d < 0 || d > 9) break;
        ns = ns * 10 + d;
      }
      if (i === len) return ms + ns / 1e6;
    }
  }
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : NaN;
  return n >= 0 ? n / 1e6 : undefined;
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
