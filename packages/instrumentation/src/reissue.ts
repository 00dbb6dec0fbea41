import { createHmac } from 'node:crypto';
import type { Hmac } from 'node:crypto';
import type { SpanContext } from '@opentelemetry/api';
import { BoundedMap } from '@resumewatch/bounded';
import type { JsonRpcRequest } from '@resumewatch/wire';

/**
 * The 2026-07-28 era's re-issue: a client whose request's stream broke before its result sends the same
 * request again under a new id. The same work is recognised by a keyed digest of the method, the name
 * (tool, prompt or resource) and the arguments, never by their raw values.
 */

/** The methods whose requests ask for work a re-issue would repeat. */
const DIGESTED_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** Default of the `reissueWindowMs` option: how long a broken request waits for its re-issue. */
export const DEFAULT_REISSUE_WINDOW_MS = 300_000;
/** Broken requests remembered at once; the oldest is forgotten first. */
const MAX_BROKEN = 10_000;

/** What a request carries that the re-issue check needs. */
export interface ReissueFacts {
  /** The keyed digest, hex; undefined for a method that is not digested. */
  readonly digest: string | undefined;
  /** A Multi Round-Trip round: the request carries `inputResponses`, so it is never a re-issue. */
  readonly inputRound: boolean;
}

const NOT_DIGESTED: ReissueFacts = { digest: undefined, inputRound: false };

/** The digest and the input-round flag of a request. */
export function reissueFacts(
  key: string | Uint8Array,
  request: JsonRpcRequest,
  target: string | undefined,
): ReissueFacts {
  if (!DIGESTED_METHODS.has(request.method)) return NOT_DIGESTED;
  const params = request.params;
  const hmac = createHmac('sha256', key);
  // Length-prefixed parts: no method and name can be spelled as another pair.
  for (const part of [request.method, target ?? '']) hmac.update(`${part.length}:${part}`);
  writeCanonical(hmac, withoutEnvelope(params?.arguments));
  return { digest: hmac.digest('hex'), inputRound: params?.inputResponses !== undefined };
}

/** The arguments without what the client adds per attempt (`_meta`, `inputResponses`). */
function withoutEnvelope(value: unknown): unknown {
  if (!isPlainObject(value) || (!('_meta' in value) && !('inputResponses' in value))) return value;
  const { _meta: _ignoredMeta, inputResponses: _ignoredInput, ...rest } = value;
  return rest;
}

/** JSON with object keys sorted at every level: two equal argument objects give equal text whatever their key order. */
function writeCanonical(hmac: Hmac, value: unknown): void {
  if (Array.isArray(value)) {
    hmac.update('[');
    value.forEach((item, i) => {
      if (i > 0) hmac.update(',');
      writeCanonical(hmac, item === undefined ? null : item);
    });
    hmac.update(']');
  } else if (isPlainObject(value)) {
    hmac.update('{');
    let first = true;
    for (const name of Object.keys(value).sort()) {
      if (value[name] === undefined) continue;
      hmac.update(`${first ? '' : ','}${JSON.stringify(name)}:`);
      writeCanonical(hmac, value[name]);
      first = false;
    }
    hmac.update('}');
  } else {
    hmac.update(JSON.stringify(value) ?? 'null');
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The broken requests of one client (one instrumented fetch) by digest, for `reissueWindowMs`: the
 * next request with the same digest re-issues the latest of them, and takes it (a later one re-issues
 * only a request that broke after it).
 */
export class BrokenRequests {
  private readonly broken: BoundedMap<string, SpanContext>;

  constructor(windowMs: number, now: () => number = Date.now) {
    this.broken = new BoundedMap(MAX_BROKEN, windowMs, now);
  }

  /** A request with this digest broke (its stream ended without its result, or the client closed it). */
  broke(digest: string, span: SpanContext): void {
    this.broken.set(digest, span);
  }

  /** The span of the broken request a new request with this digest re-issues, if any (taken). */
  take(digest: string): SpanContext | undefined {
    const span = this.broken.get(digest);
    if (span !== undefined) this.broken.delete(digest);
    return span;
  }

  get size(): number {
    return this.broken.size;
  }
}
