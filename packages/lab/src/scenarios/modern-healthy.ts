import { startModernLabServer } from '../modern/server.js';
import { resolveOptions } from './options.js';
import type { ScenarioOptions } from './options.js';
import { exchangeLines, protocolVersionsIn, toolCallPosts } from './modern-facts.js';
import { connectSdkSession, responsesPerRequest } from './sdk-clients.js';
import type { ScenarioSummary } from './summary.js';

/**
 * modern-healthy: the v2 client (`versionNegotiation: auto`) and the v2 server in 2026-07-28 only
 * mode (its own, in-process): one `charge` call, one result, one side effect, nothing resumed.
 */
export async function runModernHealthy(input: ScenarioOptions): Promise<ScenarioSummary> {
  const options = resolveOptions(input);
  const started = Date.now();
  const server = await startModernLabServer({ eras: 'modern-only', ...options.modernServer });
  try {
    const client = await connectSdkSession('sdk-v2', server.url, options.fetch, 'modern-healthy', {
      negotiation: 'auto',
    });
    const key = `modern-healthy-${started}`;
    const result = await client.callTool('charge', { key, workMs: 0 }, { onprogress: () => undefined });
    const protocolVersion = client.protocolVersion();
    await client.close();
    const posts = toolCallPosts(client.log, 'charge');
    const sideEffects = server.sideEffectCount(key);
    return {
      scenario: 'modern-healthy',
      sessionId: client.sessionId(),
      terminalDeliveries: posts.reduce((n, post) => n + post.responses.length, 0),
      distinctTerminalStreams: posts.filter((post) => post.responses.length > 0).length,
      reconnects: 0,
      resumeStatuses: [],
      resultsPerRequest: responsesPerRequest(client.log),
      sideEffectCount: sideEffects,
      finding: `The v2 client negotiated ${protocolVersion ?? '-'} with the v2 server; ${posts.length} tools/call, one result, ${sideEffects} side effect(s), no session.`,
      durationMs: Date.now() - started,
      details: {
        client: 'sdk-v2',
        protocolVersion,
        protocolVersions: protocolVersionsIn(client.log),
        sideEffects,
        reissues: posts.length - 1,
        statuses: client.log.map((entry) => entry.status),
        exchanges: exchangeLines(client.log),
        resultText: result.content?.[0]?.text,
        serverExecutions: server.executions(),
        sdkErrors: client.errors,
      },
    };
  } finally {
    await server.close();
  }
}
