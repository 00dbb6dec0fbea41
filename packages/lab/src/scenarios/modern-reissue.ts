import { startFaultProxy } from '../fault-proxy.js';
import { startModernLabServer } from '../modern/server.js';
import type { ResolvedScenarioOptions } from './options.js';
import { exchangeLines, protocolVersionsIn, settled, toolCallPosts } from './modern-facts.js';
import { connectSdkSession, responsesPerRequest, waitUntil } from './sdk-clients.js';
import type { ScenarioName, ScenarioSummary } from './summary.js';

/** How long the tool works when nothing cancels it: far past the cut, which follows its first event. */
const WORK_MS = 1000;
/** The first attempt's request timeout: the v2 SDK waits this long on a broken 2026-07-28 stream. */
const FIRST_ATTEMPT_TIMEOUT_MS = 1500;

/**
 * A 2026-07-28 call whose response stream breaks mid-call, then re-issued. The v2 client
 * (`versionNegotiation: auto`) calls `tool` through the fault proxy, which cuts the response after
 * its first SSE event (the progress notification); closing the stream is the cancellation. The v2
 * SDK does not re-issue: the call fails with its request timeout, and the application re-issues the
 * same call (same tool, same arguments), as a real application would. `charge` ignores the abort
 * signal and charges anyway (two side effects); `charge_cancellable` stops (one). With the server's
 * `idempotencyMetaKey`, `charge` becomes `charge_once`: a re-issue carrying the first attempt's key
 * (the guard's `idempotencyKey`) does not charge again.
 */
export async function runModernReissue(
  scenario: Extract<ScenarioName, 'modern-broken-reissue' | 'modern-honours-cancel'>,
  scenarioTool: 'charge' | 'charge_cancellable',
  options: ResolvedScenarioOptions,
): Promise<ScenarioSummary> {
  const started = Date.now();
  // A server that checks idempotency keys: the same charge behind the check, so a keyed re-issue is seen.
  const tool =
    scenarioTool === 'charge' && options.modernServer.idempotencyMetaKey !== undefined ? 'charge_once' : scenarioTool;
  const server = await startModernLabServer({ eras: 'modern-only', ...options.modernServer });
  const proxy = await startFaultProxy({ target: server.url });
  try {
    const client = await connectSdkSession('sdk-v2', proxy.url, options.fetch, scenario, { negotiation: 'auto' });
    const args = { key: `${scenario}-${started}`, workMs: WORK_MS };
    proxy.armCut({ method: 'POST', afterEvents: 1 });
    let progressSeen = 0;
    const firstAttempt = await settled(
      client.callTool(tool, args, { timeout: FIRST_ATTEMPT_TIMEOUT_MS, onprogress: () => void progressSeen++ }),
    );
    const postsBeforeReissue = toolCallPosts(client.log, tool).length;
    // The first attempt's fate on the server: it ran on (charged) or stopped when its stream closed.
    await waitUntil(() => server.executions().length > 0, 3000);
    const reissue = await settled(client.callTool(tool, args, { onprogress: () => undefined }));
    const protocolVersion = client.protocolVersion();
    await client.close();
    const posts = toolCallPosts(client.log, tool);
    const sideEffects = server.sideEffectCount(args.key);
    const first = server.executions()[0];
    return {
      scenario,
      sessionId: client.sessionId(),
      terminalDeliveries: posts.reduce((n, post) => n + post.responses.length, 0),
      distinctTerminalStreams: posts.filter((post) => post.responses.length > 0).length,
      reconnects: 0,
      resumeStatuses: [],
      resultsPerRequest: responsesPerRequest(client.log),
      sideEffectCount: sideEffects,
      finding:
        `The stream of ${tool} broke after ${progressSeen} progress update(s); the v2 SDK sent ${postsBeforeReissue - 1} re-issue(s) ` +
        `and failed the call (${firstAttempt}); the application re-issued it; the server ${first?.outcome === 'charged' ? 'finished the first attempt anyway' : 'stopped the first attempt'}: ${sideEffects} side effect(s).`,
      durationMs: Date.now() - started,
      details: {
        client: 'sdk-v2',
        tool,
        protocolVersion,
        protocolVersions: protocolVersionsIn(client.log),
        sideEffects,
        /** Re-issues the v2 SDK sent by itself (tools/call POSTs before the application's). */
        sdkReissues: postsBeforeReissue - 1,
        /** Re-issues the application sent. */
        reissues: posts.length - postsBeforeReissue,
        requestIds: posts.map((post) => post.rpcId),
        firstAttempt: {
          outcome: firstAttempt,
          progressSeen,
          streamEnd: posts[0]?.end,
          serverOutcome: first?.outcome,
          completedAfterCancellation: first?.outcome === 'charged' && first.cancelledBeforeEnd,
        },
        reissueOutcome: reissue,
        statuses: client.log.map((entry) => entry.status),
        exchanges: exchangeLines(client.log),
        cuts: proxy.cuts.length,
        serverExecutions: server.executions(),
        sdkErrors: client.errors,
      },
    };
  } finally {
    await proxy.close();
    await server.close();
  }
}
