import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';
import { BoundedMap } from '@resumewatch/bounded';
import { META_IDEMPOTENCY_KEY } from '@resumewatch/semconv';
import { writeCanonicalJson } from './canonical-json.js';
import { requestTarget } from './jsonrpc.js';
import type { JsonRpcRequest } from './jsonrpc.js';

/**
 * "Is this request a re-issue of a broken one?", shared by the guard and the instrumentation. In the
 * 2026-07-28 era a client that lost a request's response stream before its result sends the request
 * again under a new id: the same method, the same name (`Mcp-Name`: tool, prompt or resource) and the
 * same arguments. Requests are compared by a keyed digest of those three, never by their raw values.
 */

/** The MCP method that runs a tool: the one whose re-issue repeats a side effect. */
export const TOOLS_CALL_METHOD = 'tools/call';

/** The methods whose requests name the work they ask for (a tool, a prompt, a resource): what can be re-issued. */
const REISSUABLE_METHODS: ReadonlySet<string> = new Set([TOOLS_CALL_METHOD, 'prompts/get', 'resources/read']);

/**
 * The name of the work a request asks for (`Mcp-Name`: its tool, prompt or resource), when its method
 * is one whose re-issue repeats that work; undefined for any other request (initialize, list calls, ...).
 */
export function reissuableTarget(request: JsonRpcRequest): string | undefined {
  return REISSUABLE_METHODS.has(request.method) ? requestTarget(request) : undefined;
}

/** How long a broken request waits for its re-issue, unless the caller says otherwise: 10 min. */
export const DEFAULT_REISSUE_WINDOW_MS = 600_000;

/** Characters of hex kept of the keyed digest: 128 bits, as the instrumentation's id policy keeps. */
const DIGEST_HEX_CHARS = 32;

/**
 * JSON text of a value with every object's keys sorted, so that two argument objects that differ only
 * in key order give one text. Members JSON.stringify would drop (undefined, functions) are dropped.
 * Any depth: a tree past the fast path's depth is written by an explicit stack (canonical-json.ts),
 * never by recursion, so arguments nested 100,000 deep give their text and never overflow the stack.
 */
export function canonicalJson(value: unknown): string {
  // Arguments as clients send them are plain JSON whose keys are usually in order already: their
  // JSON text is then the canonical one, without a sorted copy of every object (JSON.stringify, native,
  // is safe there: `inCanonicalOrder` says yes only to a tree at most MAX_ORDER_DEPTH deep).
  if (inCanonicalOrder(value, 0)) return JSON.stringify(value);
  let text = '';
  const written = writeCanonicalJson(value, (part) => (text += part));
  return written ? text : (undefined as unknown as string);
}

/** Nesting past which `inCanonicalOrder` does not look (the explicit stack's way writes the text instead). */
const MAX_ORDER_DEPTH = 32;

/**
 * Whether JSON.stringify of `value` is its canonical text already: plain objects (and arrays, and
 * primitives) only, each object's keys in the order `canonicalJson` sorts them to, and no toJSON. Its
 * recursion is bounded by MAX_ORDER_DEPTH: deeper trees answer no.
 */
function inCanonicalOrder(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (depth > MAX_ORDER_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!inCanonicalOrder(value[i], depth + 1)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  if ('toJSON' in value) return false;
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    if (i > 0 && !(keys[i - 1]! < keys[i]!)) return false;
    if (!inCanonicalOrder((value as Record<string, unknown>)[keys[i]!], depth + 1)) return false;
  }
  return true;
}

type OneShotHash = (algorithm: string, data: string, encoding: 'hex' | 'buffer') => string | Buffer;
const oneShot = (crypto as { hash?: OneShotHash }).hash;

/** SHA-256 of a text, hex: the one-shot `crypto.hash` where Node has it (20.12 and later), else a Hash. */
const sha256Hex = (text: string): string =>
  oneShot ? (oneShot('sha256', text, 'hex') as string) : createHash('sha256').update(text).digest('hex');

/** SHA-256 of a text, its bytes: the one-shot `crypto.hash` where Node has it, else a Hash. */
const sha256Bytes = (text: string): Buffer =>
  oneShot ? (oneShot('sha256', text, 'buffer') as Buffer) : createHash('sha256').update(text).digest();

/** Characters of canonical text gathered before they are fed to the hash (the slow path's memory bound). */
const HASH_PART_CHARS = 16_384;

/**
 * The unkeyed digest of the work a request asks for: SHA-256 of its method, its name and the canonical
 * JSON of `params.arguments`, hex. Nothing else of the params counts: `_meta` (a progress token, an
 * idempotency key) and a Multi Round-Trip round's `inputResponses` and `requestState` differ between
 * attempts of one call. The observer computes it once, when it describes the request
 * (`RequestRecord.workDigest`), so that no record keeps the arguments; it never leaves the process:
 * what does is keyed (`keyedArgumentsDigest`). The whole arguments count, not a bounded prefix: two
 * calls that differ past a prefix are two calls, and a re-issue inherits its first attempt's idempotency
 * key. Its cost is linear in the arguments, which the request body's byte cap bounds.
 */
export function requestWorkDigest(request: JsonRpcRequest): string {
  const name = requestTarget(request) ?? '';
  const args = request.params?.arguments;
  const head = `${request.method}\n${name}\n`;
  // One text hashed at once: the same digest as the parts fed to one hash in turn.
  if (args === undefined) return sha256Hex(head);
  if (inCanonicalOrder(args, 0)) return sha256Hex(head + (JSON.stringify(args) ?? ''));
  // Deep or unsorted arguments: their canonical text is hashed as it is written, a part at a time.
  const hash = createHash('sha256').update(head);
  let part = '';
  writeCanonicalJson(args, (text) => {
    part += text;
    if (part.length >= HASH_PART_CHARS) {
      hash.update(part);
      part = '';
    }
  });
  return hash.update(part).digest('hex');
}

