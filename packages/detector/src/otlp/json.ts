import { ATTR_MCP_METHOD_NAME, ATTR_SERVICE_NAME } from '@resumewatch/semconv';
import { UNKNOWN_SERVICE } from '../core/services.js';
import type { AttributeValue, SpanRecord } from '../core/types.js';
import { ByteKeys, CONTRACT_NAMES, DETECTOR_KEYS, isContractSpan } from './detector-keys.js';
import { OtlpDecodeError, type DecodeResult } from './errors.js';
import {
  ARRAY,
  CONTAINER,
  ESCAPED,
  FALSE,
  JsonCursor,
  NON_ASCII,
  NONE,
  NULL,
  NUMBER,
  OBJECT,
  STRING,
  TRUE,
} from './json-cursor.js';
import { spanKind } from './kind.js';
import { readString } from './strings.js';

/*
 * OTLP/JSON decoding by scanning: one pass over the body's bytes that validates it as JSON.parse would
 * and builds only the span records (ids, name, kind, times, service and the attributes asked for), never
 * the objects of the whole document. Its results are those of parsing the body whole and reading the
 * objects, as this decoder did before (test/helpers/otlp-json-reference.ts; test/otlp-json-scan.test.ts
 * compares both on generated, hostile and real exporters' bodies):
 * - a duplicate key counts by its last occurrence, as in JSON.parse;
 * - field names are read under their lowerCamelCase JSON names or their proto (snake_case) names, as
 *   camelCaseOtlpFieldNames renames them: the lowerCamelCase spelling wins, else the first snake_case spelling;
 * - a body that is not JSON is refused before any span reaches the sink; a structural error (resourceSpans
 *   not an array, ...) is thrown after the spans that precede it in document order reached the sink, as the
 *   walk over parsed objects did; malformed spans are counted and skipped.
 */

export interface JsonDecodeOptions {
  /**
   * Convert only the attributes the detector reads (src/otlp/detector-keys.ts): those on its contract
   * spans (terminal, resume, reattach), only the MCP method name on any other span. For receivers that
   * feed nothing but a Detector.
   */
  detectorAttributesOnly?: boolean;
  /** Arrays and objects nested deeper than this are refused (the receiver's --max-json-depth). Default: no limit. */
  maxDepth?: number;
}

/** A field table of one OTLP message: its lowerCamelCase JSON names, found from a key's bytes. */
class Fields {
  private readonly names: ByteKeys;
  /** The spelling of the key last looked up, when it was a snake_case (proto) name; else undefined. */
  snake: string | undefined;

  constructor(names: string[]) {
    this.names = new ByteKeys(names);
  }

  /** The field the cursor's last string token names, or -1. */
  of(cur: JsonCursor): number {
    this.snake = undefined;
    if (cur.strFlags === 0) return this.names.indexOf(cur.buf, cur.strStart, cur.strEnd);
    const key = cur.stringValue();
    if (!key.includes('_')) return this.names.indexOfString(key);
    // camelCaseOtlpFieldNames' renaming, so that every spelling it accepts is accepted here.
    const id = this.names.indexOfString(key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()));
    if (id >= 0) this.snake = key;
    return id;
  }
}

/**
 * Which occurrence of a field counts in one object: a lowerCamelCase key always (the last one wins), a
 * snake_case one only while no lowerCamelCase key was seen and only the first snake_case spelling.
 */
class Admission {
  private camel = 0;
  private snakes: (string | undefined)[] | undefined;

  reset(): void {
    this.camel = 0;
    this.snakes = undefined;
  }

  admit(id: number, snake: string | undefined): boolean {
    const bit = 1 << id;
    if (snake === undefined) {
      this.camel |= bit;
      return true;
    }
    if ((this.camel & bit) !== 0) return false;
    const s = (this.snakes ??= []);
    if (s[id] === undefined) {
      s[id] = snake;
      return true;
    }
    return s[id] === snake;
  }
}

