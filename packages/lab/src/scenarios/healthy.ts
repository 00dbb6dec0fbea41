import { randomUUID } from 'node:crypto';
import { McpHttpSession, isResponseTo } from '../mcp-http-client.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import type { ScenarioSummary } from './summary.js';

/** Normal traffic: a streaming tool call and a side effect, each answered once, no resumption. */
export async function runHealthy(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, fetch } = resolveOptions(options);
  const session = await McpHttpSession.open(serverUrl, fetch, 'healthy');
  const streamed = await session.callTool('stream_progress', { count: 3, delay: 5 });
  const charged = await session.callTool('side_effect', { key: `${randomUUID()}:healthy` });
  await session.close().catch(() => undefined);
  const terminal = streamed.read.events.filter((event) => isResponseTo(event.message, streamed.call.id)).length;
  const chargeResponse = charged.read.events.find((event) => isResponseTo(event.message, charged.call.id))?.message;
  const sideEffectCount =
    chargeResponse && 'result' in chargeResponse
      ? ((chargeResponse.result as { structuredContent?: { count?: number } }).structuredContent?.count ?? 0)
      : 0;
  return {
    scenario: 'healthy',
    sessionId: session.sessionId,
    terminalDeliveries: terminal,
    distinctTerminalStreams: terminal > 0 ? 1 : 0,
    reconnects: 0,
    resumeStatuses: [],
    sideEffectCount,
    finding: `A streaming tool call delivered its result ${terminal} time(s); the side effect ran ${sideEffectCount} time(s); no resumption.`,
    durationMs: Date.now() - started,
    details: {
      progressEvents: streamed.read.events.length,
      streamEnd: streamed.read.end,
      chargeStatus: charged.read.status,
    },
  };
}
