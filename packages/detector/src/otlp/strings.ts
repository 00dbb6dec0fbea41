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
  return Buffer.prototype.hexSlice.call(buf, start, end);
}

declare global {
  interface Buffer {
    utf8Slice(start: number, end: number): string;
    latin1Slice(start: number, end: number): string;
    hexSlice(start: number, end: number): string;
  }
}
