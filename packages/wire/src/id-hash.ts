/** FNV-1a offset basis and prime. */
export const FNV_OFFSET = 0x811c9dc5;
export const FNV_PRIME = 0x01000193;
/** The hash is cut to 30 bits so that it stays a small integer (stored unboxed). */
export const ID_HASH_MASK = 0x3fffffff;

/**
 * FNV-1a over an event id's UTF-16 code units, cut to 30 bits: what the cursor ring keeps of each
 * delivered id. For an ASCII id it equals the FNV-1a of its bytes, which the SSE scanner computes
 * while it reads the id, so the per-event path hashes no string.
 */
export function hashOfId(id: string): number {
  let hash = FNV_OFFSET;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, FNV_PRIME);
  }
  return hash & ID_HASH_MASK;
}
