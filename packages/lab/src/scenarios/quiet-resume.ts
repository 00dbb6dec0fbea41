import { LabControlClient } from '../control-client.js';
import { startFaultProxy } from '../fault-proxy.js';
import { McpHttpSession, isResponseTo } from '../mcp-http-client.js';
import { storeVariantUrl } from '../store-variants.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import type { ScenarioSummary } from './summary.js';
import {
  ResultTally,
  cutResumeCounts,
  isJsonRpcEvent,
  lastEventId,
  resumeStream,
  waitForServerToSeeDrop,
} from './wire-helpers.js';

/** How long the tool stays quiet after its first progress update: longer than any replay window was. */
export const QUIET_RESUME_QUIET_MS = 2500;
/** The priming event and the first progress notification reach the client; then the TCP connection is cut. */
const CUT_AFTER_EVENTS = 2;

/**
 * A valid resume whose stream is quiet: `quiet_progress` sends one progress update and then works
 * for 2.5 s. The fault proxy cuts the POST stream after that update; the client resumes with its last
 * id; the resumed stream (200) stays silent until the result arrives on it, once, and the stream ends.
 */
export async function runQuietResume(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, controlUrl, fetch } = resolveOptions(options);
  const control = new LabControlClient(controlUrl);
  const proxy = await startFaultProxy({ target: storeVariantUrl(serverUrl, 'bounded') });
  try {
    const session = await McpHttpSession.open(proxy.url, fetch, 'quiet-resume');
    const tally = new ResultTally();
    const call = session.toolCall('quiet_progress', { quietMs: QUIET_RESUME_QUIET_MS });
    proxy.armCut({ method: 'POST', afterEvents: CUT_AFTER_EVENTS });
    const first = await session.post(call.message);
    tally.add(first);
    const cursor = lastEventId(first);
    if (cursor === undefined) throw new Error('quiet-resume: no event id arrived before the cut');
    await waitForServerToSeeDrop(control, session.sessionId, { method: 'POST' });
    const resumeStatuses: number[] = [];
    let openedAt = 0;
    const resume = await resumeStream(session, cursor, resumeStatuses, { onOpen: () => (openedAt = Date.now()) });
    tally.add(resume);
    await session.close().catch(() => undefined);
    const terminal = resume.events.find((event) => isResponseTo(event.message, call.id));
    const { terminalOnResume, counts } = cutResumeCounts(first, resume, call.id, resumeStatuses, tally);
    // How long the resumed stream was open before the result: shorter than the tool's quiet by the
    // time the cut, the server's noticing it and the resume took, which load stretches.
    const silentMs = terminal ? terminal.at - openedAt : undefined;
    // How long the client heard nothing of the call, from the last event before the cut to the result:
    // the tool's quiet, less only that last event's delivery time.
    const lastHeardAt = first.events.at(-1)?.at;
    const quietHeardMs = terminal && lastHeardAt !== undefined ? terminal.at - lastHeardAt : undefined;
    return {
      scenario: 'quiet-resume',
      sessionId: session.sessionId,
      ...counts,
      finding:
        terminalOnResume === 1
          ? `The resumed stream (${resume.status}) stayed silent for ${silentMs} ms, then carried the result once: a quiet stream is not an empty replay.`
          : `The resumed stream answered ${resume.status} and carried the result ${terminalOnResume} time(s).`,
      durationMs: Date.now() - started,
      details: {
        requestId: call.id,
        cursor,
        cut: proxy.cuts[0],
        firstStreamEnd: first.end,
        firstStreamEvents: first.events.length,
        resumedEvents: resume.events.length,
        resumedMessages: resume.events.filter(isJsonRpcEvent).length,
        resumeEnd: resume.end,
        quietMs: QUIET_RESUME_QUIET_MS,
        silentMs,
        quietHeardMs,
      },
    };
  } finally {
    await proxy.close();
  }
}
