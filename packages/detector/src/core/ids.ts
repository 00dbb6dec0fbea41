/** FNV-1a over UTF-16 code units, continuing from `h`. */
export function hash32(s: string, h = 0x811c9dc5): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Parses 8 hex digits at `at` without allocating; invalid digits read as 0. */
export function hexWord(s: string, at: number): number {
  let v = 0;
  for (let i = at; i < at + 8; i++) {
    const c = s.charCodeAt(i);
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : 0;
    v = (v << 4) | d;
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
