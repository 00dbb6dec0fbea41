import type { JsonRpcResponse } from './jsonrpc.js';

/** Most characters of a terminal's JSON text hashed; its length is mixed in as well. */
const MAX_HASHED_CHARS = 65_536;

/**
 * A 32-bit FNV-1a digest of a terminal's `result` or `error` member (its JSON text), to tell a
 * duplicate of the first terminal from a different one. Bounded cost: at most the first 64 KiB of
 * the text and its length; only the number is kept, never the payload. Computed once per terminal,
 * not per event.
 */
export function digestOfTerminal(message: JsonRpcResponse): number {
  const member = 'error' in message ? { error: message.error } : { result: message.result };
  const text = JSON.stringify(member) ?? '';
  const n = text.length < MAX_HASHED_CHARS ? text.length : MAX_HASHED_CHARS;
  let hash = 0x811c9dc5;
  for (let i = 0; i < n; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= text.length;
  hash = Math.imul(hash, 0x01000193);
  return hash >>> 0;
}
