import { LabControlClient } from '../control-client.js';
import { startFaultProxy } from '../fault-proxy.js';
import { storeVariantUrl } from '../store-variants.js';
import type { ResolvedScenarioOptions } from './options.js';
import {
  RESUME_LOSES_RESULT_CUT_AFTER,
  RESUME_LOSES_RESULT_REPLAY_WAIT_MS,
  RESUME_LOSES_RESULT_TOOL,
} from './resume-loses-result.js';
import { connectSdkSession, endCutCall } from './sdk-clients.js';
import type { SdkClientKind, SdkSession } from './sdk-clients.js';
import type { ScenarioSummary } from './summary.js';
import { sleep, waitForServerToSeeDrop } from './wire-helpers.js';

/**
 * resume-loses-result with an unmodified SDK client: the proxy cuts the POST stream after the priming
 * event and the first progress update; the SDK resumes on its own (the lab holds the resume until the
 * server saw the drop and sent more progress); the resumed stream replays that progress (the SDK reports
 * it to `onprogress`), then nothing. The call fails at its timeout (`resultWaitMs`): the SDK 1.x sends
 * `notifications/cancelled`, as the v2 client in the session era does.
 */
export async function runResumeLosesResultSdk(
  kind: SdkClientKind,
  options: ResolvedScenarioOptions,
): Promise<ScenarioSummary> {
  const started = Date.now();
  const control = new LabControlClient(options.controlUrl);
  const proxy = await startFaultProxy({ target: storeVariantUrl(options.serverUrl, 'misnames-resumed-stream') });
  let session: SdkSession | undefined;
  try {
    session = await connectSdkSession(kind, proxy.url, options.fetch, 'resume-loses-result', {
      beforeResume: async () => {
        await waitForServerToSeeDrop(control, session!.sessionId()!, { method: 'POST' });
        await sleep(RESUME_LOSES_RESULT_REPLAY_WAIT_MS);
      },
    });
    proxy.armCut({ method: 'POST', afterEvents: RESUME_LOSES_RESULT_CUT_AFTER });
    const progress: number[] = [];
    let callError: string | undefined;
    await session
      .callTool(
        'stream_progress',
        { ...RESUME_LOSES_RESULT_TOOL },
        { onprogress: (p) => void progress.push(p.progress), timeout: options.resultWaitMs },
      )
      .catch((error: unknown) => void (callError = error instanceof Error ? error.message : String(error)));
    const { post, resumes, counts } = await endCutCall(session, 'stream_progress');
    return {
      scenario: 'resume-loses-result',
      ...counts,
      finding: `The ${kind} client resumed after the cut (${resumes.map((entry) => entry.status).join(', ')}) and got ${progress.length} progress update(s) in all; the result arrived ${counts.terminalDeliveries} time(s); the call ended: ${callError ?? 'with its result'}.`,
      durationMs: Date.now() - started,
      details: {
        client: kind,
        requestId: post?.rpcId,
        cut: proxy.cuts[0],
        progress,
        callError,
        resumedFrom: resumes.map((entry) => entry.lastEventId),
        resultLost: counts.terminalDeliveries === 0 && callError !== undefined,
        sdkErrors: session.errors,
      },
    };
  } finally {
    await proxy.close();
  }
}
