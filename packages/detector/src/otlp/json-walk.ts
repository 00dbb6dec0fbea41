import { UNKNOWN_SERVICE } from '../core/services.js';
import type { AttributeValue, SpanRecord } from '../core/types.js';
import {
  type ByteKeys,
  CONTRACT_NAMES,
  DETECTOR_KEYS,
  isContractSpan,
  isRequestSpanKey,
  mattersOffContract,
} from './detector-keys.js';
import { ARRAY, ESCAPED, FALSE, JsonCursor, NON_ASCII, NONE, NUMBER, OBJECT, STRING, TRUE } from './json-cursor.js';
import {
  Admission,
  ANY_VALUE,
  F_ATTRIBUTES,
  F_END,
  F_KIND,
  F_NAME,
  F_PARENT,
  F_SPAN,
  F_START,
  F_TRACE,
  KEY_VALUE,
  RESOURCE,
  RESOURCE_SPANS,
  SCOPE_SPANS,
  SERVICE_KEY,
  SPAN,
  TOP,
} from './json-fields.js';
import { Problem } from './json-problem.js';
import { hexId, id, nanosToMs, spanName } from './json-span-fields.js';
import { kvDecode, V_FALSE, V_INT, V_DOUBLE, V_NONE, V_STRING, V_TRUE, value } from './json-values.js';
import { spanKind } from './kind.js';
import { readString } from './strings.js';

/*
 * The walk over one OTLP/JSON ExportTraceServiceRequest: the messages in their nesting (request,
 * ResourceSpans, Resource, ScopeSpans, Span, KeyValue, AnyValue), each read by a method of its own name,
 * validating every byte as JSON.parse would and keeping the tokens of the fields the decoder uses. It reads
 * bytes instead of calling JSON.parse (json.ts says why): no object of the document is built, only the
 * span records, and its scratch (token arrays, admissions) is reused span after span. The rules on keys are
 * in json-fields.ts; the values are made from the tokens by json-values.ts and json-span-fields.ts.
 */

const CLOSE_OBJECT_BYTE = 0x7d;
const OPEN_OBJECT_BYTE = 0x7b;

/** The bytes every OTLP/JSON exporter writes around a KeyValue: `{"key":"` and `","value":{"` (from the closing quote of the key). */
const KV_HEAD = Buffer.from('{"key":"', 'latin1');
const KV_VALUE = Buffer.from('","value":{"', 'latin1');
/** The AnyValue fields as exporters write them, name and colon (from the opening quote), by their index in ANY_VALUE. */
const ANY_AS_WRITTEN = ['stringValue', 'boolValue', 'intValue', 'doubleValue'].map((f) =>
  Buffer.from(`"${f}":`, 'latin1'),
);

const QUOTE_BYTE = 0x22;
const COMMA_BYTE = 0x2c;
/** What Walk.spanKey returns past a Span object's `}`. */
const END_OF_OBJECT = -2;
/** The Span fields as exporters write them, `"name":`, by their index in SPAN. */
const SPAN_AS_WRITTEN = [
  'traceId',
  'spanId',
  'parentSpanId',
  'name',
  'kind',
  'startTimeUnixNano',
  'endTimeUnixNano',
  'attributes',
].map((f) => Buffer.from(`"${f}":`, 'latin1'));
/** A Span field by the first letter of its name (spanId and startTimeUnixNano share `s`: spanId here). */
const NO_FIELD = 255;
const SPAN_FIRST_BYTE = new Uint8Array(256).fill(NO_FIELD);
for (const [i, f] of SPAN_AS_WRITTEN.entries()) if (i !== F_START) SPAN_FIRST_BYTE[f[1]!] = i;

