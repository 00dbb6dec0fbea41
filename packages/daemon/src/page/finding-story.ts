import { ATTR_MCP_METHOD_NAME, FindingKind, RequestRecovery } from '@resumewatch/semconv';
import type { Finding } from '@resumewatch/detector';
import { RequestEnd, type DrawnEvent } from './timeline-view.js';

/** A time of day as a story says it: `12:00:01.200 UTC`. */
function clock(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 23)} UTC`;
}

function duration(ms: number): string {
  return ms >= 1000 ? `${Number((ms / 1000).toFixed(2))} s` : `${Math.round(ms)} ms`;
}

/** What one finding's story reads: the finding, and the events its timeline drew (the spans' times). */
interface StoryInput {
  f: Finding;
  events: readonly DrawnEvent[];
}

function request(f: Finding): string {
  return f.request_id ? `request ${f.request_id}` : 'the request';
}

function between(f: Finding): string {
  return f.last_time_unix_ms > f.first_time_unix_ms
    ? `between ${clock(f.first_time_unix_ms)} and ${clock(f.last_time_unix_ms)} (${duration(f.last_time_unix_ms - f.first_time_unix_ms)})`
    : `at ${clock(f.first_time_unix_ms)}`;
}

const taskName = (f: Finding): string => (f.task_id ? `task ${f.task_id}` : 'its task');

const times = (n: number | undefined): string => (n === 1 ? 'once' : `${n ?? 'several'} times`);

/** The request span the timeline drew (a client's, with its end marked), the latest ending one. */
function requestSpan(events: readonly DrawnEvent[]): DrawnEvent | undefined {
  let found: DrawnEvent | undefined;
  for (const e of events) if (e.ended && (!found || e.end >= found.end)) found = e;
  return found;
}

/** The words of how a request ended, after "ended". */
const END_WORDS: Record<string, string> = {
  [RequestEnd.TIMEOUT]: 'at its deadline (timeout)',
  [RequestEnd.ABORTED]: 'aborted by the client',
  [RequestEnd.STREAM_BROKEN]: 'with its stream broken',
  [RequestEnd.CANCELLED]: 'cancelled by the client',
};

function lostResult({ f, events }: StoryInput): string {
  const span = requestSpan(events);
  const method = span?.facts
    .find((x) => x.startsWith(`${ATTR_MCP_METHOD_NAME} `))
    ?.slice(ATTR_MCP_METHOD_NAME.length + 1);
  const life = span
    ? ` lived ${duration(span.end - span.start)}, from ${clock(span.start)} to ${clock(span.end)}, and`
    : '';
  const end = f.request_end ?? (span?.ended !== RequestEnd.RESULT ? span?.ended : undefined);
  const how = end ? `ended ${END_WORDS[end] ?? `(${end})`}` : 'ended';
  const recovery =
    f.recovery === RequestRecovery.RESUMED
      ? `; its stream had ended without the result and the client resumed it${f.outcome ? ` (${f.outcome})` : ''}`
      : f.recovery === RequestRecovery.NO_EVENT_ID
        ? '; its stream had ended without the result and carried no event id to resume from'
        : f.recovery === RequestRecovery.NOT_RESUMED
          ? '; its stream had ended without the result and the client never resumed it'
          : f.recovery === RequestRecovery.NOT_REISSUED
            ? '; its stream broke and the client did not re-issue it'
            : '';
  const name = method ? `The ${method} ${request(f)}` : `The ${request(f)}`.replace('The the', 'The');
  // Without its span held, the finding's own time of the end.
  const at = span ? '' : ` at ${clock(f.last_time_unix_ms)}`;
  return `${name}${life} ${how}${at} without its result${recovery}: the result never reached the application.`;
}

/**
 * Every finding kind's one sentence: what happened, from the finding's fields and the times its
 * timeline's spans carry. A Record over FindingKind: a new kind without a story does not compile.
 */
const STORIES: Record<FindingKind, (s: StoryInput) => string> = {
  [FindingKind.DUPLICATE_TERMINAL]: ({ f }) =>
    `The result of ${request(f)} reached the application ${times((f.duplicates ?? 1) + 1)}, ${f.duplicates ?? 'some'} more after the first, ${between(f)}.`,
  [FindingKind.RESUME_AFTER_TERMINAL]: ({ f }) =>
    `The client resumed ${request(f)} ${between(f)} after its result had already arrived: the replay can deliver it again.`,
  [FindingKind.RECONNECT_STORM]: ({ f }) =>
    `The client reattached or resumed session ${f.session_id || '(none)'} ${times(f.attempts)} ${between(f)}: a reconnect storm.`,
  [FindingKind.SIGNATURE]: ({ f }) =>
    `The client resumed ${request(f)} ${times(f.attempts)} ${between(f)} and its result was replayed each time (${f.duplicates ?? 'some'} deliveries beyond the first): the replay loop.`,
  [FindingKind.AMBIGUOUS_EMPTY_REPLAY]: ({ f }) =>
    `A resume of ${request(f)} ${between(f)} was answered${f.status_code ? ` ${f.status_code}` : ''} with nothing (${f.outcome ?? 'empty'}): nothing says whether its result is still to come.`,
  [FindingKind.CURSOR_LOST]: ({ f }) =>
    `A resume of ${request(f)} ${between(f)} was refused${f.status_code ? ` with ${f.status_code}` : ''} (${f.outcome ?? 'cursor lost'}): the server no longer knows where its stream was, and the result cannot come that way.`,
  [FindingKind.FOREIGN_REPLAY]: ({ f }) =>
    `${f.server ? `Server ${f.server}` : 'The server'} delivered ${request(f)}'s result on stream ${f.stream_id ?? 'another'}, which never carried that request, ${between(f)}: its event store replays across streams.`,
  [FindingKind.CONFLICTING_TERMINAL]: ({ f }) =>
    `${f.server ? `Server ${f.server}` : 'The server'} sent a second, different result for ${request(f)} on stream ${f.stream_id ?? 'another'} after the first on ${f.first_stream_id ? `stream ${f.first_stream_id}` : 'another stream'}, ${between(f)}: the application may hold the wrong one.`,
  [FindingKind.COMPLETED_AFTER_CANCELLATION]: ({ f }) =>
    `The client cancelled ${request(f)}, and its result arrived all the same ${between(f)}: the application was told the call failed while it ran to its end, so a retry runs it twice.`,
  [FindingKind.DUPLICATE_EXECUTION]: ({ f }) =>
    `The first attempt of ${request(f)} lost its stream, the server ran it to its end all the same, and the re-issue ran it again ${between(f)}: the work ran twice.`,
  [FindingKind.POSSIBLE_DUPLICATE_EXECUTION]: ({ f }) =>
    `The first attempt of ${request(f)} lost its stream and was re-issued ${between(f)}; no span says whether the server stopped the first: the work may have run twice.`,
  [FindingKind.LOST_RESULT]: lostResult,
  [FindingKind.DUPLICATE_TASK]: ({ f }) =>
    `The call that created ${taskName(f)} was re-issued with the same idempotency key, and a second task${f.duplicate_task_id ? ` (${f.duplicate_task_id})` : ''} was created ${between(f)}: the work runs twice.`,
  [FindingKind.POSSIBLE_DUPLICATE_TASK]: ({ f }) =>
    `The call that created ${taskName(f)} was re-issued with no idempotency key to tie the attempts, and a second task${f.duplicate_task_id ? ` (${f.duplicate_task_id})` : ''} was created ${between(f)}: the work may run twice.`,
  [FindingKind.LOST_TASK_RESULT]: ({ f }) =>
    `${f.task_id ? `Task ${f.task_id}` : 'A task'} reached its outcome and its client never got it (${f.reason ?? 'lost'}), ${between(f)}.`,
  [FindingKind.TASK_POLL_STORM]: ({ f }) =>
    `The client polled ${taskName(f)} ${times(f.polls)} ${between(f)} (${f.reason ?? 'too often'}): a poll storm.`,
  [FindingKind.DEAD_SESSION_LOOP]: ({ f }) =>
    `The client sent ${f.attempts ?? 'several'} requests on session ${f.session_id || '(none)'} ${between(f)}, each refused${f.status_code ? ` with ${f.status_code}` : ''}, and initialized no new session: a dead-session loop.`,
  [FindingKind.LISTENING_STREAM_LOOP]: ({ f }) =>
    `${f.session_id || f.client === undefined ? `The client opened its listening stream on session ${f.session_id || '(none)'}` : `Client ${f.client} opened the listening stream of a server without sessions`} ${times(f.attempts)} ${between(f)}, ${
      f.status_code !== undefined && f.status_code >= 400
        ? `each answered ${f.status_code}`
        : 'each closed at once with no event'
    }: a listening-stream loop.`,
};

/** The finding's story in one sentence (a task finding's richer one is told by timeline-task.ts). */
export function findingStory(f: Finding, events: readonly DrawnEvent[] = []): string {
  return STORIES[f.kind]({ f, events });
}