const TOP = new Fields(['resourceSpans']);
const RESOURCE_SPANS = new Fields(['resource', 'scopeSpans']);
const RESOURCE = new Fields(['attributes']);
const SCOPE_SPANS = new Fields(['spans']);
const F_TRACE = 0;
const F_SPAN = 1;
const F_PARENT = 2;
const F_NAME = 3;
const F_KIND = 4;
const F_START = 5;
const F_END = 6;
const F_ATTRIBUTES = 7;
const SPAN = new Fields([
  'traceId',
  'spanId',
  'parentSpanId',
  'name',
  'kind',
  'startTimeUnixNano',
  'endTimeUnixNano',
  'attributes',
]);
const KEY_VALUE = new Fields(['key', 'value']);
const ANY_VALUE = new Fields(['stringValue', 'boolValue', 'intValue', 'doubleValue']);
const SERVICE_KEY = new ByteKeys([ATTR_SERVICE_NAME]);
const COLON_BYTE = 0x3a;
const CLOSE_OBJECT_BYTE = 0x7d;

/** A malformed span (counted, skipped) or a structural error (thrown), in document order among the records. */
class Problem {
  constructor(
    readonly fatal: boolean,
    readonly message: string,
  ) {}
}

const NOT_A_NUMBER = NaN;

/** What an AnyValue holds, by the decoder's rule: a string, else a bool, else an int, else a double. */
const V_NONE = 0;
const V_STRING = 1;
const V_TRUE = 2;
const V_FALSE = 3;
const V_INT = 4;
const V_DOUBLE = 5;

/** The bytes every OTLP/JSON exporter writes around a KeyValue: `{"key":"` and `","value":{"` (from the closing quote of the key). */
const KV_HEAD = Buffer.from('{"key":"', 'latin1');
const KV_VALUE = Buffer.from('","value":{"', 'latin1');

function at(buf: Uint8Array, pos: number, bytes: Uint8Array): boolean {
  if (pos + bytes.length > buf.length) return false;
  for (let i = 0; i < bytes.length; i++) if (buf[pos + i] !== bytes[i]) return false;
  return true;
}

/** One body's walk: the cursor, and scratch reused span after span. */
class Walk {
  readonly cur: JsonCursor;
  /** Span records and problems of the counted resourceSpans, in document order. */
  readonly entries: (SpanRecord | Problem)[] = [];
  resourceSpans = 0;
  /** Tokens of the span's scalar fields: type, start, end, flags for each of F_TRACE..F_END. */
  private readonly tok = new Int32Array(7 * 4);
  /** Tokens of an AnyValue's four fields, as tok. */
  private readonly any = new Int32Array(4 * 4);
  /** The span's attributes read so far: keys, and the token of each value (kind, type, start, end, flags), decoded at the span's end. */
  private readonly attrKeys: string[] = [];
  private attrTok = new Int32Array(16 * 5);
  private attrCount = 0;
  /** The value of the last KeyValue read: its kind (V_*) and token (type, start, end, flags). */
  private kvKind = V_NONE;
  private readonly kvTok = new Int32Array(4);
  private readonly admitTop = new Admission();
  private readonly admitRs = new Admission();
  private readonly admitResource = new Admission();
  private readonly admitSs = new Admission();
  private readonly admitSpan = new Admission();
  private readonly admitKv = new Admission();
  private readonly admitAny = new Admission();

  constructor(
    buf: Uint8Array,
    maxDepth: number,
    private readonly slim: boolean,
  ) {
    this.cur = new JsonCursor(buf, maxDepth);
  }

