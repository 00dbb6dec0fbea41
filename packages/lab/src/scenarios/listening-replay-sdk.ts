import { LabControlClient } from '../control-client.js';
import { startFaultProxy } from '../fault-proxy.js';
import { storeVariantUrl } from '../store-variants.js';
import type { ResolvedScenarioOptions } from './options.js';
import { connectSdkSession, responsesPerRequest, resumesIn, toolCallPost, waitUntil } from './sdk-clients.js';
import type { SdkClientKind, SdkSession } from './sdk-clients.js';
import type { ScenarioSummary } from './summary.js';
import { waitForServerToSeeDrop } from './wire-helpers.js';

/**
 * listening-replay with an unmodified SDK client. The SDK opens the listening stream itself after
 * `notifications/initialized`; `notify_listening` (request 1) puts a notification on it and the
 * proxy cuts it there; `echo` (request 2) completes; the SDK reconnects the listening stream with the
 * notification's id (the lab holds that resume until request 2 is done and the server saw the drop).
 * The server replays request 1's and request 2's results and a `data: {}` into it: the SDK reports
 * responses to unknown ids and a message it cannot parse. The lab waits (bounded) for both replayed
 * results, then closes the client.
 */
export async function runListeningReplaySdk(
  kind: SdkClientKind,
  options: ResolvedScenarioOptions,
): Promise<ScenarioSummary> {
  const started = Date.now();
  const control = new LabControlClient(options.controlUrl);
  const proxy = await startFaultProxy({ target: storeVariantUrl(options.serverUrl, 'replay-all-streams') });
  let session: SdkSession | undefined;
  let echoDone!: () => void;
  const echoFinished = new Promise<void>((resolve) => (echoDone = resolve));
  try {
    // Armed before connecting: the first event-stream GET is the SDK's listening stream.
    proxy.armCut({ method: 'GET', afterEvents: 1 });
    session = await connectSdkSession(kind, proxy.url, options.fetch, 'listening-replay', {
      beforeResume: async () => {
        await echoFinished;
        await waitForServerToSeeDrop(control, session!.sessionId()!, { method: 'GET' });
      },
    });
    const listening = () => session!.log.find((entry) => entry.method === 'GET' && entry.lastEventId === undefined);
    await waitUntil(() => listening()?.status === 200, 5000);
    const notify = (await session.callTool('notify_listening', {})).content?.[0]?.text;
    await waitUntil(() => listening()?.end !== undefined, 5000);
    const echo = (await session.callTool('echo', { text: 'after the cut' })).content?.[0]?.text;
    echoDone();
    await waitUntil(() => (resumesIn(session!.log)[0]?.responses.length ?? 0) >= 2, 5000);
    const resumes = resumesIn(session.log);
    const notifyId = toolCallPost(session.log, 'notify_listening')?.rpcId;
    const echoId = toolCallPost(session.log, 'echo')?.rpcId;
    const sessionId = session.sessionId();
    await session.terminate().catch(() => undefined);
    await session.close();
    const replayed = resumes[0]?.responses ?? [];
    const onListening = replayed.filter((response) => response.rpcId === notifyId).length;
    return {
      scenario: 'listening-replay',
      sessionId,
      terminalDeliveries: 1 + onListening,
      distinctTerminalStreams: 1 + Number(onListening > 0),
      reconnects: resumes.length,
      resumeStatuses: resumes.map((entry) => entry.status ?? 0),
      resultsPerRequest: responsesPerRequest(session.log),
      finding: `The ${kind} client's resumed listening stream received ${replayed.length} result(s) of requests it had already completed.`,
      durationMs: Date.now() - started,
      details: {
        client: kind,
        requestId: notifyId,
        echoRequestId: echoId,
        results: [notify, echo],
        cursor: resumes[0]?.lastEventId,
        cut: proxy.cuts[0],
        replayedResponseIds: replayed.map((response) => response.rpcId),
        nonMessageEventsOnResume: resumes[0]?.nonMessageEvents,
        sdkErrors: session.errors,
      },
    };
  } finally {
    echoDone();
    await proxy.close();
  }
}
