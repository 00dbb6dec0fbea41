import { CONTRACT_NAMES } from './detector-keys.js';
import { ESCAPED, NON_ASCII, STRING, type JsonCursor } from './json-cursor.js';
import { F_NAME } from './json-fields.js';
import { value } from './json-values.js';
import { readString } from './strings.js';

/*
 * A span's ids, name and times from the tokens the OTLP/JSON walk (json-walk.ts) kept for its fields
 * (`tok`: type, start, end, string flags at field * 4). The decoder reads bytes instead of calling
 * JSON.parse (json.ts says why): hex ids, contract span names and nanosecond times are read straight from
 * the body's bytes, and only what does not fit the common shape goes through a JavaScript string.
 */

const NOT_A_NUMBER = NaN;

/** A plain string token of lowercase hex digits, `bytes` long, as its string; undefined otherwise (id() decides). */
export function hexId(cur: JsonCursor, tok: Int32Array, field: number, bytes: number): string | undefined {
  const t = field * 4;
  const s = tok[t + 1]!;
  const e = tok[t + 2]!;
  if (tok[t] !== STRING || tok[t + 3] !== 0 || e - s !== bytes * 2) return undefined;
  const buf = cur.buf;
  for (let i = s; i < e; i++) {
    const c = buf[i]!;
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return undefined;
  }
  return Buffer.prototype.latin1Slice.call(buf, s, e);
}

/** The span's name: the contract names as their constants, short ASCII names interned. */
export function spanName(cur: JsonCursor, tok: Int32Array): string {
  const t = F_NAME * 4;
  if (tok[t] !== STRING) return '';
  const flags = tok[t + 3]!;
  if ((flags & (ESCAPED | NON_ASCII)) !== 0) return value(cur, tok, t) as string;
  const buf = cur.buf;
  return CONTRACT_NAMES.find(buf, tok[t + 1]!, tok[t + 2]!) ?? readString(buf, tok[t + 1]!, tok[t + 2]!);
}

/** A time in Unix nanoseconds (a string of digits, or a number) as milliseconds; undefined when invalid. */
export function nanosToMs(cur: JsonCursor, tok: Int32Array, field: number): number | undefined {
  const t = field * 4;
  if (tok[t] === STRING) {
    if ((tok[t + 3]! & ESCAPED) !== 0) return nanosFromString(value(cur, tok, t) as string);
    // Digits are summed, the last six (below a millisecond) apart so that the milliseconds stay exact;
    // Number() on a 19-digit string takes V8's slow path.
    const buf = cur.buf;
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
  const v = value(cur, tok, t);
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : NOT_A_NUMBER;
  return n >= 0 ? n / 1e6 : undefined;
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
export function id(v: unknown, bytes: number): string | undefined {
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