  /** The request object at depth 1; false when the body is JSON but not an object. */
  request(): boolean {
    const cur = this.cur;
    if (cur.peek() !== OBJECT) {
      cur.skip(1);
      cur.end();
      return false;
    }
    cur.open(1);
    this.admitTop.reset();
    for (let first = true; cur.nextKey(first); first = false) {
      const id = TOP.of(cur);
      if (id === 0 && this.admitTop.admit(0, TOP.snake)) {
        this.entries.length = 0;
        this.resourceSpans = 0;
        if (cur.peek() === ARRAY) this.resourceSpansArray();
        else {
          cur.skip(2);
          this.entries.push(new Problem(true, 'malformed OTLP/JSON: resourceSpans is not an array'));
        }
      } else cur.skip(2);
    }
    cur.end();
    return true;
  }

  private resourceSpansArray(): void {
    const cur = this.cur;
    cur.open(2);
    let i = 0;
    for (let first = true; cur.nextElement(first); first = false, i++) {
      if (cur.peek() === OBJECT) this.resourceSpansObject(i);
      else {
        cur.skip(3);
        this.entries.push(new Problem(true, `malformed OTLP/JSON: resourceSpans[${i}] is not an object`));
      }
    }
    this.resourceSpans = i;
  }

  private resourceSpansObject(i: number): void {
    const cur = this.cur;
    const entries = this.entries;
    const mark = entries.length;
    const admit = this.admitRs;
    cur.open(3);
    admit.reset();
    let service: string | undefined;
    let badResource = false;
    let badScopeSpans = false;
    for (let first = true; cur.nextKey(first); first = false) {
      const id = RESOURCE_SPANS.of(cur);
      if (id < 0 || !admit.admit(id, RESOURCE_SPANS.snake)) {
        cur.skip(4);
      } else if (id === 0) {
        badResource = cur.peek() !== OBJECT;
        if (badResource) cur.skip(4);
        else service = this.resource();
      } else {
        entries.length = mark;
        badScopeSpans = cur.peek() !== ARRAY;
        if (badScopeSpans) cur.skip(4);
        else this.scopeSpansArray(i);
      }
      // Both fields' admission states live in one Admission; the resource walk resets its own.
    }
    if (badResource || badScopeSpans) {
      entries.length = mark;
      entries.push(
        new Problem(
          true,
          badResource
            ? `malformed OTLP/JSON: resourceSpans[${i}].resource is not an object`
            : `malformed OTLP/JSON: resourceSpans[${i}].scopeSpans is not an array`,
        ),
      );
      return;
    }
    const name = service ?? UNKNOWN_SERVICE;
    for (let k = mark; k < entries.length; k++) {
      const e = entries[k]!;
      if (!(e instanceof Problem)) e.service = name;
    }
  }

  /** The Resource object at depth 4: its service.name, when one is a non-empty string. */
  private resource(): string | undefined {
    const cur = this.cur;
    const admit = this.admitResource;
    cur.open(4);
    admit.reset();
    let service: string | undefined;
    for (let first = true; cur.nextKey(first); first = false) {
      const id = RESOURCE.of(cur);
      if (id === 0 && admit.admit(0, RESOURCE.snake)) {
        service = undefined;
        if (cur.peek() !== ARRAY) {
          cur.skip(5);
          continue;
        }
        cur.open(5);
        for (let f = true; cur.nextElement(f); f = false) {
          if (cur.peek() !== OBJECT) {
            cur.skip(6);
            continue;
          }
          const key = this.keyValue(6, SERVICE_KEY);
          const v = key === undefined ? undefined : this.kvDecode(this.kvKind, this.kvTok, 0);
          // The first service.name with a non-empty string value is the service.
          if (service === undefined && key !== undefined && typeof v === 'string' && v.length > 0) service = v;
        }
      } else cur.skip(5);
    }
    return service;
  }

  private scopeSpansArray(i: number): void {
    const cur = this.cur;
    cur.open(4);
    let j = 0;
    for (let first = true; cur.nextElement(first); first = false, j++) {
      if (cur.peek() === OBJECT) this.scopeSpansObject(i, j);
      else {
        cur.skip(5);
        this.entries.push(
          new Problem(true, `malformed OTLP/JSON: resourceSpans[${i}].scopeSpans[${j}] is not a ScopeSpans`),
        );
      }
    }
  }

