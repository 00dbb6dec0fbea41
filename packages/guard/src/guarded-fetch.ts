import { WireObserver } from '@resumewatch/wire';
import type { FetchLike, WireObserverOptions } from '@resumewatch/wire';
import { createGuardListener } from './listener.js';
import type { GuardListener, GuardOptions } from './listener.js';

export interface GuardedFetchOptions extends GuardOptions {
  /** Options of the wire observer guardedFetch creates. */
  wire?: WireObserverOptions;
}

export type GuardedFetch = FetchLike & {
  readonly listener: GuardListener;
  readonly observer: WireObserver;
};

/**
 * A fetch that applies the guard to Streamable HTTP traffic: pass it as the `fetch` option of an MCP
 * client transport. To share one observer with the instrumentation, add `createGuardListener()` to
 * that observer with `{ filters: true }` instead.
 */
export function guardedFetch(fetchImpl?: FetchLike | GuardedFetchOptions, options?: GuardedFetchOptions): GuardedFetch {
  let base: FetchLike | undefined;
  if (typeof fetchImpl === 'function') {
    base = fetchImpl;
  } else if (fetchImpl !== undefined) {
    options = fetchImpl;
  }
  const listener = createGuardListener(options);
  const observer = new WireObserver(options?.wire).addListener(listener, { filters: true });
  const observed = observer.wrap(base ?? ((input, init) => globalThis.fetch(input, init)));
  // Outside the observer: a poll it delays is observed when it leaves; a re-issue it answers, never.
  const tasked = listener.withTaskGuard(observed);
  // The keys go into the body before the task guard, the observer (and the guard) read it.
  const keyed = options?.idempotencyKey ? listener.withIdempotencyKeys(tasked) : tasked;
  // Outermost: a request answered with the server's own earlier refusal is seen by nothing else.
  const wrapped = listener.withSessionRefusals(keyed);
  return Object.assign(wrapped, { listener, observer });
}
