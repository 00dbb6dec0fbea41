import { setTimeout as sleep } from 'node:timers/promises';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { LabControlClient } from '../control-client.js';
import { isResponseTo } from '../mcp-http-client.js';
import type { McpHttpSession, ReadOptions, StreamEvent, StreamRead } from '../mcp-http-client.js';
import type { ScenarioSummary } from './summary.js';

/** A plain pause (pacing, backoff); waiting for a condition polls it instead. */
export { sleep };

/** Whether a message is a JSON-RPC response (result or error); `data: {}` and other non-JSON-RPC data are not. */
export function isTerminalMessage(
  message: JSONRPCMessage | undefined,
): message is JSONRPCMessage & { id: string | number } {
  return message !== undefined && 'id' in message && ('result' in message || 'error' in message);
}

/** Whether an SSE event's data holds a JSON-RPC message (request, notification or response). */
export function isJsonRpcEvent(event: StreamEvent): boolean {
  const message = event.message as Record<string, unknown> | undefined;
  return (
    message !== undefined &&
    typeof message === 'object' &&
    message.jsonrpc === '2.0' &&
    ('method' in message || 'id' in message)
  );
}

/** Counts the responses of every JSON-RPC request id the client saw (initialize excluded). */
export class ResultTally {
  readonly perRequest: Record<string, number> = {};

  add(read: StreamRead): void {
    for (const event of read.events) {
      const message = event.message;
      if (isTerminalMessage(message) && message.id !== 0)
        this.perRequest[String(message.id)] = (this.perRequest[String(message.id)] ?? 0) + 1;
    }
  }
}

/**
 * A call's result on its first (cut) stream and on its one resumed stream, and the summary's delivery
 * counts (`ScenarioSummary`) of a raw client's cut-and-resume scenario.
 */
export function cutResumeCounts(
  first: StreamRead,
  resume: StreamRead,
  callId: string | number,
  resumeStatuses: number[],
  tally: ResultTally,
): {
  terminalOnFirst: number;
  terminalOnResume: number;
  counts: Pick<
    ScenarioSummary,
    'terminalDeliveries' | 'distinctTerminalStreams' | 'reconnects' | 'resumeStatuses' | 'resultsPerRequest'
  >;
} {
  const terminalOnFirst = first.events.filter((event) => isResponseTo(event.message, callId)).length;
  const terminalOnResume = resume.events.filter((event) => isResponseTo(event.message, callId)).length;
  return {
    terminalOnFirst,
    terminalOnResume,
    counts: {
      terminalDeliveries: terminalOnFirst + terminalOnResume,
      distinctTerminalStreams: Number(terminalOnFirst > 0) + Number(terminalOnResume > 0),
      reconnects: resumeStatuses.length,
      resumeStatuses,
      resultsPerRequest: tally.perRequest,
    },
  };
}

/** The text of the first text content item of a tool result, if the message is one. */
export function resultText(message: JSONRPCMessage | undefined): string | undefined {
  if (!message || !('result' in message)) return undefined;
  const content = (message.result as { content?: Array<{ type?: string; text?: string }> }).content;
  return content?.find((item) => item.type === 'text')?.text;
}

/** The id of the last event that carried one. */
export function lastEventId(read: StreamRead): string | undefined {
  return read.events.filter((event) => event.id !== undefined).at(-1)?.id;
}

/**
 * Waits until the lab server has logged the end of a response of `sessionId` that matched, i.e. the
 * server saw the connection drop. Resuming before that gets 409 (the SDK still holds the stream).
 * Bounded: gives up after `timeoutMs` and lets the caller's 409 retry handle it.
 */
export async function waitForServerToSeeDrop(
  control: LabControlClient,
  sessionId: string,
  match: { method: string; lastEventId?: string },
  timeoutMs = 3000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const log = await control.requests(sessionId);
    if (
      log.some(
        (entry) =>
          entry.method === match.method &&
          !entry.completed &&
          entry.lastEventId === match.lastEventId &&
          !entry.restore,
      )
    )
      return true;
    await sleep(20);
  }
  return false;
}

/**
 * GET with Last-Event-ID; a 409 (the server still holds the dropped stream) is retried a few times
 * with a short backoff. Every status is appended to `statuses`.
 */
export async function resumeStream(
  session: McpHttpSession,
  cursor: string,
  statuses: number[],
  options: ReadOptions = {},
): Promise<StreamRead> {
  for (let attempt = 1; ; attempt++) {
    const read = await session.get(cursor, options);
    statuses.push(read.status);
    if (read.status !== 409 || attempt >= 5) return read;
    await sleep(50 * attempt);
  }
}

/**
 * GET with Last-Event-ID, its status appended to `statuses`. A resume the fetch itself rejects (a fetch
 * wrapper such as a guard refused it in the process) never left: its message goes to `errors`, and the
 * answer is undefined.
 */
export async function resumeUnlessRejected(
  session: McpHttpSession,
  cursor: string,
  statuses: number[],
  errors: string[],
): Promise<StreamRead | undefined> {
  let read: StreamRead;
  try {
    read = await session.get(cursor);
  } catch (error) {
    errors.push(error instanceof Error ? error.message : String(error));
    return undefined;
  }
  statuses.push(read.status);
  return read;
}
