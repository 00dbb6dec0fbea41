import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { isResponseTo } from '../mcp-http-client.js';
import type { McpHttpSession, StreamRead, ToolCall } from '../mcp-http-client.js';
import type { ScenarioSummary } from './summary.js';
import { resumeUnlessRejected } from './wire-helpers.js';

/** One arrival of the main request's terminal response. */
export interface TerminalDelivery {
  /** 0 for the POST response, n for the n-th reconnect. */
  streamIndex: number;
  eventId: string | undefined;
  message: JSONRPCMessage;
}

/** `resume-rejected`: the fetch itself rejected the resume (e.g. a guard refused it). */
type SeedStopReason = 'error-status' | 'empty-replay' | 'no-cursor' | 'max-reconnects' | 'resume-rejected';

export interface SeedLoopResult {
  call: ToolCall;
  deliveries: TerminalDelivery[];
  distinctTerminalStreams: number;
  reconnects: number;
  resumeStatuses: number[];
  /** Messages of resumes the fetch rejected. */
  resumeErrors: string[];
  /** The cursor the client sent on every reconnect. */
  staleCursor: string | undefined;
  stoppedBecause: SeedStopReason;
  streams: Array<{ status: number; events: number; end: StreamRead['end'] }>;
}

export interface SeedLoopOptions {
  count: number;
  delay: number;
  maxReconnects: number;
  /** Called for every delivery of the terminal response, in order, before the next reconnect. */
  onTerminal?: (delivery: TerminalDelivery) => Promise<void>;
}

/**
 * The seed's client. Its reconnect layer treats every close, clean or not, as a transient drop and
 * reconnects at once with `Last-Event-ID`. Its cursor advances only on events that are not the
 * request's terminal response (those go straight to the request handler), so every reconnect sends
 * the same stale cursor: the id of the last progress notification. It stops on an error status, on
 * an empty replay, or at the safety cap.
 */
export async function runSeedClient(session: McpHttpSession, options: SeedLoopOptions): Promise<SeedLoopResult> {
  const call = session.toolCall('stream_progress', { count: options.count, delay: options.delay });
  const deliveries: TerminalDelivery[] = [];
  const streams: SeedLoopResult['streams'] = [];
  const resumeStatuses: number[] = [];
  const resumeErrors: string[] = [];
  let cursor: string | undefined;
  let reconnects = 0;

  async function consume(read: StreamRead, streamIndex: number): Promise<void> {
    streams.push({ status: read.status, events: read.events.length, end: read.end });
    for (const event of read.events) {
      if (isResponseTo(event.message, call.id)) {
        const delivery = { streamIndex, eventId: event.id, message: event.message! };
        deliveries.push(delivery);
        await options.onTerminal?.(delivery);
      } else if (event.id !== undefined) {
        cursor = event.id;
      }
    }
  }

  let read = await session.post(call.message);
  await consume(read, 0);
  let stoppedBecause: SeedStopReason;
  for (;;) {
    if (read.status !== 200) {
      stoppedBecause = 'error-status';
      break;
    }
    if (reconnects > 0 && read.events.length === 0) {
      stoppedBecause = 'empty-replay';
      break;
    }
    if (cursor === undefined) {
      stoppedBecause = 'no-cursor';
      break;
    }
    if (reconnects >= options.maxReconnects) {
      stoppedBecause = 'max-reconnects';
      break;
    }
    reconnects++;
    const resumed = await resumeUnlessRejected(session, cursor, resumeStatuses, resumeErrors);
    if (!resumed) {
      stoppedBecause = 'resume-rejected';
      break;
    }
    read = resumed;
    await consume(read, reconnects);
  }
  return {
    call,
    deliveries,
    distinctTerminalStreams: new Set(deliveries.map((delivery) => delivery.streamIndex)).size,
    reconnects,
    resumeStatuses,
    resumeErrors,
    staleCursor: cursor,
    stoppedBecause,
    streams,
  };
}

/** A seed loop's counts as a scenario summary gives them: the final result's deliveries, their streams, the resumes. */
export function seedLoopCounts(
  loop: SeedLoopResult,
): Pick<ScenarioSummary, 'terminalDeliveries' | 'distinctTerminalStreams' | 'reconnects' | 'resumeStatuses'> {
  return {
    terminalDeliveries: loop.deliveries.length,
    distinctTerminalStreams: loop.distinctTerminalStreams,
    reconnects: loop.reconnects,
    resumeStatuses: loop.resumeStatuses,
  };
}

/** The details of a loop that runs until it stops (seed-loop, endless-loop): its cursor, why it stopped, each stream. */
export function seedLoopDetails(loop: SeedLoopResult): ScenarioSummary['details'] {
  return {
    requestId: loop.call.id,
    staleCursor: loop.staleCursor,
    stoppedBecause: loop.stoppedBecause,
    resumeErrors: loop.resumeErrors,
    terminalEventIds: loop.deliveries.map((delivery) => delivery.eventId),
    streams: loop.streams,
  };
}
