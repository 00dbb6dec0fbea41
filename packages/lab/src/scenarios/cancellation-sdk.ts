import { storeVariantUrl } from '../store-variants.js';
import { LONG_CALL, cancellationCounts } from './cancellation-counts.js';
import type { ResolvedScenarioOptions } from './options.js';
import { connectSdkSession, responsesPerRequest, toolCallPost, waitUntil } from './sdk-clients.js';
import type { SdkClientKind } from './sdk-clients.js';
import type { ScenarioSummary } from './summary.js';

/**
 * cancellation with unmodified SDK clients. `notified`: the application aborts `callTool`'s signal
 * after the first progress update; the SDK POSTs `notifications/cancelled` (202) and rejects the
 * call; then the session is DELETEd and the client closed. `transportClosed`: in a second session
 * the application closes the client after the first progress update (the transport aborts its
 * requests; no cancel, no DELETE).
 */
export async function runCancellationSdk(
  kind: SdkClientKind,
  options: ResolvedScenarioOptions,
): Promise<ScenarioSummary> {
  const started = Date.now();
  const url = storeVariantUrl(options.serverUrl, 'bounded');
  const counts: Record<string, number> = {};

  async function giveUp(notify: boolean) {
    const session = await connectSdkSession(
      kind,
      url,
      options.fetch,
      notify ? 'cancellation-notified' : 'cancellation-transport-closed',
    );
    const abort = new AbortController();
    let progressBefore = 0;
    let closing: Promise<void> | undefined;
    const outcome = await session
      .callTool('stream_progress', LONG_CALL, {
        signal: abort.signal,
        onprogress: () => {
          progressBefore++;
          if (progressBefore !== 1) return;
          if (notify) abort.abort(new Error('the client gave up'));
          else closing = session.close();
        },
      })
      .then(
        () => 'resolved',
        (error: unknown) => `rejected: ${error instanceof Error ? error.message : String(error)}`,
      );
    await closing;
    const post = toolCallPost(session.log, 'stream_progress');
    const cancelEntry = () => session.log.find((entry) => entry.rpc === 'notifications/cancelled');
    // The SDK sends the cancel without waiting for its answer: wait (bounded) for its status.
    if (notify) await waitUntil(() => cancelEntry()?.status !== undefined, 2000);
    const sessionId = session.sessionId();
    if (notify) {
      await session.terminate().catch(() => undefined);
      await session.close();
    }
    Object.assign(counts, responsesPerRequest(session.log));
    return {
      sessionId,
      requestId: post?.rpcId,
      progressBefore,
      cancelStatus: cancelEntry()?.status,
      outcome,
      terminals: session.log.flatMap((entry) => entry.responses).filter((response) => response.rpcId === post?.rpcId)
        .length,
      sdkErrors: session.errors,
    };
  }

  const notified = await giveUp(true);
  const transportClosed = await giveUp(false);
  return {
    scenario: 'cancellation',
    ...cancellationCounts(notified, transportClosed),
    resultsPerRequest: counts,
    finding: `The ${kind} client cancelled a call (notifications/cancelled ${notified.cancelStatus ?? '-'}) and closed its transport under another; ${notified.terminals + transportClosed.terminals} result(s) arrived.`,
    durationMs: Date.now() - started,
    details: { client: kind, requestId: notified.requestId, notified, transportClosed },
  };
}
