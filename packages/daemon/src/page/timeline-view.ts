import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_MCP_TASK_GONE,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  ATTR_SERVER_ADDRESS,
  ErrorType,
  FindingKind,
  TerminalOutcome,
  TimelineMark,
} from '@resumewatch/semconv';
import type { Finding } from '@resumewatch/detector';
import type { Attempts } from './evidence.js';
import { EventType, type TimelineEvent } from './timeline-event.js';
import type { TaskMoment } from './timeline-task.js';

/**
 * One lane of a timeline: a stream of the request (as its spans name it), or the request itself; in a
 * 2026-07-28 re-issue's timeline, one side (client or server) of one attempt.
 */
export interface Lane {
  /** The stream id the spans carry; empty for the request's own lane (spans without a stream). */
  stream: string;
  /** The stream was opened by a resume (Last-Event-ID). */
  resumed: boolean;
  /** A lane that is no stream (an attempt's side): its name. */
  label?: string;
  /** Nothing is drawn on this lane because no span told it: what is not known. */
  unknown?: string;
}

/**
 * What a 2026-07-28 re-issue's timeline marks at the end of a span: the first attempt's stream broke
 * (its client span ended with an error), and what the server's span says its handler did after the
 * cancellation (ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION): ran on to its result, or stopped.
 */
const Moment = {
  BROKEN: 'broken',
  RAN_ON: 'ran_on',
  STOPPED: 'stopped',
} as const;
type Moment = (typeof Moment)[keyof typeof Moment];

/**
 * What ended a client's request span, marked at the end of its bar: its result (a terminal, or a span
 * that ended without an error), or its error type (ATTR_ERROR_TYPE): the deadline, an abort, a broken stream, a cancel.
 */
export const RequestEnd = {
  RESULT: TerminalOutcome.RESULT,
  TIMEOUT: ErrorType.TIMEOUT,
  ABORTED: ErrorType.ABORTED,
  STREAM_BROKEN: ErrorType.STREAM_BROKEN,
  CANCELLED: ErrorType.CANCELLED,
  OTHER: ErrorType.OTHER,
} as const;
export type RequestEnd = (typeof RequestEnd)[keyof typeof RequestEnd];

/** The end mark's words, as the page shows them at the end of the bar. */
const END_SAID: Record<RequestEnd, string> = {
  [RequestEnd.RESULT]: 'its result',
  [RequestEnd.TIMEOUT]: 'deadline (timeout)',
  [RequestEnd.ABORTED]: 'abort',
  [RequestEnd.STREAM_BROKEN]: 'broken stream',
  [RequestEnd.CANCELLED]: 'cancel',
  [RequestEnd.OTHER]: 'another error',
};

/** What ended a client's request span, from its error type (a tool error is a result all the same). */
function requestEnd(a: TimelineEvent['attributes']): RequestEnd {
  const error = a[ATTR_ERROR_TYPE];
  if (typeof error !== 'string' || error === '' || error === ErrorType.TOOL_ERROR) return RequestEnd.RESULT;
  const known = (Object.values(RequestEnd) as string[]).includes(error);
  return known ? (error as RequestEnd) : RequestEnd.OTHER;
}

/** One event as the page draws it: where, when, what, and the attributes that say so. */
export interface DrawnEvent {
  lane: number;
  start: number;
  end: number;
  type: EventType | Moment | TaskMoment;
  /** The mark's own text (a task's marks: its status, `result`, `gone`); else the type's letter. */
  short?: string;
  /** What a moment means, in words. */
  what?: string;
  /** Terminals: how it was delivered or what was wrong with it. */
  mark?: TimelineMark;
  /** Resumes: the outcome; reattaches: accepted or not. */
  outcome?: string;
  /** What the guard or the gateway did here. */
  guard?: string;
  /** A client's request span: what ended it, marked at the end of its bar, and that in words. */
  ended?: RequestEnd;
  ended_said?: string;
  /** The span's attributes in words, `name value` pairs, for the event's details. */
  facts: string[];
  span_id: string;
}