  private scopeSpansObject(i: number, j: number): void {
    const cur = this.cur;
    const entries = this.entries;
    const mark = entries.length;
    const admit = this.admitSs;
    cur.open(5);
    admit.reset();
    let bad = false;
    for (let first = true; cur.nextKey(first); first = false) {
      const id = SCOPE_SPANS.of(cur);
      if (id === 0 && admit.admit(0, SCOPE_SPANS.snake)) {
        entries.length = mark;
        bad = cur.peek() !== ARRAY;
        if (bad) cur.skip(6);
        else this.spansArray(i, j);
      } else cur.skip(6);
    }
    if (bad) {
      entries.length = mark;
      entries.push(new Problem(true, `malformed OTLP/JSON: resourceSpans[${i}].scopeSpans[${j}] is not a ScopeSpans`));
    }
  }

  private spansArray(i: number, j: number): void {
    const cur = this.cur;
    cur.open(6);
    let k = 0;
    for (let first = true; cur.nextElement(first); first = false, k++) {
      let span: SpanRecord | string;
      if (cur.peek() === OBJECT) span = this.span();
      else {
        cur.skip(7);
        span = 'not an object';
      }
      this.entries.push(
        typeof span === 'string'
          ? new Problem(false, `resourceSpans[${i}].scopeSpans[${j}].spans[${k}]: ${span}`)
          : span,
      );
    }
  }

  /** A Span object at depth 7: its record, or why it was rejected. */
  private span(): SpanRecord | string {
    const cur = this.cur;
    const tok = this.tok;
    const admit = this.admitSpan;
    for (let f = 0; f < 7 * 4; f += 4) tok[f] = NONE;
    this.attrCount = 0;
    cur.open(7);
    admit.reset();
    for (let first = true; cur.nextKey(first); first = false) {
      const id = SPAN.of(cur);
      if (id < 0 || !admit.admit(id, SPAN.snake)) {
        cur.skip(8);
        continue;
      }
      const type = cur.peek();
      if (id === F_ATTRIBUTES) {
        this.attrCount = 0;
        if (type === ARRAY) this.attributes();
        else cur.skip(8);
        continue;
      }
      const t = id * 4;
      tok[t] = type;
      if (type === STRING) {
        cur.string();
        tok[t + 1] = cur.strStart;
        tok[t + 2] = cur.strEnd;
        tok[t + 3] = cur.strFlags;
      } else if (type === NUMBER) {
        cur.number();
        tok[t + 1] = cur.numStart;
        tok[t + 2] = cur.pos;
      } else cur.skip(8);
    }
    const traceId = this.traceHex() ?? id(this.scalar(F_TRACE), 16);
    if (traceId === undefined) return 'traceId is not 16 bytes of hex';
    const spanId = this.hexId(F_SPAN, 8) ?? id(this.scalar(F_SPAN), 8);
    if (spanId === undefined) return 'spanId is not 8 bytes of hex';
    let parent: string | undefined;
    if (tok[F_PARENT * 4] !== NONE) {
      const p = this.scalar(F_PARENT);
      parent = p === '' ? undefined : id(p, 8);
    }
    const start = this.nanosToMs(F_START);
    const end = this.nanosToMs(F_END);
    if (start === undefined || end === undefined) return 'startTimeUnixNano/endTimeUnixNano is not an unsigned integer';
    const name = this.name();
    const attributes: Record<string, AttributeValue> = {};
    const methodOnly = this.slim && !isContractSpan(name);
    const keys = this.attrKeys;
    const at = this.attrTok;
    for (let a = 0; a < this.attrCount; a++) {
      const key = keys[a]!;
      if (methodOnly && key !== ATTR_MCP_METHOD_NAME) continue;
      const v = this.kvDecode(at[a * 5]!, at, a * 5 + 1);
      if (v !== undefined) attributes[key] = v;
    }
    return {
      traceId,
      spanId,
      parentSpanId: parent,
      name,
      kind: spanKind(this.scalar(F_KIND)),
      startTimeUnixMs: start,
      endTimeUnixMs: end,
      attributes,
      service: '',
    };
  }

