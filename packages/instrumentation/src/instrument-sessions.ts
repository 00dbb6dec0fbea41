import type { FetchLike } from '@resumewatch/wire';
import { tracerSource } from './instrument-fetch.js';
import { recogniseMcpExchange } from './mcp-exchange.js';
import { SessionRouter } from './session-router.js';
import type { InstrumentSessionsOptions, SessionInstrumentedFetch } from './types.js';

/**
 * A fetch for many clients at once (a gateway, a proxy): each MCP session gets its own instrumented
 * fetch, as `instrumentFetch` gives one transport, so the request ids of different clients never meet;
 * session-less exchanges (initialize, 2026-07-28 requests) are each observed on their own until their
 * response names a session. Calls that are not MCP exchanges pass to `fetch` unobserved.
 */
export function instrumentSessions(
  fetch: FetchLike | undefined,
  options: InstrumentSessionsOptions = {},
): SessionInstrumentedFetch {
  const below: FetchLike = fetch ?? ((input, init) => globalThis.fetch(input, init));
  const router = new SessionRouter(below, options, tracerSource(options.tracerProvider), options);
  const routed = ((input, init) => {
    const exchange = recogniseMcpExchange(input, init);
    return exchange === undefined ? below(input, init) : router.route(exchange, input, init);
  }) as SessionInstrumentedFetch;
  Object.defineProperties(routed, {
    stats: { value: () => router.stats() },
    settleDelivery: { value: (response: Response, delivered: boolean) => router.settleDelivery(response, delivered) },
    prune: { value: () => router.prune() },
  });
  return routed;
}
