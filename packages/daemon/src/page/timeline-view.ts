import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
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
  ATTR_SERVER_ADDRESS,
  TimelineMark,
} from '@resumewatch/semconv';
import { EventType, type TimelineEvent } from './timeline-event.js';

/** One lane of a timeline: a stream of the request (as its spans name it), or the request itself. */
interface Lane {
  /** The stream id the spans carry; empty for the request's own lane (spans without a stream). */
  stream: string;
  /** The stream was opened by a resume (Last-Event-ID). */
  resumed: boolean;
}

/** One event as the page draws it: where, when, what, and the attributes that say so. */
interface DrawnEvent {
  lane: number;
  start: number;
  end: number;
  type: EventType;
  /** Terminals: how it was delivered or what was wrong with it. */
  mark?: TimelineMark;
  /** Resumes: the outcome; reattaches: accepted or not. */
  outcome?: string;
  /** What the guard or the gateway did here. */
  guard?: string;
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

function drawEvent(e: TimelineEvent, lane: number, resumedStreams: ReadonlySet<string>): DrawnEvent {
  const a = e.attributes;
  const out: DrawnEvent = { lane, start: e.start, end: e.end, type: e.type, facts: facts(a), span_id: e.span_id };
  const guard = str(a[ATTR_MCP_GUARD_ACTION]);
  if (guard) out.guard = guard;
  if (e.type === EventType.TERMINAL) out.mark = terminalMark(a, resumedStreams);
  else if (e.type === EventType.RESUME) {
    const outcome = str(a[ATTR_MCP_RESUME_OUTCOME]);
    if (outcome) out.outcome = outcome;
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
  ATTR_SERVER_ADDRESS,
];

function facts(a: TimelineEvent['attributes']): string[] {
  const out: string[] = [];
  for (const name of FACTS) if (a[name] !== undefined) out.push(`${name} ${String(a[name])}`);
  return out;
}
