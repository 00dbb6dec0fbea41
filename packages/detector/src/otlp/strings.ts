/**
 * Interns short ASCII strings decoded from protobuf (attribute keys, span names, services, enum-like
 * values) so that each batch does not allocate the same strings again.
 */
const SLOTS = 4096;
const MAX_LEN = 48;
const cache: (string | undefined)[] = new Array<string | undefined>(SLOTS);

export function readString(buf: Uint8Array, start: number, end: number): string {
  const len = end - start;
  if (len === 0) return '';
  if (len > MAX_LEN) return Buffer.prototype.utf8Slice.call(buf, start, end);
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    if (c > 0x7f) return Buffer.prototype.utf8Slice.call(buf, start, end);
    h = Math.imul(h ^ c, 0x01000193);
  }
  const slot = (h >>> 0) & (SLOTS - 1);
  const hit = cache[slot];
  if (hit !== undefined && hit.length === len) {
    let same = true;
    for (let i = 0; i < len; i++) {
      if (hit.charCodeAt(i) !== buf[start + i]) {
        same = false;
        break;
      }
    }
    if (same) return hit;
  }
  const s = Buffer.prototype.latin1Slice.call(buf, start, end);
  cache[slot] = s;
  return s;
}

/** UTF-8 text of buf[start, end), not interned: for values that are mostly distinct (session and stream ids). */
export function readUtf8(buf: Uint8Array, start: number, end: number): string {
  if (end <= start) return '';
  const b = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  return Buffer.prototype.utf8Slice.call(b, start, end);
}

export function readHex(buf: Uint8Array, start: number, end: number): string {
  if (end - start === 8) return hex8(buf, start);
  return Buffer.prototype.hexSlice.call(buf, start, end);
}

/** The character codes of the lowercase hex digits, by value. */
const HEX = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));

/**
 * The 8 bytes at `at` as 16 lowercase hex digits, as hexSlice gives them: one String.fromCharCode of
 * 16 codes (a builtin that fills one flat string), not a call into Node's C++ (about 900 instructions
 * for hexSlice through the API call, against a few hundred). Span ids and parent ids are 8 bytes.
 */
function hex8(buf: Uint8Array, at: number): string {
  const a = buf[at]!;
  const b = buf[at + 1]!;
  const c = buf[at + 2]!;
  const d = buf[at + 3]!;
  const e = buf[at + 4]!;
  const f = buf[at + 5]!;
  const g = buf[at + 6]!;
  const h = buf[at + 7]!;
  return String.fromCharCode(
    HEX[a >> 4]!,
    HEX[a & 15]!,
    HEX[b >> 4]!,
    HEX[b & 15]!,
    HEX[c >> 4]!,
    HEX[c & 15]!,
    HEX[d >> 4]!,
    HEX[d & 15]!,
    HEX[e >> 4]!,
    HEX[e & 15]!,
    HEX[f >> 4]!,
    HEX[f & 15]!,
    HEX[g >> 4]!,
    HEX[g & 15]!,
    HEX[h >> 4]!,
    HEX[h & 15]!,
  );
}

declare global {
  interface Buffer {
    utf8Slice(start: number, end: number): string;
    latin1Slice(start: number, end: number): string;
    hexSlice(start: number, end: number): string;
  }
}
