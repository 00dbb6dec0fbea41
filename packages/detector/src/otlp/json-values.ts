import type { AttributeValue } from '../core/types.js';
import { CONTAINER, FALSE, NONE, NULL, NUMBER, STRING, TRUE, type JsonCursor } from './json-cursor.js';

/*
 * The JavaScript values of the tokens the OTLP/JSON walk (json-walk.ts) kept: attribute values by the
 * decoder's rule, and the scalars of a span's fields. The decoder reads bytes instead of calling
 * JSON.parse (json.ts says why): the walk keeps each token as four integers (type, start, end, string
 * flags) in an Int32Array, and a value is made from the body's bytes only when it is used, so that an
 * attribute the detector does not read never becomes a string.
 */

/** What an AnyValue holds, by the decoder's rule: a string, else a bool, else an int, else a double. */
export const V_NONE = 0;
export const V_STRING = 1;
export const V_TRUE = 2;
export const V_FALSE = 3;
export const V_INT = 4;
export const V_DOUBLE = 5;

/** The attribute value of a kind and its token (at tokens[t]). */
export function kvDecode(cur: JsonCursor, kind: number, tokens: Int32Array, t: number): AttributeValue | undefined {
  switch (kind) {
    case V_STRING:
      return value(cur, tokens, t) as string;
    case V_TRUE:
      return true;
    case V_FALSE:
      return false;
    case V_INT: {
      const n = tokens[t] === STRING ? digits(cur, tokens, t) : (value(cur, tokens, t) as number);
      return Number.isFinite(n) ? n : undefined;
    }
    case V_DOUBLE: {
      const v = value(cur, tokens, t);
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
function digits(cur: JsonCursor, tokens: Int32Array, t: number): number {
  const s = tokens[t + 1]!;
  const e = tokens[t + 2]!;
  if (e > s && e - s <= 15 && (tokens[t] === NUMBER || tokens[t + 3] === 0)) {
    const buf = cur.buf;
    let n = 0;
    let i = s;
    for (; i < e; i++) {
      const d = buf[i]! - 48;
      if (d < 0 || d > 9) break;
      n = n * 10 + d;
    }
    if (i === e) return n;
  }
  if (tokens[t] === NUMBER) return Number(Buffer.prototype.latin1Slice.call(cur.buf, s, e));
  return Number(value(cur, tokens, t));
}

/** The JavaScript value of a token kept in `tokens` at `t` (objects and arrays: CONTAINER). */
export function value(cur: JsonCursor, tokens: Int32Array, t: number): unknown {
  switch (tokens[t]) {
    case NONE:
      return undefined;
    case STRING:
      cur.strStart = tokens[t + 1]!;
      cur.strEnd = tokens[t + 2]!;
      cur.strFlags = tokens[t + 3]!;
      return cur.stringValue();
    case NUMBER:
      return digits(cur, tokens, t);
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
