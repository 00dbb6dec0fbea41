import type { FetchLike } from '@resumewatch/wire';
import { isBelowInstrumentedFetch, markCallsBelowInstrumentedFetch } from './fetch-scope.js';
import { recogniseMcpExchange } from './mcp-exchange.js';
import { SessionRouter } from './session-router.js';
import type { TracerSource } from './tracer-source.js';
import type { GlobalFetchOptions, GlobalFetchStats, InstrumentFetchOptions } from './types.js';

export interface GlobalFetchPatch {
  stats(): GlobalFetchStats;
  /** Puts back the fetch that was there before. */
  restore(): void;
}

/**
 * Replaces `globalThis.fetch` with one that instruments every MCP Streamable HTTP exchange the process
 * makes, whatever client makes it (SDK v1 or v2, the lab's client, any fetch-based client), and passes
 * every other call straight to the original fetch, its body unread. State is kept apart per (server
 * origin, `Mcp-Session-Id`) by a SessionRouter. Calls made from inside an instrumented fetch (a patched
 * SDK transport, a manual `instrumentFetch()`) pass through: nothing is recorded twice.
 */
export function patchGlobalFetch(
  options: InstrumentFetchOptions,
  tracer: TracerSource,
  limits: GlobalFetchOptions = {},
): GlobalFetchPatch {
  const original = globalThis.fetch;
  const base: FetchLike = (input, init) => original(input, init);
  const router = new SessionRouter(base, options, tracer, limits);

  const patched = function fetch(input: Parameters<FetchLike>[0], init?: RequestInit): Promise<Response> {
    if (isBelowInstrumentedFetch()) return original(input, init);
    const exchange = recogniseMcpExchange(input, init);
    if (exchange === undefined) return original(input, init);
    return router.route(exchange, input, init);
  } as typeof globalThis.fetch;

  markCallsBelowInstrumentedFetch();
  globalThis.fetch = patched;
  return {
    stats: () => router.stats(),
    restore() {
      if (globalThis.fetch === patched) globalThis.fetch = original;
    },
  };
}
