/** FNV-1a over UTF-16 code units: a 32-bit identity for stream ids, compared only within one request. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Parses 8 hex digits at `at`; 0 when they are not hex. */
export function hexWord(s: string, at: number): number {
  const v = parseInt(s.substring(at, at + 8), 16);
  return v === v ? v >>> 0 : 0;
}

export function wordHex(v: number): string {
  return (v >>> 0).toString(16).padStart(8, '0');
}
