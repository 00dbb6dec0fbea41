import { startFaultProxy } from '../fault-proxy.js';
import { McpHttpSession, isResponseTo } from '../mcp-http-client.js';
import type { StreamRead } from '../mcp-http-client.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import type { ScenarioSummary } from './summary.js';
import { resumeUnlessRejected, sleep } from './wire-helpers.js';

const PROGRESS_COUNT = 8;
/** The priming event and three progress notifications reach the client; then the TCP connection is cut. */
const CUT_AFTER_EVENTS = 4;

/**
 * A valid resume: the fault proxy cuts the TCP connection in the middle of a tool's stream; the client,
 * which has not seen the terminal response, resumes with the last id it received and stops as soon as
 * the terminal response arrives. Every event arrives exactly once.
 */
export async function runNetworkCut(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, fetch, maxReconnects } = resolveOptions(options);
  const proxy = await startFaultProxy({ target: serverUrl });
  try {
    const session = await McpHttpSession.open(proxy.url, fetch, 'network-cut');
    const call = session.toolCall('stream_progress', { count: PROGRESS_COUNT, delay: 30 });
    const idDeliveries = new Map<string, number>();
    const progressDeliveries = new Map<number, number>();
    const terminalStreams = new Set<number>();
    const resumeStatuses: number[] = [];
    const resumeErrors: string[] = [];
    let terminalDeliveries = 0;
    let cursor: string | undefined;

    const absorb = (read: StreamRead, streamIndex: number): void => {
      for (const event of read.events) {
        if (event.id !== undefined) {
          cursor = event.id;
          idDeliveries.set(event.id, (idDeliveries.get(event.id) ?? 0) + 1);
        }
        const message = event.message;
        if (message && 'method' in message && message.method === 'notifications/progress') {
          const progress = Number((message.params as { progress?: unknown } | undefined)?.progress);
          progressDeliveries.set(progress, (progressDeliveries.get(progress) ?? 0) + 1);
        }
        if (isResponseTo(message, call.id)) {
          terminalDeliveries++;
          terminalStreams.add(streamIndex);
        }
      }
    };

    proxy.armCut({ method: 'POST', afterEvents: CUT_AFTER_EVENTS });
    const first = await session.post(call.message);
    absorb(first, 0);
    let reconnects = 0;
    while (terminalDeliveries === 0 && cursor !== undefined && reconnects < maxReconnects) {
      reconnects++;
      const read = await resumeUnlessRejected(session, cursor, resumeStatuses, resumeErrors);
      if (!read) break;
      // 409: the server has not yet noticed the cut and still holds the old stream open.
      if (read.status === 409) {
        await sleep(50 * reconnects);
        continue;
      }
      if (read.status !== 200) break;
      absorb(read, reconnects);
    }
    await session.close().catch(() => undefined);

    const duplicateEventIds = [...idDeliveries].filter(([, count]) => count > 1).map(([id]) => id);
    const missingProgress: number[] = [];
    for (let progress = 1; progress <= PROGRESS_COUNT; progress++)
      if (progressDeliveries.get(progress) !== 1) missingProgress.push(progress);
    const exactlyOnce = duplicateEventIds.length === 0 && missingProgress.length === 0 && terminalDeliveries === 1;
    return {
      scenario: 'network-cut',
      sessionId: session.sessionId,
      terminalDeliveries,
      distinctTerminalStreams: terminalStreams.size,
      reconnects,
      resumeStatuses,
      finding: exactlyOnce
        ? `The proxy cut the TCP connection after ${proxy.cuts[0]?.eventsForwarded ?? '?'} event(s); the client resumed with its last event id and every event arrived exactly once.`
        : `Resumption after the cut was not exact: duplicates ${JSON.stringify(duplicateEventIds)}, progress not delivered exactly once ${JSON.stringify(missingProgress)}, terminal deliveries ${terminalDeliveries}.`,
      durationMs: Date.now() - started,
      details: {
        requestId: call.id,
        firstStreamEnd: first.end,
        firstStreamError: first.error,
        cut: proxy.cuts[0],
        eventsDelivered: [...idDeliveries.values()].reduce((sum, count) => sum + count, 0),
        distinctEventIds: idDeliveries.size,
        duplicateEventIds,
        progressNotDeliveredExactlyOnce: missingProgress,
        everyEventExactlyOnce: exactlyOnce,
        resumeErrors,
      },
    };
  } finally {
    await proxy.close();
  }
}
