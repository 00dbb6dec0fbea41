import { LabControlClient } from '../control-client.js';
import { startFaultProxy } from '../fault-proxy.js';
import { storeVariantUrl } from '../store-variants.js';
import { CROSS_SESSION_A_TEXT, CROSS_SESSION_B_TEXT } from './cross-session-store.js';
import type { ResolvedScenarioOptions } from './options.js';
import {
  connectSdkSession,
  responsesPerRequest,
  responsesTo,
  resumesIn,
  toolCallPost,
  waitUntil,
} from './sdk-clients.js';
import type { SdkClientKind, SdkSession } from './sdk-clients.js';
import type { ScenarioSummary } from './summary.js';
import { waitForServerToSeeDrop } from './wire-helpers.js';

/**
 * cross-session-store with unmodified SDK clients. Session A's `callTool` is cut after its progress
 * update; A's resume is held until session B has called `echo` (request id 1 in both sessions) and
 * the server has seen A's drop. The shared store replays B's result into A's resumed stream, and A's
 * `callTool` resolves with B's result; A's own result follows on the same stream (the SDK reports
 * it as a response to an unknown id).
 */
export async function runCrossSessionStoreSdk(
  kind: SdkClientKind,
  options: ResolvedScenarioOptions,
): Promise<ScenarioSummary> {
  const started = Date.now();
  const control = new LabControlClient(options.controlUrl);
  const target = storeVariantUrl(options.serverUrl, 'shared-by-request-id');
  const proxy = await startFaultProxy({ target });
  let a: SdkSession | undefined;
  let bDone!: () => void;
  const bFinished = new Promise<void>((resolve) => (bDone = resolve));
  try {
    a = await connectSdkSession(kind, proxy.url, options.fetch, 'cross-session-store-a', {
      beforeResume: async () => {
        await waitForServerToSeeDrop(control, a!.sessionId()!, { method: 'POST' });
        await bFinished;
      },
    });
    proxy.armCut({ method: 'POST', afterEvents: 2 });
    const callA = a.callTool(
      'quiet_progress',
      { quietMs: 1500, text: CROSS_SESSION_A_TEXT },
      { onprogress: () => undefined },
    );
    const postA = () => toolCallPost(a!.log, 'quiet_progress');
    await waitUntil(() => postA()?.end !== undefined, 5000);
    const b = await connectSdkSession(kind, target, options.fetch, 'cross-session-store-b');
    const resultB = await b.callTool('echo', { text: CROSS_SESSION_B_TEXT });
    const sessionB = b.sessionId();
    const bRequestId = toolCallPost(b.log, 'echo')?.rpcId;
    await b.terminate().catch(() => undefined);
    await b.close();
    bDone();
    const resultA = await callA;
    const requestId = postA()?.rpcId;
    // A's own result comes after B's on the same resumed stream: wait (bounded) until that stream ended.
    await waitUntil(() => resumesIn(a!.log).some((entry) => entry.end !== undefined), 5000);
    const resumes = resumesIn(a.log);
    const terminals = responsesTo(a.log, requestId);
    const sessionId = a.sessionId();
    await a.terminate().catch(() => undefined);
    await a.close();
    const resolvedWith = resultA.content?.[0]?.text;
    return {
      scenario: 'cross-session-store',
      sessionId,
      terminalDeliveries: terminals.length,
      distinctTerminalStreams: new Set(terminals.map((terminal) => terminal.seq)).size,
      reconnects: resumes.length,
      resumeStatuses: resumes.map((entry) => entry.status ?? 0),
      resultsPerRequest: responsesPerRequest(a.log),
      finding: `Session A's ${kind} callTool resolved with ${JSON.stringify(resolvedWith)}; its resumed stream carried ${terminals.length} terminal(s) for request ${String(requestId)}.`,
      durationMs: Date.now() - started,
      details: {
        client: kind,
        requestId,
        sessionB,
        sessionBRequestId: bRequestId,
        sessionBResultText: resultB.content?.[0]?.text,
        resolvedWith,
        terminalTextsOnResume: terminals.map((terminal) => terminal.text),
        sessionAReceivedSessionBResult: resolvedWith === `Echo: ${CROSS_SESSION_B_TEXT}`,
        conflictingTerminals: new Set(terminals.map((terminal) => terminal.text)).size > 1,
        sdkErrors: a.errors,
      },
    };
  } finally {
    bDone();
    await proxy.close();
  }
}
