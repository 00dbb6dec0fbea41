import { hash32 } from './ids.js';

/** Entries of the cache (a power of two). */
const ENTRIES = 1024;
/** Sessions shorter than this are hashed whole each time: there is little to save. */
const MIN_CACHED = 8;
/** Nor longer than this: the cache must not keep more than ENTRIES * MAX_CACHED characters alive. */
const MAX_CACHED = 256;

/**
 * The request table's key hash (RequestSlots.hash: FNV-1a of the session, seeded by the service, then of
 * the request id), the same values, with the session's half remembered for recently seen sessions.
 *
 * Why: FNV-1a in JavaScript costs about 26 instructions a character (each `charCodeAt` checks the
 * string's representation), about 1,200 for a 36-character session id and its request id: the largest
 * part of a stream span's cost in the core. A session makes many requests, and each request's spans
 * come in a few at a time, so the session's half is mostly known already. The values must not change:
 * the keys of attempt streams kept in state files are made from them (RequestSlots.incarnationKey).
 *
 * A direct-mapped cache of ENTRIES (service, session) pairs, its entry chosen by the length and four
 * characters spread over the session id (no full pass), and checked by comparing the session strings
 * (a native comparison, pointer-equal for the same string). A pair that misses is hashed whole and
 * replaces the entry's. Bounded: it holds at most ENTRIES session strings of at most MAX_CACHED characters
 * (which the table holds anyway while their requests are tracked).
 */
export class KeyHasher {
  private readonly sessions: (string | undefined)[] = new Array<string | undefined>(ENTRIES).fill(undefined);
  private readonly services = new Int32Array(ENTRIES);
  private readonly halves = new Int32Array(ENTRIES);

  /** RequestSlots.hash(service, session, request). */
  hash(service: number, session: string, request: string): number {
    return hash32(request, this.sessionHalf(service, session));
  }

  /** hash32(session, seed of service): the part of the key hash that depends on the session. */
  private sessionHalf(service: number, session: string): number {
    const n = session.length;
    const seed = Math.imul(service + 1, 0x9e3779b1);
    if (n < MIN_CACHED || n > MAX_CACHED) return hash32(session, seed);
    const mix =
      session.charCodeAt(n - 1) ^
      (session.charCodeAt(n - 2) << 7) ^
      (session.charCodeAt(n >> 1) << 14) ^
      (session.charCodeAt(n >> 2) << 21) ^
      n ^
      seed;
    const at = Math.imul(mix, 0x85ebca6b) >>> 22;
    if (this.sessions[at] === session && this.services[at] === service) return this.halves[at]! >>> 0;
    const half = hash32(session, seed);
    this.sessions[at] = session;
    this.services[at] = service;
    this.halves[at] = half;
    return half;
  }
}
