import { LabControlClient } from '../control-client.js';
import { startFaultProxy } from '../fault-proxy.js';
import { storeVariantUrl } from '../store-variants.js';
import type { ResolvedScenarioOptions } from './options.js';
import { QUIET_RESUME_QUIET_MS } from './quiet-resume.js';
import { connectSdkSession, endCutCall } from './sdk-clients.js';
import type { SdkClientKind, SdkSession } from './sdk-clients.js';
import type { ScenarioSummary } from './summary.js';
import { waitForServerToSeeDrop } from './wire-helpers.js';

/**
 * quiet-resume with an unmodified SDK client: the proxy cuts the POST stream after the priming event
 * and the first progress update; the SDK resumes on its own (after the server's `retry:`; the lab
 * holds the resume until the server has seen the drop, so it is not answered 409); the resumed
 * stream is silent for 2.5 s, then the result arrives once and `callTool` resolves.
 */
export async function runQuietResumeSdk(
  kind: SdkClientKind,
  options: ResolvedScenarioOptions,
): Promise<ScenarioSummary> {
  const started = Date.now();
  const control = new LabControlClient(options.controlUrl);
  const proxy = await startFaultProxy({ target: storeVariantUrl(options.serverUrl, 'bounded') });
  let session: SdkSession | undefined;
  try {
    session = await connectSdkSession(kind, proxy.url, options.fetch, 'quiet-resume', {
      beforeResume: async () => void (await waitForServerToSeeDrop(control, session!.sessionId()!, { method: 'POST' })),
    });
    proxy.armCut({ method: 'POST', afterEvents: 2 });
    const result = await session.callTool(
      'quiet_progress',
      { quietMs: QUIET_RESUME_QUIET_MS },
      { onprogress: () => undefined },
    );
    const { post, resumes, counts } = await endCutCall(session, 'quiet_progress');
    return {
      scenario: 'quiet-resume',
      ...counts,
      finding: `The ${kind} client resumed after the cut (${resumes.map((entry) => entry.status).join(', ')}); the quiet resumed stream carried the result ${counts.terminalDeliveries} time(s).`,
      durationMs: Date.now() - started,
      details: {
        client: kind,
        requestId: post?.rpcId,
        cut: proxy.cuts[0],
        resultText: result.content?.[0]?.text,
        resumedFrom: resumes.map((entry) => entry.lastEventId),
        terminalOnResume: resumes.some((entry) => entry.responses.some((response) => response.rpcId === post?.rpcId)),
        sdkErrors: session.errors,
      },
    };
  } finally {
    await proxy.close();
  }
}
