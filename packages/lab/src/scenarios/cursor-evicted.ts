import { LabControlClient } from '../control-client.js';
import { McpHttpSession, isResponseTo } from '../mcp-http-client.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import type { ScenarioSummary } from './summary.js';

/** Progress notifications read before the client drops the connection. */
const DROP_AFTER_PROGRESS = 2;

/**
 * The client drops mid-request; before it resumes, the server's buffer loses the cursor. The lab
 * answers the resume with 404 (the session stays valid), and the client, following the seed, retries
 * the request from scratch instead of assuming completion.
 */
export async function runCursorEvicted(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, controlUrl, fetch } = resolveOptions(options);
  const control = new LabControlClient(controlUrl);
  const session = await McpHttpSession.open(serverUrl, fetch, 'cursor-evicted');
  const call = session.toolCall('stream_progress', { count: 20, delay: 50 });
  const drop = new AbortController();
  let progressSeen = 0;
  const first = await session.post(call.message, {
    signal: drop.signal,
    onEvent: (event) => {
      if (event.message && 'method' in event.message && event.message.method === 'notifications/progress')
        progressSeen++;
      if (progressSeen === DROP_AFTER_PROGRESS) drop.abort();
    },
  });
  const cursor = first.events.filter((event) => event.id !== undefined).at(-1)?.id;
  if (cursor === undefined) throw new Error('cursor-evicted: no event id arrived before the drop');
  const eviction = await control.evict(session.sessionId, cursor);
  let resumeError: string | undefined;
  const resume = await session.get(cursor).catch((error: unknown) => {
    resumeError = error instanceof Error ? error.message : String(error);
    return undefined;
  });
  const resumeTerminal = resume?.events.some((event) => isResponseTo(event.message, call.id)) ?? false;
  // The seed's rule for a 404/409 on the stream: retry the request from scratch.
  const retry = resume?.status === 200 ? undefined : await session.callTool('stream_progress', { count: 3, delay: 5 });
  const retryTerminal = retry?.read.events.some((event) => isResponseTo(event.message, retry.call.id)) ?? false;
  await session.close().catch(() => undefined);
  return {
    scenario: 'cursor-evicted',
    sessionId: session.sessionId,
    terminalDeliveries: Number(resumeTerminal) + Number(retryTerminal),
    distinctTerminalStreams: Number(resumeTerminal) + Number(retryTerminal),
    reconnects: 1,
    resumeStatuses: resume ? [resume.status] : [],
    finding:
      `The cursor was evicted (${eviction.evictedEvents} event(s) dropped); the resume ${resume ? `answered ${resume.status}` : `was rejected (${resumeError ?? ''})`}` +
      (retry ? `, and the request retried from scratch ${retryTerminal ? 'completed' : 'did not complete'}.` : '.'),
    durationMs: Date.now() - started,
    details: {
      requestId: call.id,
      cursor,
      eviction,
      resumeBody: resume?.body,
      resumeError,
      retriedFromScratch: retry !== undefined,
      retryCompleted: retryTerminal,
    },
  };
}
