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
 * A code unit's value as a hex digit, 0 for any code unit that is not one (above 127 included), and 0 past
 * the string's end (charCodeAt's NaN).
 */
const digit = (c: number): number => (c < 128 ? HEX_DIGIT[c]! : 0);

/**
 * Parses 8 hex digits at `at` without allocating; invalid digits read as 0 (upper case reads as lower).
 *
 * Why unrolled, with a table: the span id's two words are parsed once for each stream span the core
 * takes in from text (the in-process SpanProcessor door, the JSON doors). A loop with the three range
 * tests a digit cost about 40 instructions a digit, this about 24, most of it `charCodeAt`, which checks
 * the string's representation each time (about 640 instructions an id before, 380 now).
 */
export function hexWord(s: string, at: number): number {
  return (
    ((digit(s.charCodeAt(at)) << 28) |
      (digit(s.charCodeAt(at + 1)) << 24) |
      (digit(s.charCodeAt(at + 2)) << 20) |
      (digit(s.charCodeAt(at + 3)) << 16) |
      (digit(s.charCodeAt(at + 4)) << 12) |
      (digit(s.charCodeAt(at + 5)) << 8) |
      (digit(s.charCodeAt(at + 6)) << 4) |
      digit(s.charCodeAt(at + 7))) >>>
    0
  );
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