  /** A span's attributes array at depth 8: the key/value pairs asked for, in order. */
  private attributes(): void {
    const cur = this.cur;
    const keys = this.slim ? DETECTOR_KEYS : undefined;
    cur.open(8);
    for (let first = true; cur.nextElement(first); first = false) {
      if (cur.peek() !== OBJECT) {
        cur.skip(9);
        continue;
      }
      const key = this.keyValue(9, keys);
      if (key === undefined || this.kvKind === V_NONE) continue;
      const n = this.attrCount++;
      if ((n + 1) * 5 > this.attrTok.length) {
        const grown = new Int32Array(this.attrTok.length * 2);
        grown.set(this.attrTok);
        this.attrTok = grown;
      }
      const t = n * 5;
      const at = this.attrTok;
      const kv = this.kvTok;
      this.attrKeys[n] = key;
      at[t] = this.kvKind;
      at[t + 1] = kv[0]!;
      at[t + 2] = kv[1]!;
      at[t + 3] = kv[2]!;
      at[t + 4] = kv[3]!;
    }
  }

  /**
   * A KeyValue object at `depth`: its key, when it is a string (and one of `keys` if given: their own
   * string), with its value's kind and token in kvKind and kvTok (V_NONE when it has none of the four
   * scalar kinds); the value is decoded only if it is used (kvDecode).
   */
  private keyValue(depth: number, keys: ByteKeys | undefined): string | undefined {
    const cur = this.cur;
    const buf = cur.buf;
    const any = this.any;
    any[0] = any[4] = any[8] = any[12] = NONE;
    if (!this.keyValueAsWritten(depth)) {
      any[0] = any[4] = any[8] = any[12] = NONE;
      this.keyValueAnyLayout(depth);
    }
    const keyType = this.kType;
    const keyStart = this.kStart;
    const keyEnd = this.kEnd;
    const keyFlags = this.kFlags;
    const valueIsObject = this.kValueIsObject;
    this.kvKind = V_NONE;
    if (keyType !== STRING) return undefined;
    let key: string | undefined;
    if ((keyFlags & (ESCAPED | NON_ASCII)) === 0) {
      key = keys === undefined ? readString(buf, keyStart, keyEnd) : keys.find(buf, keyStart, keyEnd);
    } else {
      cur.strStart = keyStart;
      cur.strEnd = keyEnd;
      cur.strFlags = keyFlags;
      const s = cur.stringValue();
      if (keys === undefined) key = s;
      else {
        const i = keys.indexOfString(s);
        key = i < 0 ? undefined : keys.values[i];
      }
    }
    if (key === undefined) return undefined;
    if (valueIsObject) this.pick();
    return key;
  }

  /** An AnyValue object at `depth`: the tokens of its string, bool, int and double fields. */
  private anyValue(depth: number): void {
    const cur = this.cur;
    const admit = this.admitAny;
    const any = this.any;
    cur.open(depth);
    admit.reset();
    for (let first = true; cur.nextKey(first); first = false) {
      const id = ANY_VALUE.of(cur);
      if (id < 0 || !admit.admit(id, ANY_VALUE.snake)) {
        cur.skip(depth + 1);
        continue;
      }
      const type = cur.peek();
      const t = id * 4;
      any[t] = type;
      if (type === STRING) {
        cur.string();
        any[t + 1] = cur.strStart;
        any[t + 2] = cur.strEnd;
        any[t + 3] = cur.strFlags;
      } else if (type === NUMBER) {
        cur.number();
        any[t + 1] = cur.numStart;
        any[t + 2] = cur.pos;
      } else cur.skip(depth + 1);
    }
  }

