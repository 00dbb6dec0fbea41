import { startModernLabServer } from '../modern/server.js';
import { resolveOptions } from './options.js';
import type { ScenarioOptions } from './options.js';
import { exchangeLines, protocolVersionsIn, toolCallPosts } from './modern-facts.js';
import { connectSdkSession, responsesPerRequest } from './sdk-clients.js';
import type { ScenarioSummary } from './summary.js';

/**
 * modern-input-round: a 2026-07-28 Multi Round-Trip round on the real SDKs. `confirm_charge` answers
 * its first call `input_required` with an elicitation; the v2 client fulfils it through its
 * `elicitation/create` handler and sends the call again itself: a new request id, the same tool and
 * arguments, plus `inputResponses` (and `requestState` when the server sent one). Not a re-issue:
 * nothing broke, and the side effect runs once.
 */
export async function runModernInputRound(input: ScenarioOptions): Promise<ScenarioSummary> {
  const options = resolveOptions(input);
  const started = Date.now();
  const server = await startModernLabServer({ eras: 'modern-only', ...options.modernServer });
  try {
    const client = await connectSdkSession('sdk-v2', server.url, options.fetch, 'modern-input-round', {
      negotiation: 'auto',
      acceptElicitation: { confirm: true },
    });
    const key = `modern-input-round-${started}`;
    const result = await client.callTool('confirm_charge', { key });
    const protocolVersion = client.protocolVersion();
    await client.close();
    const posts = toolCallPosts(client.log, 'confirm_charge');
    const sideEffects = server.sideEffectCount(key);
    const rounds = posts.filter((post) => post.inputResponses).length;
    return {
      scenario: 'modern-input-round',
      sessionId: client.sessionId(),
      terminalDeliveries: posts.reduce((n, post) => n + post.responses.length, 0),
      distinctTerminalStreams: posts.filter((post) => post.responses.length > 0).length,
      reconnects: 0,
      resumeStatuses: [],
      resultsPerRequest: responsesPerRequest(client.log),
      sideEffectCount: sideEffects,
      finding: `confirm_charge took ${posts.length} tools/call request(s) (${rounds} carrying inputResponses, sent by the v2 SDK itself); ${sideEffects} side effect(s); no stream broke.`,
      durationMs: Date.now() - started,
      details: {
        client: 'sdk-v2',
        protocolVersion,
        protocolVersions: protocolVersionsIn(client.log),
        sideEffects,
        reissues: 0,
        inputRounds: rounds,
        requestIds: posts.map((post) => post.rpcId),
        carriesInputResponses: posts.map((post) => post.inputResponses),
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
