import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Marks the calls an instrumented fetch makes to the fetch below it. The process-wide fetch patch of
 * `register` passes such calls through untouched, so an exchange is instrumented once whether it came
 * through a patched SDK transport, a manual `instrumentFetch()` or the global fetch.
 *
 * The mark is an AsyncLocalStorage scope, made only once the patch is installed: running one turns on
 * async context tracking for every promise of the process, which in the client memory soak cost about
 * 5 KB per live session. Without the patch nobody asks, so no scope is entered.
 */
let scope: AsyncLocalStorage<true> | undefined;

/** Called by the global fetch patch when it is installed. */
export function markCallsBelowInstrumentedFetch(): void {
  scope ??= new AsyncLocalStorage<true>();
}

export function callBelowInstrumentedFetch<T>(call: () => T): T {
  return scope === undefined ? call() : scope.run(true, call);
}

/** Whether the current call comes from inside an instrumented fetch. */
export function isBelowInstrumentedFetch(): boolean {
  return scope?.getStore() === true;
}
