/**
 * What a proxy's response body is encoded with (`Content-Encoding`, RFC 9110 §8.4): none, one coding
 * the observer can decode a copy of, or something it cannot read (an unknown coding, codings stacked,
 * a header it cannot make sense of).
 */
export type BodyCoding = 'gzip' | 'deflate' | 'br';

/** The codings decoded (`x-gzip` is gzip, RFC 9110 §8.4.1.3). */
const READABLE: ReadonlyMap<string, BodyCoding> = new Map<string, BodyCoding>([
  ['gzip', 'gzip'],
  ['x-gzip', 'gzip'],
  ['deflate', 'deflate'],
  ['br', 'br'],
]);

/**
 * The body's coding from its `Content-Encoding` value(s): undefined for none (no header, empty, or
 * `identity` only), a `BodyCoding`, or null for one the observer cannot read (unknown, or more than one
 * coding: a chain of decoders is more to bound than any server is known to need).
 */
export function bodyCoding(header: string | readonly string[] | undefined): BodyCoding | null | undefined {
  if (header === undefined) return undefined;
  const value = typeof header === 'string' ? header : header.join(',');
  let coding: BodyCoding | null | undefined = undefined;
  for (const part of value.split(',')) {
    const name = part.trim().toLowerCase();
    if (name === '' || name === 'identity') continue;
    if (coding !== undefined) return null;
    coding = READABLE.get(name) ?? null;
  }
  return coding;
}
