import { LabControlClient } from '../control-client.js';
import { startFaultProxy } from '../fault-proxy.js';
import { McpHttpSession, isResponseTo } from '../mcp-http-client.js';
import type { StreamEvent } from '../mcp-http-client.js';
import { storeVariantUrl } from '../store-variants.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import type { ScenarioSummary } from './summary.js';
import {
  ResultTally,
  isJsonRpcEvent,
  isTerminalMessage,
  resumeStream,
  waitForServerToSeeDrop,
} from './wire-helpers.js';

/** The client gives the resumed listening stream this long to show the replay, then closes it. */
const LISTEN_CAP_MS = 3000;

function describeEvent(event: StreamEvent): { id: string | undefined; kind: string; requestId?: string | number } {
  const message = event.message;
  if (isTerminalMessage(message)) return { id: event.id, kind: 'response', requestId: message.id };
  if (message && 'method' in message) return { id: event.id, kind: message.method };
  return { id: event.id, kind: isJsonRpcEvent(event) ? 'message' : `not a message: ${JSON.stringify(event.data)}` };
}

/**
 * The listening (standalone GET) stream resumed against a store that replays every stream of the
 * session (`replay-all-streams`, like the everything server's). The client opens the listening
 * stream; `notify_listening` (request 1) puts one notification on it and the fault proxy cuts it
 * right after; request 1's result arrives on its POST stream; request 2 (`echo`) completes on its
 * own POST stream. The client resumes the listening stream with the notification's id: the server
 * answers 200 and replays request 1's result, request 2's priming event (`data: {}`) and request
 * 2's result into it, results the client already has and never asked to resume. The client closes
 * the listening stream once both replayed results arrived (or after 3 s).
 */
export async function runListeningReplay(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, controlUrl, fetch } = resolveOptions(options);
  const control = new LabControlClient(controlUrl);
  const proxy = await startFaultProxy({ target: storeVariantUrl(serverUrl, 'replay-all-streams') });
  try {
    const session = await McpHttpSession.open(proxy.url, fetch, 'listening-replay');
    const tally = new ResultTally();
    proxy.armCut({ method: 'GET', afterEvents: 1 });
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const listening = session.get(undefined, { onOpen: () => opened() });
    await Promise.race([open, listening]);
    const notify = await session.callTool('notify_listening');
    tally.add(notify.read);
    const cutListening = await listening;
    tally.add(cutListening);
    const cursor = cutListening.events.find((event) => event.id !== undefined)?.id;
    if (cursor === undefined)
      throw new Error('listening-replay: the listening stream carried no event id before the cut');
    const echo = await session.callTool('echo', { text: 'after the cut' });
    tally.add(echo.read);
    await waitForServerToSeeDrop(control, session.sessionId, { method: 'GET' });

    const resumeStatuses: number[] = [];
    const stop = new AbortController();
    const seen = new Set<string | number>();
    const cap = setTimeout(() => stop.abort(), LISTEN_CAP_MS);
    const resume = await resumeStream(session, cursor, resumeStatuses, {
      signal: stop.signal,
      onEvent: (event) => {
        if (isTerminalMessage(event.message)) seen.add(event.message.id);
        if (seen.has(notify.call.id) && seen.has(echo.call.id)) stop.abort();
      },
    });
    clearTimeout(cap);
    tally.add(resume);
    await session.close().catch(() => undefined);

    const replayedResults = resume.events.filter((event) => isTerminalMessage(event.message)).length;
    const onPost = notify.read.events.filter((event) => isResponseTo(event.message, notify.call.id)).length;
    const onListening = resume.events.filter((event) => isResponseTo(event.message, notify.call.id)).length;
    return {
      scenario: 'listening-replay',
      sessionId: session.sessionId,
      terminalDeliveries: onPost + onListening,
      distinctTerminalStreams: Number(onPost > 0) + Number(onListening > 0),
      reconnects: resumeStatuses.length,
      resumeStatuses,
      resultsPerRequest: tally.perRequest,
      finding:
        `The resumed listening stream (${resume.status}) received ${replayedResults} result(s) of other streams, already delivered on their POST streams, ` +
        `and ${resume.events.filter((event) => !isJsonRpcEvent(event)).length} event(s) that are not messages: the server replayed every stream of the session.`,
      durationMs: Date.now() - started,
      details: {
        requestId: notify.call.id,
        echoRequestId: echo.call.id,
        cursor,
        cut: proxy.cuts[0],
        listeningEventsBeforeCut: cutListening.events.map(describeEvent),
        replayedOnListening: resume.events.map(describeEvent),
        replayedResults,
        emptyDataEvents: resume.events.filter((event) => event.data.trim() === '{}').length,
        resumeEnd: resume.end,
      },
    };
  } finally {
    await proxy.close();
  }
}
