import { META_IDEMPOTENCY_KEY } from '@resumewatch/semconv';
import { HEADER_PROTOCOL_VERSION, headerValue, isRequest, isJsonRpcMessage } from '@resumewatch/wire';
import type { FetchLike, JsonRpcRequest } from '@resumewatch/wire';
import { isStatelessEra } from './reissues.js';
import type { ReissueTracker } from './reissues.js';

/** The request with its idempotency key in `params._meta`, or the same object when it needs none. */
function keyed(message: unknown, tracker: ReissueTracker): unknown {
  if (!isJsonRpcMessage(message) || !isRequest(message)) return message;
  const key = tracker.idempotencyKeyFor(message);
  if (key === undefined) return message;
  const params = message.params ?? {};
  const meta = (params._meta ?? {}) as Record<string, unknown>;
  if (meta[META_IDEMPOTENCY_KEY] === key) return message;
  return { ...message, params: { ...params, _meta: { ...meta, [META_IDEMPOTENCY_KEY]: key } } } as JsonRpcRequest;
}

/** A JSON-RPC body with every `tools/call` carrying its idempotency key; the same text when none needs one. */
function keyedBody(body: string, tracker: ReissueTracker): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  const next = Array.isArray(parsed) ? parsed.map((m) => keyed(m, tracker)) : keyed(parsed, tracker);
  const changed = Array.isArray(parsed) ? (next as unknown[]).some((m, i) => m !== parsed[i]) : next !== parsed;
  if (!changed) return body;
  try {
    return JSON.stringify(next);
  } catch {
    // Arguments nested deeper than JSON.stringify's recursion goes (JSON.parse took them): the body
    // goes as the client wrote it, without the key, rather than the call failing in the client's fetch.
    return body;
  }
}

/**
 * A fetch that adds an idempotency key (`_meta` META_IDEMPOTENCY_KEY of @resumewatch/semconv) to every
 * 2026-07-28 `tools/call` it sends, the key of the broken attempt a re-issue repeats. It must sit
 * outside the wire observer (call it with the observer's wrapped fetch): the observer, and the guard
 * with it, read the body as it leaves. Only a body held as text is keyed (the SDKs send text).
 */
export function withIdempotencyKeys(fetch: FetchLike, tracker: ReissueTracker): FetchLike {
  return (input, init) => {
    const body = init?.body;
    if (typeof body !== 'string' || !body.includes(`"tools/call"`)) return fetch(input, init);
    const headers = init!.headers ?? (input instanceof Request ? input.headers : undefined);
    if (!isStatelessEra(headerValue(headers, HEADER_PROTOCOL_VERSION))) return fetch(input, init);
    const next = keyedBody(body, tracker);
    return fetch(input, next === body ? init : { ...init, body: next });
  };
}
