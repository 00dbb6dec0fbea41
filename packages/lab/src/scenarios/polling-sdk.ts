import { storeVariantUrl } from '../store-variants.js';
import type { ResolvedScenarioOptions } from './options.js';
import { POLLING_CLOSES, POLLING_INTERVAL_MS } from './polling.js';
import { connectSdkSession, responsesPerRequest, responsesTo, resumesIn, toolCallPost } from './sdk-clients.js';
import type { SdkClientKind } from './sdk-clients.js';
import type { ScenarioSummary } from './summary.js';

/**
 * polling with an unmodified SDK client: the SDK reads the priming event's `retry:`, and after each
 * close of the stream by the server returns with Last-Event-ID, until the result arrives. Each poll
 * carries one progress update: both SDK clients resume from the last id seen *on the stream that
 * just ended*, so after a poll with no event they reconnect with a plain GET (409 while the listening
 * stream is open) and give up after two retries, leaving the call to its timeout. The raw client's
 * `polling` shows the empty polls.
 */
export async function runPollingSdk(kind: SdkClientKind, options: ResolvedScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const session = await connectSdkSession(
    kind,
    storeVariantUrl(options.serverUrl, 'bounded'),
    options.fetch,
    'polling',
  );
  const result = await session.callTool(
    'poll_task',
    { closes: POLLING_CLOSES, intervalMs: POLLING_INTERVAL_MS, progress: true },
    { onprogress: () => undefined },
  );
  const post = toolCallPost(session.log, 'poll_task');
  const polls = resumesIn(session.log);
  const terminals = responsesTo(session.log, post?.rpcId);
  const sessionId = session.sessionId();
  await session.terminate().catch(() => undefined);
  await session.close();
  return {
    scenario: 'polling',
    sessionId,
    terminalDeliveries: terminals.length,
    distinctTerminalStreams: new Set(terminals.map((terminal) => terminal.seq)).size,
    reconnects: polls.length,
    resumeStatuses: polls.map((entry) => entry.status ?? 0),
    resultsPerRequest: responsesPerRequest(session.log),
    finding: `The ${kind} client polled ${polls.length} time(s) and received the result ${terminals.length} time(s).`,
    durationMs: Date.now() - started,
    details: {
      client: kind,
      requestId: post?.rpcId,
      resultText: result.content?.[0]?.text,
      eventsPerPoll: polls.map((entry) => entry.eventIds.length),
      sdkErrors: session.errors,
    },
  };
}
