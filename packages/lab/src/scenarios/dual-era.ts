import { startModernLabServer } from '../modern/server.js';
import { resolveOptions } from './options.js';
import type { ScenarioOptions } from './options.js';
import { exchangeLines, protocolVersionsIn, settled, toolCallPosts } from './modern-facts.js';
import { connectSdkSession } from './sdk-clients.js';
import type { SdkSession } from './sdk-clients.js';
import type { ScenarioSummary } from './summary.js';

/**
 * dual-era: one v2 server serving both eras at once (2026-07-28 on `createMcpHandler`, the session
 * era on the SDK's sessionful transport with an event store, routed by `isLegacyRequest`). The SDK
 * 1.x client (session era: a session id, priming event ids it could resume from) and the v2 client
 * (`versionNegotiation: auto`: 2026-07-28) call `charge` concurrently; both complete.
 */
export async function runDualEra(input: ScenarioOptions): Promise<ScenarioSummary> {
  const options = resolveOptions(input);
  const started = Date.now();
  const server = await startModernLabServer({ eras: 'dual', ...options.modernServer });
  try {
    const [v1, v2] = await Promise.all([
      connectSdkSession('sdk', server.url, options.fetch, 'dual-era-v1'),
      connectSdkSession('sdk-v2', server.url, options.fetch, 'dual-era-v2', { negotiation: 'auto' }),
    ]);
    const keys = { sdk: `dual-era-v1-${started}`, 'sdk-v2': `dual-era-v2-${started}` };
    const [v1Outcome, v2Outcome] = await Promise.all([
      settled(v1.callTool('charge', { key: keys.sdk, workMs: 100 }, { onprogress: () => undefined })),
      settled(v2.callTool('charge', { key: keys['sdk-v2'], workMs: 100 }, { onprogress: () => undefined })),
    ]);
    const facts = (client: SdkSession, outcome: string) => {
      const post = toolCallPosts(client.log, 'charge')[0];
      return {
        outcome,
        protocolVersion: client.protocolVersion(),
        protocolVersions: protocolVersionsIn(client.log),
        hasSession: client.sessionId() !== undefined,
        /** SSE event ids on the call's stream: what a session-era client resumes from. */
        resumableEventIds: post?.eventIds.length ?? 0,
        sideEffects: server.sideEffectCount(keys[client.kind]),
        statuses: client.log.map((entry) => entry.status),
        exchanges: exchangeLines(client.log),
        sdkErrors: client.errors,
      };
    };
    const sessionEra = facts(v1, v1Outcome);
    const modernEra = facts(v2, v2Outcome);
    await v1.terminate().catch(() => undefined);
    await Promise.all([v1.close(), v2.close()]);
    const legs = server
      .exchanges()
      .map((exchange) => `${exchange.leg} ${exchange.method} ${exchange.protocolVersion ?? '-'} ${exchange.status}`);
    return {
      scenario: 'dual-era',
      sessionId: v1.sessionId(),
      terminalDeliveries: [v1, v2].reduce((n, c) => n + (toolCallPosts(c.log, 'charge')[0]?.responses.length ?? 0), 0),
      distinctTerminalStreams: 2,
      reconnects: 0,
      resumeStatuses: [],
      sideEffectCount: sessionEra.sideEffects + modernEra.sideEffects,
      finding: `One v2 server served the SDK 1.x client at ${sessionEra.protocolVersion ?? '-'} (session: ${sessionEra.hasSession}) and the v2 client at ${modernEra.protocolVersion ?? '-'} (session: ${modernEra.hasSession}) at once; both calls ${v1Outcome === 'resolved' && v2Outcome === 'resolved' ? 'completed' : 'did not both complete'}.`,
      durationMs: Date.now() - started,
      details: { sessionEra, modernEra, serverExchanges: legs, reissues: 0 },
    };
  } finally {
    await server.close();
  }
}
