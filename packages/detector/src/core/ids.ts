/** FNV-1a over UTF-16 code units, continuing from `h`. */
export function hash32(s: string, h = 0x811c9dc5): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Each code unit below 128's value as a hex digit: 0 to 15 for 0-9, a-f and A-F, 0 for any other. */
const HEX_DIGIT = new Uint8Array(128);
for (let c = 0; c < 128; c++)
  HEX_DIGIT[c] = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : 0;

/**
 * Parses 8 hex digits at `at` without allocating; invalid digits read as 0 (upper case reads as lower, and
 * past the string's end, charCodeAt's NaN, reads as 0).
 *
 * Why a table: the span id's two words are parsed once for each stream span the core takes in from text
 * (the in-process SpanProcessor door, the JSON doors). A table lookup a digit costs less than three range
 * tests. Kept a short loop: unrolled, it is cheaper alone but too large for the optimizing compiler to
 * inline into Detector.ingest, and the calls cost more than the unrolling saves.
 */
export function hexWord(s: string, at: number): number {
  let v = 0;
  for (let i = at; i < at + 8; i++) {
    const c = s.charCodeAt(i);
    v = (v << 4) | (c < 128 ? HEX_DIGIT[c]! : 0);
  }
  return v >>> 0;
}

export function wordHex(v: number): string {
  return (v >>> 0).toString(16).padStart(8, '0');
}

/** The texts of the integers below 1,024, made once: most JSON-RPC request ids are such numbers. */
const SMALL_INTEGERS = Array.from({ length: 1024 }, (_, i) => String(i));

/** String(n), for a numeric request id: a small non-negative integer's text from the table, not made again. */
export function numberText(n: number): string {
  return n >= 0 && n < 1024 && (n | 0) === n ? SMALL_INTEGERS[n]! : String(n);
}
