import { McpHttpSession } from '../mcp-http-client.js';
import { storeVariantUrl } from '../store-variants.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import { runSeedClient, seedLoopCounts, seedLoopDetails } from './seed-client.js';
import type { ScenarioSummary } from './summary.js';

/**
 * The seed loop against a store that never evicts a finished stream (`never-evict`, like the SDK's
 * example store and the everything server's): every reconnect with the stale cursor answers 200 and
 * replays the final result on a new stream, forever. Only the client's cap (`maxReconnects`, default
 * 20) stops it.
 */
export async function runEndlessLoop(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, fetch, maxReconnects } = resolveOptions(options);
  const session = await McpHttpSession.open(storeVariantUrl(serverUrl, 'never-evict'), fetch, 'endless-loop');
  const loop = await runSeedClient(session, { count: 3, delay: 5, maxReconnects });
  await session.close().catch(() => undefined);
  return {
    scenario: 'endless-loop',
    sessionId: session.sessionId,
    ...seedLoopCounts(loop),
    resultsPerRequest: { [String(loop.call.id)]: loop.deliveries.length },
    finding:
      `The server never evicts: the final result arrived ${loop.deliveries.length} time(s) on ${loop.distinctTerminalStreams} distinct response(s); ` +
      `every resume answered ${[...new Set(loop.resumeStatuses)].join('/') || '-'} and the client stopped on ${loop.stoppedBecause}.`,
    durationMs: Date.now() - started,
    details: seedLoopDetails(loop),
  };
}
