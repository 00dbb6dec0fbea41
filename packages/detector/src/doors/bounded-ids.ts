import { createHash } from 'node:crypto';
import { ATTR_JSONRPC_REQUEST_ID, ATTR_MCP_SESSION_ID, ATTR_MCP_STREAM_ID } from '@resumewatch/semconv';
import type { AttributeValue, SpanRecord } from '../core/types.js';

/** Default of --max-id-bytes. */
export const DEFAULT_MAX_ID_BYTES = 256;

/** The shortest bound honoured: room for a few characters of the value and its hash suffix. */
export const MIN_ID_BYTES = 32;
const SUFFIX_BYTES = 17; // '~' and 16 hex digits

/**
 * Bounds a string in UTF-8 bytes before the detector keeps it (ids, service names): a longer value is
 * cut at a character boundary and suffixed with `~` and the first 16 hex digits of the SHA-256 of the
 * whole value, so distinct long values stay distinct and the same value always maps to the same string.
 * The result is a fresh flat string: it never holds on to the (possibly megabytes long) original.
 */
export class IdBounder {
  readonly maxBytes: number;
  /** Strings this short cannot exceed maxBytes whatever their characters (3 bytes per UTF-16 unit at most). */
  readonly safeLength: number;
  /** Values cut so far (for the soak figures and tests). */
  cut = 0;
  /** The last value cut and its result: every span of a resource carries the same long service name. */
  private lastIn = '';
  private lastOut = '';

  constructor(maxBytes: number) {
    this.maxBytes = Math.max(MIN_ID_BYTES, Math.floor(maxBytes));
    this.safeLength = Math.floor(this.maxBytes / 3);
  }

  bound(s: string): string {
    if (s.length <= this.safeLength) return s;
    if (s.length <= this.maxBytes && Buffer.byteLength(s, 'utf8') <= this.maxBytes) return s;
    if (s === this.lastIn) return this.lastOut;
    this.cut++;
    const keep = this.maxBytes - SUFFIX_BYTES;
    let bytes = 0;
    let i = 0;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      const pair = c >= 0xd800 && c < 0xdc00 && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
      const w = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
      if (bytes + w > keep) break;
      bytes += w;
      i += pair ? 2 : 1;
    }
    // Through a Buffer: a copy, where s.slice() could be a view that keeps all of s alive.
    const head = Buffer.from(s.slice(0, i), 'utf8').toString('utf8');
    this.lastIn = s;
    this.lastOut = `${head}~${createHash('sha256').update(s, 'utf8').digest('hex').slice(0, 16)}`;
    return this.lastOut;
  }
}

/**
 * Bounds, in place, every string of a span record the detector may keep or publish (service, session
 * and request ids; stream ids it hashes), before the core sees it: a megabyte id costs its request, not the state.
 * The three attributes are read by three statements, not a loop over their keys: one lookup site per key
 * stays fast on the records' many shapes, where one site for all three keys takes V8's generic path (per span).
 */
export function boundSpanStrings(s: SpanRecord, ids: IdBounder): void {
  s.service = ids.bound(s.service);
  const a = s.attributes as Record<string, AttributeValue | undefined>;
  const session = a[ATTR_MCP_SESSION_ID];
  if (typeof session === 'string' && session.length > ids.safeLength) a[ATTR_MCP_SESSION_ID] = ids.bound(session);
  const request = a[ATTR_JSONRPC_REQUEST_ID];
  if (typeof request === 'string' && request.length > ids.safeLength) a[ATTR_JSONRPC_REQUEST_ID] = ids.bound(request);
  const stream = a[ATTR_MCP_STREAM_ID];
  if (typeof stream === 'string' && stream.length > ids.safeLength) a[ATTR_MCP_STREAM_ID] = ids.bound(stream);
}
