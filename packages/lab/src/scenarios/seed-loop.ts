import { McpHttpSession } from '../mcp-http-client.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import { runSeedClient, seedLoopCounts, seedLoopDetails } from './seed-client.js';
import type { ScenarioSummary } from './summary.js';

/**
 * The seed's failure: a finished request is "resumed" with a stale cursor after every clean close;
 * the server replays the final result on a new stream each time, until its buffer evicts the cursor.
 */
export async function runSeedLoop(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, fetch, maxReconnects } = resolveOptions(options);
  const session = await McpHttpSession.open(serverUrl, fetch, 'seed-loop');
  const loop = await runSeedClient(session, { count: 3, delay: 5, maxReconnects });
  const last = loop.resumeStatuses.at(-1);
  return {
    scenario: 'seed-loop',
    sessionId: session.sessionId,
    ...seedLoopCounts(loop),
    finding:
      `The final result of one tools/call arrived ${loop.deliveries.length} time(s) on ${loop.distinctTerminalStreams} distinct HTTP response(s); ` +
      (loop.stoppedBecause === 'resume-rejected'
        ? // The fetch (a guard) refused the last resume in the process: it was attempted, not sent.
          `the client attempted ${loop.reconnects} resume(s) with the stale cursor; ${loop.resumeStatuses.length} left the process, ` +
          `the last was refused in the process (${loop.resumeErrors.at(-1)?.split(';')[0] ?? 'resume-rejected'}).`
        : `the client reconnected ${loop.reconnects} time(s) with the stale cursor and stopped on ${loop.stoppedBecause}` +
          (last === undefined ? '.' : ` (last resume answered ${last}).`)),
    durationMs: Date.now() - started,
    details: seedLoopDetails(loop),
  };
}