/**
 * The keyed digest of a request's work, from its unkeyed digest (`RequestRecord.workDigest`): SHA-256
 * of a secret prefix made of `key` (`keyPrefix`) and the unkeyed digest, hex, its first 128 bits. What
 * leaves the process; processes that compare digests share the key. One one-shot hash a request, where an
 * HMAC was a Hmac object and two hashes (about 46 k instructions against 17 k on Node 20): the output is
 * cut to half the hash's state, so no length extension makes another digest of the key from it.
 */
export function keyedArgumentsDigest(workDigest: string, key: string | Uint8Array): string {
  // The hex of the first 16 bytes alone: a slice of the whole hex would be a V8 sliced string that keeps
  // its 64-character parent alive as long as the digest (a span attribute, a re-issue key: minutes).
  return sha256Bytes(keyPrefix(key) + workDigest).toString('hex', 0, DIGEST_HEX_CHARS / 2);
}

/** The prefixes of the keys given as bytes (a process's random key, a guard's): made once per key. */
const BYTE_KEY_PREFIXES = new WeakMap<Uint8Array, string>();
/** The last key given as text (an id policy's `hmac` key) and its prefix. */
let textKey: string | undefined;
let textKeyPrefix = '';

/**
 * The secret prefix of `key`: the hex SHA-256 of its bytes under a label (a key of any length is one
 * block of fixed length), and a separator the unkeyed digest (hex) never holds.
 */
function keyPrefix(key: string | Uint8Array): string {
  if (typeof key === 'string') {
    if (key !== textKey) {
      textKeyPrefix = prefixOf(Buffer.from(key, 'utf8'));
      textKey = key;
    }
    return textKeyPrefix;
  }
  let prefix = BYTE_KEY_PREFIXES.get(key);
  if (prefix === undefined) {
    prefix = prefixOf(key);
    BYTE_KEY_PREFIXES.set(key, prefix);
  }
  return prefix;
}

function prefixOf(key: Uint8Array): string {
  return `${createHash('sha256').update('resumewatch arguments digest key\n').update(key).digest('hex')}\n`;
}

/**
 * The keyed digest of the work a request asks for (its method, its name and its arguments, see
 * `requestWorkDigest`): `keyedArgumentsDigest` of its unkeyed digest.
 */
export function requestArgumentsDigest(request: JsonRpcRequest, key: string | Uint8Array): string {
  return keyedArgumentsDigest(requestWorkDigest(request), key);
}

/**
 * A Multi Round-Trip round: the request answers the server's input request (`inputResponses`). It is
 * the same call going on, never a re-issue.
 */
export function isInputRound(request: JsonRpcRequest): boolean {
  return request.params?.inputResponses !== undefined;
}

/**
 * The idempotency key a request carries in its `_meta` (META_IDEMPOTENCY_KEY of @resumewatch/semconv:
 * one logical call, the same on every re-issue of it), when it is a string.
 */
export function requestIdempotencyKey(request: JsonRpcRequest): string | undefined {
  const meta = request.params?._meta;
  const key =
    typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[META_IDEMPOTENCY_KEY] : undefined;
  return typeof key === 'string' ? key : undefined;
}

export interface BrokenRequestsOptions {
  /** How long a broken request can be matched by its re-issue. Default DEFAULT_REISSUE_WINDOW_MS. */
  windowMs?: number;
  /** Most broken requests held; the oldest is dropped beyond it. Default 10,000. */
  maxEntries?: number;
  now?: () => number;
}

/**
 * Broken requests waiting for their re-issue, by digest (prefix the digest with a client's scope when
 * one index serves many clients: a re-issue is a request of the same client). Bounded in count and
 * time. What is kept per broken request (`T`) is the caller's: a span context, a report, a key.
 */
export class BrokenRequests<T> {
  private readonly broken: BoundedMap<string, T>;

  constructor(options: BrokenRequestsOptions = {}) {
    const windowMs = options.windowMs ?? DEFAULT_REISSUE_WINDOW_MS;
    if (!(windowMs > 0)) throw new RangeError(`windowMs must be positive, got ${windowMs}`);
    this.broken = new BoundedMap(options.maxEntries ?? 10_000, windowMs, options.now ?? Date.now);
  }

  /** A request with this digest lost its response stream before its result. A later one with it replaces it. */
  noteBroken(digest: string, attempt: T): void {
    this.broken.set(digest, attempt);
  }

  /** The broken request a new request with this digest would re-issue, left in place. */
  peek(digest: string): T | undefined {
    return this.broken.get(digest);
  }

  /**
   * The broken request this new request re-issues (same digest, within the window), taken out: one
   * broken request is re-issued once. Undefined when there is none; never call it for an input round.
   */
  takeReissued(digest: string): T | undefined {
    const attempt = this.broken.get(digest);
    if (attempt !== undefined) this.broken.delete(digest);
    return attempt;
  }

  /** Broken requests held now (expired ones dropped first). */
  get size(): number {
    this.broken.prune();
    return this.broken.size;
  }

  /** Broken requests pushed out by the cap before their window ended. */
  get evictions(): number {
    return this.broken.evictions;
  }
}
