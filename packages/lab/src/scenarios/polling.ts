import { McpHttpSession, isResponseTo } from '../mcp-http-client.js';
import type { StreamRead } from '../mcp-http-client.js';
import { storeVariantUrl } from '../store-variants.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import type { ScenarioSummary } from './summary.js';
import { ResultTally, isJsonRpcEvent, resumeUnlessRejected, sleep } from './wire-helpers.js';

/** Stream closes the server performs before answering. */
export const POLLING_CLOSES = 12;
/** Time between the server's closes, ms: well above the lab's `retry:` (100 ms) so each close finds the client connected. */
export const POLLING_INTERVAL_MS = 250;
/** Used when no `retry:` arrived. */
const DEFAULT_RETRY_MS = 100;

/**
 * SEP-1699 polling (protocol 2025-11-25): the SDK server's priming event (an id, `retry:`, empty
 * data) opens the POST stream; `poll_task` closes the stream every 250 ms with `closeSSEStream`;
 * the client comes back with Last-Event-ID after `retry` each time. Each poll answers 200 and
 * usually ends with no message; the result arrives once, on the last poll.
 */
export async function runPolling(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, fetch } = resolveOptions(options);
  const maxPolls = Math.max(options.maxReconnects ?? 0, POLLING_CLOSES + 10);
  const session = await McpHttpSession.open(storeVariantUrl(serverUrl, 'bounded'), fetch, 'polling');
  const tally = new ResultTally();
  const call = session.toolCall('poll_task', { closes: POLLING_CLOSES, intervalMs: POLLING_INTERVAL_MS });
  let retryMs: number | undefined;
  let cursor: string | undefined;
  let terminals = 0;
  const terminalStreams = new Set<number>();
  const polls: Array<{ status: number; events: number; messages: number; end: StreamRead['end'] }> = [];
  const absorb = (read: StreamRead, index: number): void => {
    tally.add(read);
    for (const event of read.events) {
      if (event.retry !== undefined) retryMs = event.retry;
      if (event.id !== undefined) cursor = event.id;
      if (isResponseTo(event.message, call.id)) {
        terminals++;
        terminalStreams.add(index);
      }
    }
  };
  const first = await session.post(call.message);
  absorb(first, 0);
  const primed = first.events.some((event) => event.id !== undefined && event.data === '');
  const resumeStatuses: number[] = [];
  const resumeErrors: string[] = [];
  while (terminals === 0 && cursor !== undefined && polls.length < maxPolls) {
    await sleep(retryMs ?? DEFAULT_RETRY_MS);
    const read = await resumeUnlessRejected(session, cursor, resumeStatuses, resumeErrors);
    if (!read) break;
    polls.push({
      status: read.status,
      events: read.events.length,
      messages: read.events.filter(isJsonRpcEvent).length,
      end: read.end,
    });
    if (read.status !== 200) break;
    absorb(read, polls.length);
  }
  await session.close().catch(() => undefined);
  const emptyPolls = polls.filter((poll) => poll.messages === 0).length;
  return {
    scenario: 'polling',
    sessionId: session.sessionId,
    terminalDeliveries: terminals,
    distinctTerminalStreams: terminalStreams.size,
    reconnects: polls.length,
    resumeStatuses,
    resultsPerRequest: tally.perRequest,
    finding:
      `The server announced polling (priming event${retryMs !== undefined ? `, retry ${retryMs} ms` : ''}) and closed the stream; the client polled ${polls.length} time(s) ` +
      `(${emptyPolls} ended with no message) and received the result ${terminals} time(s).`,
    durationMs: Date.now() - started,
    details: {
      requestId: call.id,
      primingEvent: primed,
      retryMs,
      firstStreamEvents: first.events.length,
      firstStreamEnd: first.end,
      polls,
      emptyPolls,
      terminalOnPoll: [...terminalStreams][0],
      resumeErrors,
    },
  };
}
