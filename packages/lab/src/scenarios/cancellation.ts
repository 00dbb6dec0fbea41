import { McpHttpSession } from '../mcp-http-client.js';
import type { StreamRead } from '../mcp-http-client.js';
import { storeVariantUrl } from '../store-variants.js';
import { LONG_CALL, cancellationCounts } from './cancellation-counts.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import type { ScenarioSummary } from './summary.js';
import { ResultTally } from './wire-helpers.js';

interface CancelledCall {
  sessionId: string;
  requestId: number;
  progressBefore: number;
  /** Status of the POST carrying notifications/cancelled (notified variant only). */
  cancelStatus: number | undefined;
  streamEnd: StreamRead['end'];
  terminals: number;
}

/**
 * The client gives up a running tool call after its first progress update. `notified`: it POSTs
 * `notifications/cancelled` for the request (202), then stops reading the POST stream (the SDK server
 * aborts the handler and sends no response), then DELETEs the session. `transportClosed`: in a
 * second session it aborts the POST stream without a word, as a client closing its transport does
 * (no cancel, no DELETE). No result arrives in either.
 */
export async function runCancellation(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, fetch } = resolveOptions(options);
  const url = storeVariantUrl(serverUrl, 'bounded');
  const tally = new ResultTally();

  async function giveUp(notify: boolean): Promise<CancelledCall> {
    const session = await McpHttpSession.open(
      url,
      fetch,
      notify ? 'cancellation-notified' : 'cancellation-transport-closed',
    );
    const call = session.toolCall('stream_progress', LONG_CALL);
    const stop = new AbortController();
    let progressBefore = 0;
    let cancelled: Promise<number> | undefined;
    const read = await session.post(call.message, {
      signal: stop.signal,
      onEvent: (event) => {
        if (
          !event.message ||
          !('method' in event.message) ||
          event.message.method !== 'notifications/progress' ||
          cancelled
        )
          return;
        progressBefore++;
        cancelled = notify
          ? session
              .post({
                jsonrpc: '2.0',
                method: 'notifications/cancelled',
                params: { requestId: call.id, reason: 'the client gave up' },
              })
              .then((answer) => answer.status)
              .finally(() => stop.abort())
          : Promise.resolve(0).finally(() => stop.abort());
      },
    });
    const cancelStatus = cancelled ? await cancelled : undefined;
    tally.add(read);
    if (notify) await session.close().catch(() => undefined);
    const terminals = read.events.filter(
      (event) => event.message && 'id' in event.message && event.message.id === call.id,
    ).length;
    return {
      sessionId: session.sessionId,
      requestId: call.id,
      progressBefore,
      cancelStatus: notify ? cancelStatus : undefined,
      streamEnd: read.end,
      terminals,
    };
  }

  const notified = await giveUp(true);
  const transportClosed = await giveUp(false);
  return {
    scenario: 'cancellation',
    ...cancellationCounts(notified, transportClosed),
    resultsPerRequest: tally.perRequest,
    finding:
      `The client cancelled request ${notified.requestId} with notifications/cancelled (${notified.cancelStatus ?? '-'}) and closed the transport under request ${transportClosed.requestId} ` +
      `of another session; ${notified.terminals + transportClosed.terminals} result(s) arrived.`,
    durationMs: Date.now() - started,
    details: { requestId: notified.requestId, notified, transportClosed },
  };
}