/*
 * A span's attributes array exactly as exporters write it, [{"key":"…","value":{"<field>":<scalar>}},…],
 * every string, number and literal in it valid JSON, no key starting with `mcp.` or holding a \u escape:
 * matched by one sticky regular expression over the body's bytes as latin1 text (one character a byte,
 * so its positions are the bytes'), which runs as compiled native code several times faster a byte than
 * a JavaScript loop. Whatever it does not match goes to the cursor's fast skip, then to the walk. Its
 * strings are written "plain run, then (escape, plain run) repeated", so that a long string is one
 * greedy loop over a character class (a loop of alternatives would keep a backtracking entry per
 * character and overflow the expression's stack on a string of megabytes); an overflow of that stack
 * all the same (an array of millions of attributes) is caught and read by the other paths.
 */
const J_STRING = String.raw`"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"`;
const J_KEY = String.raw`"(?!mcp\.)[^"\\\x00-\x1f]*(?:\\["\\/bfnrt][^"\\\x00-\x1f]*)*"`;
const J_NUMBER = String.raw`-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?`;
const J_KV = String.raw`\{"key":${J_KEY},"value":\{"(?:stringValue|boolValue|intValue|doubleValue)":(?:${J_STRING}|${J_NUMBER}|true|false|null)\}\}`;
const ATTRIBUTES_AS_WRITTEN = new RegExp(String.raw`\[(?:${J_KV}(?:,${J_KV})*)?\]`, 'y');
/** The depth of an AnyValue in a span's attributes, which the expression reaches. */
const ANY_VALUE_DEPTH = 10;

/*
 * A whole span as exporters write it that cannot matter (what span() would find skippable, valid and
 * SKIPPED): lowercase hex ids of their lengths, times as strings of digits, a name that starts with no
 * `mcp.` (every contract span's name does: CONTRACT_BY_PREFIX) and holds no \u escape, attributes as
 * above, then the fields the record does not read in the order exporters write them (events with their
 * attributes, an empty links array, a status of code and message). One match and the span is SKIPPED
 * without a token read; anything else (another order, a duplicate, whitespace, uppercase hex, an MCP
 * string) goes to span(), which decides as before.
 */
const J_ANY_KV = String.raw`\{"key":${J_STRING},"value":\{"(?:stringValue|boolValue|intValue|doubleValue)":(?:${J_STRING}|${J_NUMBER}|true|false|null)\}\}`;
const J_ANY_ATTRIBUTES = String.raw`\[(?:${J_ANY_KV}(?:,${J_ANY_KV})*)?\]`;
const J_EVENT = String.raw`\{"timeUnixNano":"[0-9]+","name":${J_STRING}(?:,"attributes":${J_ANY_ATTRIBUTES})?(?:,"droppedAttributesCount":${J_NUMBER})?\}`;
const J_STATUS_FIELD = String.raw`"(?:code|message)":(?:${J_NUMBER}|${J_STRING})`;
const SPAN_SKIPPED_AS_WRITTEN = new RegExp(
  String.raw`\{"traceId":"[0-9a-f]{32}","spanId":"[0-9a-f]{16}"(?:,"traceState":${J_STRING})?(?:,"parentSpanId":${J_STRING})?` +
    String.raw`,"name":${J_KEY},"kind":${J_NUMBER},"startTimeUnixNano":"[0-9]+","endTimeUnixNano":"[0-9]+"` +
    String.raw`,"attributes":\[(?:${J_KV}(?:,${J_KV})*)?\](?:,"droppedAttributesCount":${J_NUMBER})?` +
    String.raw`(?:,"events":\[(?:${J_EVENT}(?:,${J_EVENT})*)?\])?(?:,"droppedEventsCount":${J_NUMBER})?` +
    String.raw`(?:,"status":\{(?:${J_STATUS_FIELD}(?:,${J_STATUS_FIELD})?)?\})?(?:,"links":\[\])?` +
    String.raw`(?:,"droppedLinksCount":${J_NUMBER})?(?:,"flags":${J_NUMBER})?\}`,
  'y',
);
/** The depth of an AnyValue in a span's events, the deepest the expression reaches. */
const EVENT_ANY_VALUE_DEPTH = 12;
/** Whether every contract span's name starts with `mcp.`, which SPAN_SKIPPED_AS_WRITTEN relies on. */
const CONTRACT_BY_PREFIX = CONTRACT_NAMES.values.every((name) => name.startsWith('mcp.'));

