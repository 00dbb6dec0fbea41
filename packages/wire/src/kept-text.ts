import { createHash } from 'node:crypto';

/** Most characters of a client's string (a request id, a method, a tool's name) a record keeps as it is. */
export const MAX_KEPT_CHARS = 256;

/** Characters of a longer string kept before its digest, so that a reader still recognises it. */
const PREFIX_CHARS = 64;

/**
 * A string from a request body as a record keeps it: itself when short, else a stand-in of bounded
 * length (its first 64 characters, its length and 128 bits of its SHA-256), one per string, so that
 * two long ids still differ and the same long id always maps to the same stand-in (a response's id
 * is kept the same way before it is looked up). A body of a few MiB may be a single id or name: a
 * record kept for minutes must not keep it.
 */
export function keptText(text: string): string {
  if (text.length <= MAX_KEPT_CHARS) return text;
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 32);
  // Copied through bytes: a slice of a long string refers to it (V8's sliced strings) and would keep it whole.
  const prefix = Buffer.from(text.slice(0, PREFIX_CHARS)).toString();
  return `${prefix}…(${text.length} chars, sha256 ${digest})`;
}