  /** The KeyValue read last: its key token, and whether its value was an object. */
  private kType = NONE;
  private kStart = 0;
  private kEnd = 0;
  private kFlags = 0;
  private kValueIsObject = false;

  /**
   * The layout exporters write, {"key":"…","value":{"<field>":<scalar>}}, read straight through: true
   * when the KeyValue at `pos` has it (its key token and value tokens kept); false, with `pos` back at its
   * start, for anything else (whitespace, another order, more fields), which keyValueAnyLayout reads
   * again, throwing at the same byte whatever this would have thrown at.
   */
  private keyValueAsWritten(depth: number): boolean {
    const cur = this.cur;
    const buf = cur.buf;
    const start = cur.pos;
    if (depth + 1 > cur.maxDepth || !at(buf, start, KV_HEAD)) return false;
    cur.pos = start + KV_HEAD.length - 1;
    cur.string();
    this.kStart = cur.strStart;
    this.kEnd = cur.strEnd;
    this.kFlags = cur.strFlags;
    if (at(buf, cur.pos - 1, KV_VALUE)) {
      cur.pos += KV_VALUE.length - 2;
      cur.string();
      const id = cur.strFlags === 0 ? ANY_VALUE.of(cur) : -1;
      if (id >= 0 && buf[cur.pos] === COLON_BYTE) {
        cur.pos++;
        const type = cur.peek();
        if (type !== OBJECT && type !== ARRAY) {
          const any = this.any;
          const t = id * 4;
          any[t] = type;
          cur.scalar(type);
          if (type === STRING) {
            any[t + 1] = cur.strStart;
            any[t + 2] = cur.strEnd;
            any[t + 3] = cur.strFlags;
          } else if (type === NUMBER) {
            any[t + 1] = cur.numStart;
            any[t + 2] = cur.pos;
          }
          if (buf[cur.pos] === CLOSE_OBJECT_BYTE && buf[cur.pos + 1] === CLOSE_OBJECT_BYTE) {
            cur.pos += 2;
            this.kType = STRING;
            this.kValueIsObject = true;
            return true;
          }
        }
      }
    }
    cur.pos = start;
    return false;
  }

  /** A KeyValue object at `depth` in any layout: duplicates, both spellings, other fields, whitespace. */
  private keyValueAnyLayout(depth: number): void {
    const cur = this.cur;
    const admit = this.admitKv;
    this.kType = NONE;
    this.kValueIsObject = false;
    cur.open(depth);
    admit.reset();
    for (let first = true; cur.nextKey(first); first = false) {
      const id = KEY_VALUE.of(cur);
      if (id < 0 || !admit.admit(id, KEY_VALUE.snake)) {
        cur.skip(depth + 1);
        continue;
      }
      const type = cur.peek();
      if (id === 0) {
        this.kType = type;
        if (type === STRING) {
          cur.string();
          this.kStart = cur.strStart;
          this.kEnd = cur.strEnd;
          this.kFlags = cur.strFlags;
        } else cur.skip(depth + 1);
      } else {
        const any = this.any;
        this.kValueIsObject = type === OBJECT;
        any[0] = any[4] = any[8] = any[12] = NONE;
        if (type === OBJECT) this.anyValue(depth + 1);
        else cur.skip(depth + 1);
      }
    }
  }

