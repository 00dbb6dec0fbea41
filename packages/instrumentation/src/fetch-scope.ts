import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Marks the calls an instrumented fetch makes to the fetch below it. The process-wide fetch patch of
 * `register` passes such calls through untouched, so an exchange is instrumented once whether it came
 * through a patched SDK transport, a manual `instrumentFetch()` or the global fetch.
 */
const scope = new AsyncLocalStorage<true>();

export function callBelowInstrumentedFetch<T>(call: () => T): T {
  return scope.run(true, call);
}

/** Whether the current call comes from inside an instrumented fetch. */
export function isBelowInstrumentedFetch(): boolean {
  return scope.getStore() === true;
}
