import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_SERVER_ADDRESS,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
  StreamKind,
} from '@resumewatch/semconv';
import { UNKNOWN_SERVICE, type AttributeValue, type Finding, type SpanRecord } from '@resumewatch/detector';

/** What a timeline draws of one span. */
export const EventType = {
  /** The MCP request span itself. */
  CALL: 'call',
  TERMINAL: 'terminal',
  RESUME: 'resume',
  REATTACH: 'reattach',
} as const;
export type EventType = (typeof EventType)[keyof typeof EventType];

/**
 * One span of a request, as its timeline draws it: the attributes the span carried (under the id policy
 * the spans were made with: the page shows what they carry, never more), nothing else. Times are Unix ms.
 */
export interface TimelineEvent {
  type: EventType;
  start: number;
  end: number;
  span_id: string;
  /** The span's own attributes the timeline reads, as they arrived. */
  attributes: Record<string, AttributeValue>;
}

/** The attributes a timeline reads; the others are not kept. */
const SHOWN: readonly string[] = [
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_GUARD_ACTION,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_METHOD_NAME,
  ATTR_ERROR_TYPE,
  ATTR_SERVER_ADDRESS,
];

/**
 * The request a span or a finding is about: (service, session, request), as the detector keys it. The
 * parts length-prefixed, so that no two triples give one key; made for every span the daemon accepts.
 */
function requestKey(service: string, session: string, request: string): string {
  return `${service.length}:${service}${session.length}:${session}${request}`;
}

export function findingKey(f: Finding): string {
  return requestKey(f.service, f.session_id, f.request_id);
}

/**
 * The request key of a span the detector accepted, or undefined for a span that concerns no single
 * request (the listening stream, a span without session or request id). Cheap: it runs for every span.
 */
export function requestKeyOf(span: SpanRecord): string | undefined {
  const attrs = span.attributes;
  const session = attrs[ATTR_MCP_SESSION_ID];
  const request = attrs[ATTR_JSONRPC_REQUEST_ID];
  if (typeof session !== 'string' || session === '') return undefined;
  if (typeof request !== 'string' && typeof request !== 'number') return undefined;
  if (request === '') return undefined;
  if (attrs[ATTR_MCP_STREAM_KIND] === StreamKind.LISTENING && span.name !== SPAN_REQUEST_TERMINAL) return undefined;
  return requestKey(span.service || UNKNOWN_SERVICE, session, typeof request === 'string' ? request : String(request));
}

/** The timeline event of a span of a request (requestKeyOf gave its key): made only for a reported request. */
export function timelineEvent(span: SpanRecord): TimelineEvent {
  const attrs = span.attributes;
  const attributes: Record<string, AttributeValue> = {};
  for (const name of SHOWN) {
    const value = attrs[name];
    if (value !== undefined) attributes[name] = value;
  }
  return {
    type: eventType(span.name),
    start: span.startTimeUnixMs,
    end: span.endTimeUnixMs,
    span_id: span.spanId,
    attributes,
  };
}

function eventType(name: string): EventType {
  if (name === SPAN_REQUEST_TERMINAL) return EventType.TERMINAL;
  if (name === SPAN_STREAM_RESUME) return EventType.RESUME;
  if (name === SPAN_SESSION_REATTACH) return EventType.REATTACH;
  return EventType.CALL;
}