  /** Which field of the AnyValue read last gives the attribute value (the decoder's rule before: string, bool, int, double). */
  private pick(): void {
    const any = this.any;
    let field = -1;
    if (any[0] === STRING) {
      this.kvKind = V_STRING;
      field = 0;
    } else if (any[4] === TRUE) this.kvKind = V_TRUE;
    else if (any[4] === FALSE) this.kvKind = V_FALSE;
    else if (any[8] !== NONE) {
      // An int of another type is no value, and the double is not looked at.
      if (any[8] === NUMBER || any[8] === STRING) {
        this.kvKind = V_INT;
        field = 8;
      }
    } else if (any[12] === NUMBER || any[12] === STRING) {
      this.kvKind = V_DOUBLE;
      field = 12;
    }
    if (field >= 0) {
      const kv = this.kvTok;
      kv[0] = any[field]!;
      kv[1] = any[field + 1]!;
      kv[2] = any[field + 2]!;
      kv[3] = any[field + 3]!;
    }
  }

  /** The attribute value of a kind and its token (at tokens[t]). */
  private kvDecode(kind: number, tokens: Int32Array, t: number): AttributeValue | undefined {
    switch (kind) {
      case V_STRING:
        return this.value(tokens, t) as string;
      case V_TRUE:
        return true;
      case V_FALSE:
        return false;
      case V_INT: {
        const n = tokens[t] === STRING ? this.digits(tokens, t) : (this.value(tokens, t) as number);
        return Number.isFinite(n) ? n : undefined;
      }
      case V_DOUBLE: {
        const v = this.value(tokens, t);
        return typeof v === 'number' ? v : Number(v);
      }
      default:
        return undefined;
    }
  }

  /**
   * Number() of a number token or a string token: plain digits (an int as exporters write it, up to 15
   * digits: exact in a double) read from the bytes, anything else through Number().
   */
  private digits(tokens: Int32Array, t: number): number {
    const s = tokens[t + 1]!;
    const e = tokens[t + 2]!;
    if (e > s && e - s <= 15 && (tokens[t] === NUMBER || tokens[t + 3] === 0)) {
      const buf = this.cur.buf;
      let n = 0;
      let i = s;
      for (; i < e; i++) {
        const d = buf[i]! - 48;
        if (d < 0 || d > 9) break;
        n = n * 10 + d;
      }
      if (i === e) return n;
    }
    if (tokens[t] === NUMBER) return Number(Buffer.prototype.latin1Slice.call(this.cur.buf, s, e));
    return Number(this.value(tokens, t));
  }

  /** The JavaScript value of a token kept in `tokens` at `t` (objects and arrays: CONTAINER). */
  private value(tokens: Int32Array, t: number): unknown {
    const cur = this.cur;
    switch (tokens[t]) {
      case NONE:
        return undefined;
      case STRING:
        cur.strStart = tokens[t + 1]!;
        cur.strEnd = tokens[t + 2]!;
        cur.strFlags = tokens[t + 3]!;
        return cur.stringValue();
      case NUMBER:
        return this.digits(tokens, t);
      case TRUE:
        return true;
      case FALSE:
        return false;
      case NULL:
        return null;
      default:
        return CONTAINER;
    }
  }

  /** Where the last trace id token read starts, and its string: the spans of one trace usually come together. */
  private lastTraceAt = -1;
  private lastTrace = '';

  /** hexId of the trace id; the previous span's string again when its bytes are the same. */
  private traceHex(): string | undefined {
    const tok = this.tok;
    const t = F_TRACE * 4;
    const s = tok[t + 1]!;
    const last = this.lastTraceAt;
    if (last >= 0 && tok[t] === STRING && tok[t + 3] === 0 && tok[t + 2]! - s === 32) {
      const buf = this.cur.buf;
      let i = 31;
      while (i >= 0 && buf[s + i] === buf[last + i]) i--;
      if (i < 0) return this.lastTrace;
    }
    const id = this.hexId(F_TRACE, 16);
    if (id !== undefined) {
      this.lastTraceAt = s;
      this.lastTrace = id;
    }
    return id;
  }

