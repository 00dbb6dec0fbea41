import { LabControlClient } from '../control-client.js';
import { startFaultProxy } from '../fault-proxy.js';
import { McpHttpSession } from '../mcp-http-client.js';
import type { StreamRead } from '../mcp-http-client.js';
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
  sleep,
  waitForServerToSeeDrop,
} from './wire-helpers.js';

/**
 * The tool of the scenario: `stream_progress` with `count` updates `delay` ms apart, then its result.
 * After the third update it waits for the client's resume (`awaitResumeAfter`), so the rest and the
 * result are sent while the client waits on the resumed stream, never replayed by the resume itself,
 * however long a loaded machine takes to resume (on the clock alone, ~2 s after the call, a slow resume
 * got the result in its replay).
 */
export const RESUME_LOSES_RESULT_TOOL = { count: 20, delay: 100, awaitResumeAfter: 3 } as const;
/** The priming event and the first progress update reach the client; then the TCP connection is cut. */
export const RESUME_LOSES_RESULT_CUT_AFTER = 2;
/** How long the waiting after the drop lets progress accumulate for the resume to replay: two updates. */
export const RESUME_LOSES_RESULT_REPLAY_WAIT_MS = 2 * RESUME_LOSES_RESULT_TOOL.delay;
/**
 * The least the client waits on the resumed stream, whatever `resultWaitMs` says: longer than the request
 * deadline that decides what the resume replayed (3 s from the call in the tests), so that the deadline,
 * not the client's giving up, decides, and on a loaded machine the replayed progress reaches the client
 * before it. With the default 3 s wait from the resume, the two met within half a second. A longer
 * deadline needs a longer `resultWaitMs` (docker-compose.yml: 10 s, `--result-wait 12000`).
 */
const RESUME_LOSES_RESULT_MIN_WAIT_MS = 5_000;
/** After the session's DELETE, how long the resumed stream may take to end before the client closes it. */
const CLOSE_WAIT_MS = 2000;

/**
 * A resume that loses the result (store `misnames-resumed-stream`, as the everything server's): the
 * fault proxy cuts the tool's POST stream after its first progress update; the client resumes with that
 * update's id once the server saw the drop and the tool sent more. The resume (200) replays the progress
 * sent meanwhile: a continuation by every rule of the wire. But the store named the resumed stream after
 * its last replayed event, so the rest of the progress and the result, sent on the stream's real name,
 * go nowhere. The client waits `resultWaitMs` (at least RESUME_LOSES_RESULT_MIN_WAIT_MS) on the open resumed
 * stream, then deletes its session.
 */
export async function runResumeLosesResult(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, controlUrl, fetch, resultWaitMs } = resolveOptions(options);
  const waitMs = Math.max(resultWaitMs, RESUME_LOSES_RESULT_MIN_WAIT_MS);
  const control = new LabControlClient(controlUrl);
  const proxy = await startFaultProxy({ target: storeVariantUrl(serverUrl, 'misnames-resumed-stream') });
  try {
    const session = await McpHttpSession.open(proxy.url, fetch, 'resume-loses-result');
    const tally = new ResultTally();
    const call = session.toolCall('stream_progress', { ...RESUME_LOSES_RESULT_TOOL });
    proxy.armCut({ method: 'POST', afterEvents: RESUME_LOSES_RESULT_CUT_AFTER });
    const first = await session.post(call.message);
    tally.add(first);
    const cursor = lastEventId(first);
    if (cursor === undefined) throw new Error('resume-loses-result: no event id arrived before the cut');
    await waitForServerToSeeDrop(control, session.sessionId, { method: 'POST' });
    await sleep(RESUME_LOSES_RESULT_REPLAY_WAIT_MS);
    const resumeStatuses: number[] = [];
    const reading = new AbortController();
    const resuming = resumeStream(session, cursor, resumeStatuses, { signal: reading.signal });
    // The client waits for its result on the resumed stream, which the server keeps open and silent.
    await sleep(waitMs);
    await session.close().catch(() => undefined);
    // The DELETE ends the resumed stream on the server; a client that still reads it after a while closes it.
    const closing = setTimeout(() => reading.abort(), CLOSE_WAIT_MS);
    const resume: StreamRead = await resuming;
    clearTimeout(closing);
    tally.add(resume);
    const { counts } = cutResumeCounts(first, resume, call.id, resumeStatuses, tally);
    const replayedMessages = resume.events.filter(isJsonRpcEvent).length;
    const replay = (await control.state()).recentReplays.find(
      (entry) => entry.sessionId === session.sessionId && entry.lastEventId === cursor,
    );
    const lost = counts.terminalDeliveries === 0 && replayedMessages > 0;
    return {
      scenario: 'resume-loses-result',
      sessionId: session.sessionId,
      ...counts,
      finding: lost
        ? `The resume (${resume.status}) replayed ${replayedMessages} progress update(s) the client had missed, then nothing: the result, sent after the resume, went to a stream name no connection held. It never arrived in ${waitMs} ms.`
        : `The resume answered ${resume.status} with ${replayedMessages} message(s); the result arrived ${counts.terminalDeliveries} time(s).`,
      durationMs: Date.now() - started,
      details: {
        requestId: call.id,
        cursor,
        cut: proxy.cuts[0],
        firstStreamEnd: first.end,
        replayedMessages,
        resumeEnd: resume.end,
        // What the store replayed (the cursor's stream, unfinished then) and that the lab left it open.
        replay: replay && { sent: replay.sent, streamFinished: replay.streamFinished, closed: replay.closed },
        resultLost: lost,
      },
    };
  } finally {
    await proxy.close();
  }
}