/** A valid span skipped as of no use (Walk's `skip`), as span() returns it. */
const SKIPPED: object = Object.freeze({});

function at(buf: Uint8Array, pos: number, bytes: Uint8Array): boolean {
  if (pos + bytes.length > buf.length) return false;
  for (let i = 0; i < bytes.length; i++) if (buf[pos + i] !== bytes[i]) return false;
  return true;
}

/** One body's walk: the cursor, and scratch reused span after span. */
export class Walk {
  readonly cur: JsonCursor;
  /**
   * Span records and problems of the counted resourceSpans, in document order; a number stands for that
   * many valid spans skipped one after another (Walk's `skip`) where their records would have been: a
   * run of them is one Smi entry counted up in place, not an entry each (no push, no write barrier).
   */
  readonly entries: (SpanRecord | Problem | number)[] = [];
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
    /** Valid spans that cannot matter to the detector or the page's evidence become SKIPPED, their record never made. */
    private readonly skip: boolean,
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
      if (typeof e !== 'number' && !(e instanceof Problem)) e.service = name;
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
          const v = key === undefined ? undefined : kvDecode(cur, this.kvKind, this.kvTok, 0);
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
    const asWritten = this.skip && CONTRACT_BY_PREFIX && cur.maxDepth >= EVENT_ANY_VALUE_DEPTH;
    const entries = this.entries;
    // A run of skipped spans is counted in the entry at `run` (-1: none open). Only entries of this array
    // are counted up: the enclosing objects cut the entries back to marks made before it began.
    let run = -1;
    // Tried after a skipped span only (and first): in a run of MCP spans the expression would fail on each.
    let tryWhole = true;
    for (let first = true; cur.nextElement(first); first = false, k++) {
      let span: SpanRecord | string | typeof SKIPPED;
      if (asWritten && tryWhole && this.skippedAsWritten()) span = SKIPPED;
      else if (cur.peek() === OBJECT) span = this.span();
      else {
        cur.skip(7);
        span = 'not an object';
      }
      tryWhole = span === SKIPPED;
      if (span === SKIPPED) {
        if (run < 0) {
          run = entries.length;
          entries.push(1);
        } else entries[run] = (entries[run] as number) + 1;
        continue;
      }
      run = -1;
      entries.push(
        typeof span === 'string'
          ? new Problem(false, `resourceSpans[${i}].scopeSpans[${j}].spans[${k}]: ${span}`)
          : (span as SpanRecord),
      );
    }
  }

  /** A Span object at depth 7: its record, or why it was rejected, or SKIPPED. */
  private span(): SpanRecord | string | typeof SKIPPED {
    const cur = this.cur;
    const tok = this.tok;
    const admit = this.admitSpan;
    for (let f = 0; f < 7 * 4; f += 4) tok[f] = NONE;
    this.attrCount = 0;
    cur.open(7);
    admit.reset();
    for (let first = true; ; first = false) {
      const id = this.spanKey(first);
      if (id === END_OF_OBJECT) break;
      if (id < 0 || !admit.admit(id, this.keySnake)) {
        cur.skip(8);
        continue;
      }
      const type = cur.peek();
      if (id === F_ATTRIBUTES) {
        this.attrCount = 0;
        this.attrPassed = -1;
        if (type !== ARRAY) cur.skip(8);
        else if (!this.skip || !this.passAttributes()) this.attributes();
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
    if (this.skip) {
      if (this.skippable()) {
        // The checks below, in their order, without making the strings.
        if (!this.validId(F_TRACE, 16)) return 'traceId is not 16 bytes of hex';
        if (!this.validId(F_SPAN, 8)) return 'spanId is not 8 bytes of hex';
        if (nanosToMs(cur, tok, F_START) === undefined || nanosToMs(cur, tok, F_END) === undefined)
          return 'startTimeUnixNano/endTimeUnixNano is not an unsigned integer';
        return SKIPPED;
      }
      if (this.attrPassed >= 0) {
        // A contract span whose attributes were passed over (its name came after them): read them now.
        const after = cur.pos;
        cur.pos = this.attrPassed;
        this.attributes();
        cur.pos = after;
      }
    }
    const traceId = this.traceHex() ?? id(this.scalar(F_TRACE), 16);
    if (traceId === undefined) return 'traceId is not 16 bytes of hex';
    const spanId = hexId(cur, tok, F_SPAN, 8) ?? id(this.scalar(F_SPAN), 8);
    if (spanId === undefined) return 'spanId is not 8 bytes of hex';
    let parent: string | undefined;
    if (tok[F_PARENT * 4] !== NONE) {
      const p = this.scalar(F_PARENT);
      parent = p === '' ? undefined : id(p, 8);
    }
    const start = nanosToMs(cur, tok, F_START);
    const end = nanosToMs(cur, tok, F_END);
    if (start === undefined || end === undefined) return 'startTimeUnixNano/endTimeUnixNano is not an unsigned integer';
    const name = spanName(cur, tok);
    const attributes: Record<string, AttributeValue> = {};
    const requestSpan = this.slim && !isContractSpan(name);
    const keys = this.attrKeys;
    const at = this.attrTok;
    for (let a = 0; a < this.attrCount; a++) {
      const key = keys[a]!;
      if (requestSpan && !isRequestSpanKey(key)) continue;
      const v = kvDecode(cur, at[a * 5]!, at, a * 5 + 1);
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

  /** The snake_case spelling of the span field spanKey read last, when it was one (SPAN.snake). */
  private keySnake: string | undefined = undefined;

  /**
   * cur.nextKey() then SPAN.of() at once: the next field of a Span object, or END_OF_OBJECT past its `}`.
   * A field's name as exporters write it (`"traceId":` right after the `{` or a `,`) is matched by its
   * bytes with its quotes and colon; anything else goes through nextKey and SPAN.of, as before.
   */
  private spanKey(first: boolean): number {
    const cur = this.cur;
    const buf = cur.buf;
    const n = buf.length;
    const p = cur.pos;
    const q = first ? p : p + 1;
    if (q + 1 < n && buf[q] === QUOTE_BYTE && (first || buf[p] === COMMA_BYTE)) {
      const c = buf[q + 1]!;
      let id = SPAN_FIRST_BYTE[c]!;
      if (id !== NO_FIELD) {
        if (id === F_SPAN && !at(buf, q, SPAN_AS_WRITTEN[F_SPAN]!)) id = F_START;
        const bytes = SPAN_AS_WRITTEN[id]!;
        if (at(buf, q, bytes)) {
          cur.pos = q + bytes.length;
          this.keySnake = undefined;
          return id;
        }
      }
    }
    if (!cur.nextKey(first)) return END_OF_OBJECT;
    const id = SPAN.of(cur);
    this.keySnake = SPAN.snake;
    return id;
  }

  /**
   * Whether the span just read cannot matter (mattersOffContract): not one of the contract spans by its
   * name, and none of its attributes read is one that makes a span of another name matter.
   */
  private skippable(): boolean {
    const tok = this.tok;
    const t = F_NAME * 4;
    if (tok[t] === STRING) {
      if ((tok[t + 3]! & (ESCAPED | NON_ASCII)) === 0) {
        if (CONTRACT_NAMES.indexOf(this.cur.buf, tok[t + 1]!, tok[t + 2]!) >= 0) return false;
      } else if (isContractSpan(spanName(this.cur, tok))) return false;
    }
    const keys = this.attrKeys;
    for (let a = 0; a < this.attrCount; a++) if (mattersOffContract(keys[a]!)) return false;
    return true;
  }

  /**
   * Where the attributes array that passAttributes passed over starts (the span's last attributes field),
   * else -1: their KeyValues are read only if the span turns out to be kept.
   */
  private attrPassed = -1;

  /**
   * With skip, the span's attributes array at `pos` passed over as bytes (cur.skipFast, validated as
   * attributes() would, nothing read) when none of its strings can be an attribute key that makes a span
   * of another name matter (mattersOffContract): none starts with `mcp.` or has a \u escape. Then the
   * span has no attribute read (attrCount 0) unless it is a contract span, whose attributes span() reads
   * from attrPassed. False with `pos` unchanged otherwise (an MCP span stops at its first such key): read
   * them as always.
   */
  private passAttributes(): boolean {
    const cur = this.cur;
    const start = cur.pos;
    const t = F_NAME * 4;
    // A contract span by the name already read (a later name field would count instead, and is checked then).
    if (this.tok[t] === STRING && CONTRACT_NAMES.indexOf(cur.buf, this.tok[t + 1]!, this.tok[t + 2]!) >= 0)
      return false;
    if (cur.maxDepth >= ANY_VALUE_DEPTH) {
      const text = (this.text ??= Buffer.prototype.latin1Slice.call(cur.buf, 0, cur.buf.length));
      ATTRIBUTES_AS_WRITTEN.lastIndex = start;
      let matched = false;
      try {
        matched = ATTRIBUTES_AS_WRITTEN.test(text);
      } catch {
        // RangeError: the expression's backtracking stack overflowed; nothing was consumed.
      }
      if (matched) {
        cur.pos = ATTRIBUTES_AS_WRITTEN.lastIndex;
        this.attrPassed = start;
        return true;
      }
    }
    if (!cur.skipFast(8, true)) return false;
    this.attrPassed = start;
    return true;
  }

  /** The body as latin1 text, made the first time it is matched against (a transient copy of its bytes). */
  private text: string | undefined = undefined;

  /** With skip: the span at `pos` matched whole by SPAN_SKIPPED_AS_WRITTEN, and passed (true); else `pos` unchanged. */
  private skippedAsWritten(): boolean {
    const cur = this.cur;
    if (cur.buf[cur.pos] !== OPEN_OBJECT_BYTE) return false;
    const text = (this.text ??= Buffer.prototype.latin1Slice.call(cur.buf, 0, cur.buf.length));
    SPAN_SKIPPED_AS_WRITTEN.lastIndex = cur.pos;
    let matched = false;
    try {
      matched = SPAN_SKIPPED_AS_WRITTEN.test(text);
    } catch {
      // RangeError: the expression's backtracking stack overflowed; span() reads it.
    }
    if (matched) cur.pos = SPAN_SKIPPED_AS_WRITTEN.lastIndex;
    return matched;
  }

  /** Whether a span's id field is one the record would take (hexId, else id()), without making it. */
  private validId(field: number, bytes: number): boolean {
    const tok = this.tok;
    const t = field * 4;
    const s = tok[t + 1]!;
    const e = tok[t + 2]!;
    if (tok[t] === STRING && tok[t + 3] === 0 && e - s === bytes * 2) {
      const buf = this.cur.buf;
      let i = s;
      for (; i < e; i++) {
        const c = buf[i]!;
        if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) break;
      }
      if (i === e) return true;
    }
    return id(this.scalar(field), bytes) !== undefined;
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
      // The field's name and colon matched by their bytes (what string() and ANY_VALUE.of() would accept here).
      const p = cur.pos + KV_VALUE.length - 2;
      const c = p + 1 < buf.length ? buf[p + 1]! : 0;
      const id = c === 0x73 ? 0 : c === 0x62 ? 1 : c === 0x69 ? 2 : c === 0x64 ? 3 : -1;
      if (id >= 0 && at(buf, p, ANY_AS_WRITTEN[id]!)) {
        cur.pos = p + ANY_AS_WRITTEN[id]!.length;
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
    const id = hexId(this.cur, tok, F_TRACE, 16);
    if (id !== undefined) {
      this.lastTraceAt = s;
      this.lastTrace = id;
    }
    return id;
  }

  private scalar(field: number): unknown {
    return value(this.cur, this.tok, field * 4);
  }
}