  /** A plain string token of lowercase hex digits, `bytes` long, as its string; undefined otherwise (id() decides). */
  private hexId(field: number, bytes: number): string | undefined {
    const tok = this.tok;
    const t = field * 4;
    const s = tok[t + 1]!;
    const e = tok[t + 2]!;
    if (tok[t] !== STRING || tok[t + 3] !== 0 || e - s !== bytes * 2) return undefined;
    const buf = this.cur.buf;
    for (let i = s; i < e; i++) {
      const c = buf[i]!;
      if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return undefined;
    }
    return Buffer.prototype.latin1Slice.call(buf, s, e);
  }

  private scalar(field: number): unknown {
    return this.value(this.tok, field * 4);
  }

  /** The span's name: the contract names as their constants, short ASCII names interned. */
  private name(): string {
    const tok = this.tok;
    const t = F_NAME * 4;
    if (tok[t] !== STRING) return '';
    const flags = tok[t + 3]!;
    if ((flags & (ESCAPED | NON_ASCII)) !== 0) return this.scalar(F_NAME) as string;
    const buf = this.cur.buf;
    return CONTRACT_NAMES.find(buf, tok[t + 1]!, tok[t + 2]!) ?? readString(buf, tok[t + 1]!, tok[t + 2]!);
  }

  /** A time in Unix nanoseconds (a string of digits, or a number) as milliseconds; undefined when invalid. */
  private nanosToMs(field: number): number | undefined {
    const tok = this.tok;
    const t = field * 4;
    if (tok[t] === STRING) {
      if ((tok[t + 3]! & ESCAPED) !== 0) return nanosFromString(this.scalar(field) as string);
      // Digits are summed, the last six (below a millisecond) apart so that the milliseconds stay exact;
      // Number() on a 19-digit string takes V8's slow path.
      const buf = this.cur.buf;
      const s = tok[t + 1]!;
      const e = tok[t + 2]!;
      const len = e - s;
      if (len > 6 && len <= 21) {
        let ms = 0;
        let ns = 0;
        let i = s;
        for (; i < e - 6; i++) {
          const d = buf[i]! - 48;
          if (d < 0 || d > 9) break;
          ms = ms * 10 + d;
        }
        if (i === e - 6) {
          for (; i < e; i++) {
            const d = buf[i]! - 48;
            if (d < 0 || d > 9) break;
            ns = ns * 10 + d;
          }
        }
        if (i === e) return ms + ns / 1e6;
      }
    }
    const v = this.scalar(field);
    const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : NOT_A_NUMBER;
    return n >= 0 ? n / 1e6 : undefined;
  }
}

/**
 * Decodes an OTLP/JSON ExportTraceServiceRequest into span records: its UTF-8 bytes (or text). An
 * already parsed document is accepted too, serialised again first.
 */
export function decodeJsonRequest(
  body: Uint8Array | string | unknown,
  sink: (s: SpanRecord) => void,
  options?: JsonDecodeOptions,
): DecodeResult {
  const walk = new Walk(bytesOf(body), options?.maxDepth ?? Infinity, options?.detectorAttributesOnly === true);
  if (!walk.request()) throw new OtlpDecodeError('malformed OTLP/JSON: the body is not a JSON object');
  const result: DecodeResult = { spans: 0, invalid: 0, resourceSpans: walk.resourceSpans };
  const entries = walk.entries;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (!(e instanceof Problem)) {
      result.spans++;
      sink(e);
    } else if (e.fatal) throw new OtlpDecodeError(e.message);
    else {
      result.invalid++;
      result.firstError ??= e.message;
    }
  }
  return result;
}

function bytesOf(body: unknown): Uint8Array {
  // A Buffer view (no copy): its native slicing methods make the strings.
  if (body instanceof Uint8Array)
    return Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new OtlpDecodeError('malformed OTLP/JSON: the body is not a JSON object');
  return Buffer.from(JSON.stringify(body), 'utf8');
}

/** The same rule on a string (an escaped one): digits summed as above, else Number(). */
function nanosFromString(v: string): number | undefined {
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
  const n = Number(v);
  return n >= 0 ? n / 1e6 : undefined;
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
