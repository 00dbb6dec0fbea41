/**
 * The chunks' bytes as UTF-8 text, as `Buffer.concat(chunks).toString('utf8')` gives it (a BOM kept,
 * a bad sequence U+FFFD). A body of one chunk (most JSON answers) is read where it lies: no copy of its
 * bytes into a new buffer first.
 */
export function utf8Text(chunks: readonly Uint8Array[]): string {
  if (chunks.length !== 1) return Buffer.concat(chunks).toString('utf8');
  const only = chunks[0]!;
  return Buffer.isBuffer(only)
    ? only.toString('utf8')
    : Buffer.from(only.buffer, only.byteOffset, only.byteLength).toString('utf8');
}
