import { LabControlClient } from '../control-client.js';
import { startFaultProxy } from '../fault-proxy.js';
import { McpHttpSession, isResponseTo } from '../mcp-http-client.js';
import { storeVariantUrl } from '../store-variants.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import type { ScenarioSummary } from './summary.js';
import { ResultTally, lastEventId, resultText, resumeStream, waitForServerToSeeDrop } from './wire-helpers.js';

/** Session A's tool stays quiet this long after its progress update, while session B runs. */
const A_QUIET_MS = 1500;
export const CROSS_SESSION_A_TEXT = 'from session A';
export const CROSS_SESSION_B_TEXT = 'from session B';

/**
 * Two sessions against one store shared by every session and keyed by JSON-RPC request id
 * (`shared-by-request-id`, like the Python SDK's example store). Session A calls `quiet_progress`
 * as request 1; the fault proxy cuts its stream after the first progress update. Session B calls
 * `echo` as request 1 too and gets its result. Session A resumes with its last id: the server
 * answers 200 and replays B's priming event (`data: {}`) and B's result (`Echo: from session B`)
 * into A's stream, then A's own result arrives live on the same stream. A's request 1 receives two
 * different terminals: a conflict, and the first one is another session's.
 */
export async function runCrossSessionStore(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, controlUrl, fetch } = resolveOptions(options);
  const control = new LabControlClient(controlUrl);
  const target = storeVariantUrl(serverUrl, 'shared-by-request-id');
  const proxy = await startFaultProxy({ target });
  try {
    const a = await McpHttpSession.open(proxy.url, fetch, 'cross-session-store-a');
    const tallyA = new ResultTally();
    const callA = a.toolCall('quiet_progress', { quietMs: A_QUIET_MS, text: CROSS_SESSION_A_TEXT });
    proxy.armCut({ method: 'POST', afterEvents: 2 });
    const firstA = await a.post(callA.message);
    tallyA.add(firstA);
    const cursor = lastEventId(firstA);
    if (cursor === undefined) throw new Error('cross-session-store: no event id arrived before the cut');
    await waitForServerToSeeDrop(control, a.sessionId, { method: 'POST' });

    const b = await McpHttpSession.open(target, fetch, 'cross-session-store-b');
    const echoB = await b.callTool('echo', { text: CROSS_SESSION_B_TEXT });
    await b.close().catch(() => undefined);
    const tallyB = new ResultTally();
    tallyB.add(echoB.read);

    const resumeStatuses: number[] = [];
    const resume = await resumeStream(a, cursor, resumeStatuses);
    tallyA.add(resume);
    await a.close().catch(() => undefined);

    const terminalsA = resume.events.filter((event) => isResponseTo(event.message, callA.id));
    const texts = terminalsA.map((event) => resultText(event.message));
    const bTextOnA = `Echo: ${CROSS_SESSION_B_TEXT}`;
    const receivedB = texts.includes(bTextOnA);
    return {
      scenario: 'cross-session-store',
      sessionId: a.sessionId,
      terminalDeliveries: terminalsA.length,
      distinctTerminalStreams: terminalsA.length > 0 ? 1 : 0,
      reconnects: resumeStatuses.length,
      resumeStatuses,
      resultsPerRequest: tallyA.perRequest,
      finding: receivedB
        ? `Session A's resume (${resume.status}) of request ${callA.id} received session B's result ("${bTextOnA}") before its own ("${CROSS_SESSION_A_TEXT}"): two conflicting terminals, the first from another session.`
        : `Session A's resume (${resume.status}) received ${terminalsA.length} terminal(s) for request ${callA.id}: ${JSON.stringify(texts)}.`,
      durationMs: Date.now() - started,
      details: {
        requestId: callA.id,
        sessionB: b.sessionId,
        sessionBRequestId: echoB.call.id,
        sessionBResults: tallyB.perRequest,
        cursor,
        cut: proxy.cuts[0],
        terminalTextsOnResume: texts,
        terminalEventIdsOnResume: terminalsA.map((event) => event.id),
        emptyDataEventsOnResume: resume.events.filter((event) => event.data.trim() === '{}').length,
        sessionAReceivedSessionBResult: receivedB,
        conflictingTerminals: new Set(texts).size > 1,
        resumeEnd: resume.end,
      },
    };
  } finally {
    await proxy.close();
  }
}
