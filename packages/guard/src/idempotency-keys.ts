import { META_IDEMPOTENCY_KEY, TaskField } from '@resumewatch/semconv';
import {
  HEADER_PROTOCOL_VERSION,
  HEADER_SESSION_ID,
  headerValue,
  isRequest,
  isJsonRpcMessage,
} from '@resumewatch/wire';
import type { FetchLike, JsonRpcRequest } from '@resumewatch/wire';
import { isStatelessEra } from './reissues.js';
import { taskScope } from './tasks.js';

/**
 * The idempotency key a request about to be sent should carry, or undefined when it needs none: `scope`
 * is whose calls these are (taskScope), `stateless` the request's era.
 */
export type KeyFor = (message: JsonRpcRequest, scope: string, stateless: boolean) => string | undefined;

/** The request with its idempotency key in `params._meta`, or the same object when it needs none. */
function keyed(message: unknown, keyFor: (message: JsonRpcRequest) => string | undefined): unknown {
  if (!isJsonRpcMessage(message) || !isRequest(message)) return message;
  const key = keyFor(message);
  if (key === undefined) return message;
  const params = message.params ?? {};
  const meta = (params._meta ?? {}) as Record<string, unknown>;
  if (meta[META_IDEMPOTENCY_KEY] === key) return message;
  return { ...message, params: { ...params, _meta: { ...meta, [META_IDEMPOTENCY_KEY]: key } } } as JsonRpcRequest;
}

/** A JSON-RPC body with every `tools/call` carrying its idempotency key; the same text when none needs one. */
function keyedBody(body: string, keyFor: (message: JsonRpcRequest) => string | undefined): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  const next = Array.isArray(parsed) ? parsed.map((m) => keyed(m, keyFor)) : keyed(parsed, keyFor);
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
 * 2026-07-28 `tools/call` and every task-augmented `tools/call` of the session era (`params.task`) it
 * sends: the key of the attempt a re-issue repeats (a broken one, or the call of a live task). It must
 * sit outside the wire observer (call it with the observer's wrapped fetch): the observer, and the guard
 * with it, read the body as it leaves. Only a body held as text is keyed (the SDKs send text).
 */
export function withIdempotencyKeys(fetch: FetchLike, keyFor: KeyFor): FetchLike {
  return (input, init) => {
    const body = init?.body;
    if (typeof body !== 'string' || !body.includes(`"tools/call"`)) return fetch(input, init);
    const headers = init!.headers ?? (input instanceof Request ? input.headers : undefined);
    const stateless = isStatelessEra(headerValue(headers, HEADER_PROTOCOL_VERSION));
    // The session era keys only calls that ask for a task: a quick look before any parse.
    if (!stateless && !body.includes(`"${TaskField.TASK}"`)) return fetch(input, init);
    const url = input instanceof Request ? input.url : String(input);
    const scope = taskScope(url, headerValue(headers, HEADER_SESSION_ID));
    const next = keyedBody(body, (message) => keyFor(message, scope, stateless));
    return fetch(input, next === body ? init : { ...init, body: next });
  };
}