export interface DrawnTimeline {
  lanes: Lane[];
  /** Earliest first. */
  events: DrawnEvent[];
  start: number;
  end: number;
  /** Events left out between the first ones and the latest. */
  dropped: number;
  /** What the drawing rests on and what is not known, in words (a re-issue's timeline). */
  notes?: string[];
  /** The finding's story in one sentence (finding-story.ts; a task's: timeline-task.ts). */
  story?: string;
  /** A task's timeline (its lanes are a task's life and its polls). */
  task?: true;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Lays a request's events out: one lane per stream (in order of appearance), every terminal marked. */
export function drawTimeline(held: { events: readonly TimelineEvent[]; dropped: number }): DrawnTimeline {
  const events = [...held.events].sort((a, b) => a.start - b.start);
  const resumedStreams = new Set<string>();
  for (const e of events) {
    const stream = str(e.attributes[ATTR_MCP_STREAM_ID]);
    if (e.type === EventType.RESUME && stream) resumedStreams.add(stream);
  }
  const lanes: Lane[] = [{ stream: '', resumed: false }];
  const laneOf = new Map<string, number>([['', 0]]);
  const drawn: DrawnEvent[] = [];
  let start = Infinity;
  let end = -Infinity;
  for (const e of events) {
    const stream = e.type === EventType.CALL ? '' : (str(e.attributes[ATTR_MCP_STREAM_ID]) ?? '');
    let lane = laneOf.get(stream);
    if (lane === undefined) {
      lane = lanes.push({ stream, resumed: resumedStreams.has(stream) }) - 1;
      laneOf.set(stream, lane);
    }
    start = Math.min(start, e.start);
    end = Math.max(end, e.end);
    drawn.push(drawEvent(e, lane, resumedStreams));
  }
  // The request's own lane stays only when something is drawn on it.
  if (!drawn.some((d) => d.lane === 0)) {
    lanes.shift();
    for (const d of drawn) d.lane--;
  }
  return {
    lanes,
    events: drawn,
    start: Number.isFinite(start) ? start : 0,
    end: Number.isFinite(end) ? end : 0,
    dropped: held.dropped,
  };
}

export function drawEvent(e: TimelineEvent, lane: number, resumedStreams: ReadonlySet<string>): DrawnEvent {
  const a = e.attributes;
  const out: DrawnEvent = { lane, start: e.start, end: e.end, type: e.type, facts: facts(a), span_id: e.span_id };
  const guard = str(a[ATTR_MCP_GUARD_ACTION]);
  if (guard) out.guard = guard;
  if (e.type === EventType.TERMINAL) out.mark = terminalMark(a, resumedStreams);
  else if (e.type === EventType.RESUME) {
    const outcome = str(a[ATTR_MCP_RESUME_OUTCOME]);
    if (outcome) out.outcome = outcome;
  } else if (e.type === EventType.CALL && !e.server) {
    out.ended = requestEnd(a);
    const status = a[ATTR_HTTP_RESPONSE_STATUS_CODE];
    // A request the server refused (a dead session's): its status says what ended it.
    out.ended_said = typeof status === 'number' && status >= 400 ? `refused ${status}` : END_SAID[out.ended];
  } else if (e.type === EventType.REATTACH && typeof a[ATTR_MCP_REATTACH_ACCEPTED] === 'boolean') {
    out.outcome = a[ATTR_MCP_REATTACH_ACCEPTED] ? 'session accepted' : 'session refused';
  }
  return out;
}

/** The worst thing the terminal's span says, else how it arrived: on a resumed stream (replay) or not. */
function terminalMark(a: TimelineEvent['attributes'], resumedStreams: ReadonlySet<string>): TimelineMark {
  if (a[ATTR_MCP_TERMINAL_FOREIGN] === true) return TimelineMark.FOREIGN;
  if (a[ATTR_MCP_TERMINAL_CONFLICT] === true) return TimelineMark.CONFLICTING;
  if (a[ATTR_MCP_TERMINAL_DUPLICATE] === true) return TimelineMark.DUPLICATE;
  const stream = str(a[ATTR_MCP_STREAM_ID]);
  return stream && resumedStreams.has(stream) ? TimelineMark.REPLAY : TimelineMark.LIVE;
}

/** The attributes an engineer reads on an event, in this order. */
const FACTS: readonly string[] = [
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_ERROR_TYPE,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_GONE,
  ATTR_SERVER_ADDRESS,
];

function facts(a: TimelineEvent['attributes']): string[] {
  const out: string[] = [];
  for (const name of FACTS) if (a[name] !== undefined) out.push(`${name} ${String(a[name])}`);
  return out;
}

/** The attempts of a re-issue, in the order drawn, and the name of each. */
const ATTEMPTS = [
  ['first', 'first attempt'],
  ['reissue', 're-issue'],
] as const;

/**
 * A 2026-07-28 re-issue's finding (duplicate_execution, possible_duplicate_execution) on one time axis:
 * for each attempt, its client's side (the request span, its terminal) and its server's side (the
 * server's span), one lane each. The first attempt's broken stream and what the server's span says it
 * did after the cancellation are marked where they happened. What no span told is said: a lane for the
 * first attempt's server side with nothing on it, and notes.
 */
export function drawReissueTimeline(f: Finding, attempts: Attempts): DrawnTimeline {
  const lanes: Lane[] = [];
  const drawn: DrawnEvent[] = [];
  const notes: string[] = [];
  const none: ReadonlySet<string> = new Set();
  let start = Infinity;
  let end = -Infinity;
  let fateTold = false;
  for (const [which, name] of ATTEMPTS) {
    const events = [...(attempts[which]?.events ?? [])].sort((a, b) => a.start - b.start);
    const laneOf = (server: boolean): number => {
      const label = `${name} \u00b7 ${server ? 'server' : 'client'}`;
      const at = lanes.findIndex((l) => l.label === label);
      return at >= 0 ? at : lanes.push({ stream: '', resumed: false, label }) - 1;
    };
    // Client side first, whatever comes first in time: the lanes read client, server, for each attempt.
    if (events.some((e) => !e.server)) laneOf(false);
    for (const e of events) {
      const lane = laneOf(e.server === true);
      start = Math.min(start, e.start);
      end = Math.max(end, e.end);
      drawn.push(drawEvent(e, lane, none));
      const moment = e.type === EventType.CALL ? momentOf(e, which === 'first') : undefined;
      if (moment) drawn.push({ lane, start: e.end, end: e.end, ...moment, facts: [], span_id: e.span_id });
      if (moment && moment.type !== Moment.BROKEN) fateTold = true;
    }
    if (which === 'first' && events.length === 0)
      notes.push(
        'No span of the first attempt is held (the evidence window let them go before the finding): only the re-issue is drawn.',
      );
  }
  if (!fateTold) {
    const label = `first attempt \u00b7 server`;
    const unknown = 'no span says whether the server stopped or finished the first attempt';
    const at = lanes.findIndex((l) => l.label === label);
    if (at >= 0) lanes[at]!.unknown = unknown;
    else {
      // After the first attempt's client lane, before the re-issue's.
      const reissueAt = lanes.findIndex((l) => l.label?.startsWith('re-issue'));
      const index = reissueAt >= 0 ? reissueAt : lanes.length;
      lanes.splice(index, 0, { stream: '', resumed: false, label, unknown });
      for (const d of drawn) if (d.lane >= index) d.lane++;
    }
  }
  notes.push(...reissueNotes(f, fateTold));
  drawn.sort((a, b) => a.start - b.start);
  return {
    lanes,
    events: drawn,
    start: Number.isFinite(start) ? start : f.first_time_unix_ms,
    end: Number.isFinite(end) ? end : f.last_time_unix_ms,
    dropped: (attempts.first?.dropped ?? 0) + (attempts.reissue?.dropped ?? 0),
    notes,
  };
}

/** The moment a request span's end marks, if any: the first attempt's broken stream; the server's fate. */
export function momentOf(e: TimelineEvent, first: boolean): Pick<DrawnEvent, 'type' | 'what'> | undefined {
  if (e.server) {
    const completed = e.attributes[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION];
    if (completed === true) return { type: Moment.RAN_ON, what: 'the server finished it after the cancellation' };
    if (completed === false) return { type: Moment.STOPPED, what: 'the server stopped at the cancellation' };
    return undefined;
  }
  const error = str(e.attributes[ATTR_ERROR_TYPE]);
  if (!first || error === undefined) return undefined;
  return {
    type: Moment.BROKEN,
    what: error === ErrorType.STREAM_BROKEN ? 'its stream broke before the result' : `its stream ended (${error})`,
  };
}

/** What the finding rests on and what is not known, in words. */
function reissueNotes(f: Finding, fateTold: boolean): string[] {
  if (f.kind === FindingKind.DUPLICATE_EXECUTION)
    return [
      "The first attempt's stream broke before its result; the server's span of the first attempt says its handler went on " +
        'to produce the result after the cancellation; the call was re-issued and ran again: the work ran twice.',
    ];
  return [
    "Known: the first attempt's stream broke before its result, and the call was re-issued.",
    fateTold
      ? 'The server said what it did of the first attempt only after the re-issue was reported.'
      : 'Not known: whether the server stopped the first attempt or ran it to the end. No span of its trace says so ' +
        '(an uninstrumented server, a gateway, which sees only its side of the stream, or a server span that did not ' +
        'arrive within --reissue-settle): the work may have run twice.',
  ];
}
