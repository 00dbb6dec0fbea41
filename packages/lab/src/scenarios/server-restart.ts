import { setTimeout as sleep } from 'node:timers/promises';
import { LabControlClient } from '../control-client.js';
import { McpHttpSession, isResponseTo } from '../mcp-http-client.js';
import type { RestartReport } from '../lab-server/types.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import type { ScenarioSummary } from './summary.js';

/** Progress notifications seen before the scenario asks the server to restart. */
const RESTART_AFTER_PROGRESS = 2;

/**
 * The server restarts mid-request and loses its event buffer, but its session state lives outside the
 * process. The client resumes its unfinished request: the session is accepted and the resume answers
 * 200 with no events and a clean close, which reads as "nothing missed". It is a lie: the work died.
 * The client then waits `resultWaitMs` for the result, in vain, and deletes its session.
 */
export async function runServerRestart(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, controlUrl, fetch, resultWaitMs } = resolveOptions(options);
  const control = new LabControlClient(controlUrl);
  const session = await McpHttpSession.open(serverUrl, fetch, 'server-restart');
  const call = session.toolCall('stream_progress', { count: 100, delay: 50 });
  let progressSeen = 0;
  let restart: Promise<RestartReport> | undefined;
  const first = await session.post(call.message, {
    onEvent: (event) => {
      if (event.message && 'method' in event.message && event.message.method === 'notifications/progress')
        progressSeen++;
      if (progressSeen === RESTART_AFTER_PROGRESS && !restart) restart = control.restart();
    },
  });
  const report = restart ? await restart : undefined;
  const cursor = first.events.filter((event) => event.id !== undefined).at(-1)?.id;
  const firstTerminal = first.events.some((event) => isResponseTo(event.message, call.id));
  let resumeError: string | undefined;
  const resume =
    cursor === undefined || firstTerminal
      ? undefined
      : await session.get(cursor).catch((error: unknown) => {
          resumeError = error instanceof Error ? error.message : String(error);
          return undefined;
        });
  const replayTerminal = resume?.events.some((event) => isResponseTo(event.message, call.id)) ?? false;
  // The client waits for its result a while (nothing more will come: the work died with the old
  // process) before giving the request up; an instrumented client's request deadline passes meanwhile.
  if (resume && !firstTerminal && !replayTerminal && resultWaitMs > 0) await sleep(resultWaitMs);
  await session.close().catch(() => undefined);
  const emptyReplay = resume !== undefined && resume.status === 200 && resume.events.length === 0;
  return {
    scenario: 'server-restart',
    sessionId: session.sessionId,
    terminalDeliveries: Number(firstTerminal) + Number(replayTerminal),
    distinctTerminalStreams: Number(firstTerminal) + Number(replayTerminal),
    reconnects: resume || resumeError ? 1 : 0,
    resumeStatuses: resume ? [resume.status] : [],
    finding: emptyReplay
      ? `After the restart the server accepted session ${session.sessionId} and answered the resume of an unfinished request with 200, no events and a clean close: it looks like "nothing missed", but the request never finished.`
      : `The resume after the restart answered ${resume?.status ?? 'nothing'} with ${resume?.events.length ?? 0} event(s).`,
    durationMs: Date.now() - started,
    details: {
      requestId: call.id,
      restart: report,
      eventsBeforeRestart: first.events.length,
      firstStreamEnd: first.end,
      cursor,
      replayedEvents: resume?.events.length ?? 0,
      replayEnd: resume?.end,
      resumeError,
      emptyReplayOnUnfinishedRequest: emptyReplay && !firstTerminal && !replayTerminal,
    },
  };
}
