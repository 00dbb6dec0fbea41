import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
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
  ATTR_MCP_TASK_GONE,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  ATTR_SERVER_ADDRESS,
  FindingKind,
  SPAN_LISTENING_REFUSED,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
  SPAN_TASK_STATUS,
  StreamKind,
  TASK_FINDING_KINDS,
} from '@resumewatch/semconv';
import {
  SPAN_KIND_SERVER,
  UNKNOWN_SERVICE,
  listeningClientOf,
  type AttributeValue,
  type Finding,
  type SpanRecord,
} from '@resumewatch/detector';
import {
  KEY_REQUEST,
  KEY_SESSION,
  KEY_TASK,
  KEY_TRACE,
  SpanKey,
  hashHead,
  hashTail,
  requestId,
  setKey,
} from './span-key.js';

/** What a timeline draws of one span. */
export const EventType = {
  /** The MCP request span itself. */
  CALL: 'call',
  TERMINAL: 'terminal',
  RESUME: 'resume',
  REATTACH: 'reattach',
  /** A task's status notification (SPAN_TASK_STATUS). */
  TASK_STATUS: 'task_status',
  /** A GET for the listening stream the server refused (SPAN_LISTENING_REFUSED). */
  LISTENING_REFUSED: 'listening_refused',
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
  /** A server's span (OTLP kind SERVER): the 2026-07-28 timeline draws the server's side apart. */
  server?: true;
  /** The span's own attributes the timeline reads, as they arrived. */
  attributes: Record<string, AttributeValue>;
}

/** The attributes a timeline reads; the others are not kept. */
export const SHOWN: readonly string[] = [
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
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  // A task's spans (timeline-task.ts): which task, what its status was, what the server announced, whether
  // the answer carried the outcome or said the task is gone.
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_GONE,
];
/** Each shown name's bit in timelineEvent's 32-bit mask. */
const SHOWN_INDEX = new Map(SHOWN.map((name, index) => [name, index]));
if (SHOWN.length > 31) throw new Error('timelineEvent marks the shown attributes in a 32-bit mask: at most 31');

/**
 * The request a span or a finding is about: (service, session, request), as the detector keys it. The
 * parts length-prefixed, so that no two triples give one key. A finding's page entry is keyed by it; the
 * evidence keys spans by the same parts without making the string (SpanKey, keyText).
 */
function requestKey(service: string, session: string, request: string): string {
  return `${service.length}:${service}${session.length}:${session}${request}`;
}

/**
 * A span without a session (2026-07-28: a request, its terminal, the server's span of it) by its trace:
 * one attempt of a call. A request key starts with a digit, so the two never meet.
 */
function traceKey(traceId: string): string {
  return `~${traceId}`;
}

/**
 * A task's spans (those that carry ATTR_MCP_TASK_ID: the call that created it, its tasks/* requests, its
 * status notifications) by (service, task id), as the detector keys its task records. `^` starts no other
 * key (a request key starts with a digit, a trace key with `~`).
 */
export function taskKey(service: string, taskId: string): string {
  return `^${service.length}:${service}${taskId}`;
}

/**
 * A session's refused attempts (a refused request, a listening stream) by (service, session): what a loop
 * finding's timeline draws. `!` starts no other key.
 */
function sessionKey(service: string, session: string): string {
  return `!${service.length}:${service}${session}`;
}

/**
 * A listening stream's re-opens without a session (a stateless server's) by (service, client), as the
 * detector keys them (listeningClientOf): a session key whose "session" is clientSession's.
 */
function clientKey(service: string, client: string): string {
  return sessionKey(service, clientSession(client));
}

/** The "session" part of a client's key: the client after \u0001, which no session id holds. */
function clientSession(client: string): string {
  return `\u0001${client}`;
}

/** A loop finding (dead_session_loop, listening_stream_loop): drawn from its session's refused attempts. */
export function isLoopFinding(f: Finding): boolean {
  return f.kind === FindingKind.DEAD_SESSION_LOOP || f.kind === FindingKind.LISTENING_STREAM_LOOP;
}

/** A finding about a task (TASK_FINDING_KINDS) that names it: drawn from its task's spans. */
export function isTaskFinding(f: Finding): f is Finding & { task_id: string } {
  return typeof f.task_id === 'string' && f.task_id !== '' && TASK_FINDING_KINDS.includes(f.kind);
}

/** OTLP's invalid trace id: a span that has it belongs to no trace. */
const INVALID_TRACE_ID = '0'.repeat(32);

/**
 * A re-issue's finding (duplicate_execution, possible_duplicate_execution): about two traces, the first
 * attempt's and the re-issue's. The retraction of a broken first attempt's lost_result names the first
 * trace too, but it is about that one request: the lost_result's own.
 */
export function isReissueFinding(f: Finding): boolean {
  return f.first_trace_id !== undefined && f.kind !== FindingKind.LOST_RESULT && !isTaskFinding(f);
}

/**
 * The key of a finding's timeline. A re-issue's finding: both attempts, held apart by trace. A finding
 * about a request without a session (2026-07-28, or a session-less server) is keyed by its trace, as its
 * spans are (RequestKeys); the retraction of a broken first attempt's lost_result by the first attempt's
 * trace, so that the finding and its retraction are one entry with one timeline, held once.
 */
export function findingKey(f: Finding): string {
  if (keyedByRequest(f)) return requestKey(f.service, f.session_id, f.request_id);
  if (isTaskFinding(f)) {
    const service = f.service || UNKNOWN_SERVICE;
    const second = f.duplicate_task_id ? taskKey(service, f.duplicate_task_id) : '';
    return taskKey(service, f.task_id) + second;
  }
  if (isLoopFinding(f))
    return f.session_id === '' && f.client !== undefined
      ? clientKey(f.service || UNKNOWN_SERVICE, f.client)
      : sessionKey(f.service || UNKNOWN_SERVICE, f.session_id);
  if (isReissueFinding(f)) return traceKey(f.first_trace_id!) + traceKey(f.trace_id);
  if (f.first_trace_id !== undefined) return traceKey(f.first_trace_id);
  return traceKey(f.trace_id);
}

/**
 * Whether findingKey keys the finding by its request (requestKey): a session's finding about one request,
 * neither a task's, a loop's, nor one naming a first attempt's trace (a re-issue's, a retraction's).
 */
function keyedByRequest(f: Finding): boolean {
  return f.first_trace_id === undefined && f.session_id !== '' && !isTaskFinding(f) && !isLoopFinding(f);
}

/**
 * The keys of the spans the detector accepted, as their parts (SpanKey): what the evidence keeps a span
 * under. The request's (undefined for a span that concerns no single request: the listening stream, a
 * span of a session without a request id; a span without a session goes by its trace), its task's and
 * its session's loop's. It runs for every span: each key is one object filled again span after span
 * (SpanColumns copies its parts), and the hash of a session's part is computed once while its requests
 * follow, so that a span's key costs its request id's hash and no allocation. keyText spells a key's
 * parts as the string keys above do.
 */
export class RequestKeys {
  /** The last request key's service and session (the session as the span that started them had it). */
  private service = '';
  private session = '';
  /** hashHead(KEY_REQUEST, service, session). */
  private head = 0;
  /** The last request id, as the span had it. */
  private request: string | number = '';
  private readonly requestKey = new SpanKey();
  private readonly traceKey = new SpanKey();
  private readonly taskKey = new SpanKey();
  private readonly loopKey = new SpanKey();
  /** A finding's key (findingParts). */
  private readonly found = new SpanKey();

  /**
   * The key of the span's request: (service, session, request id) (requestKey), or for a span without a
   * session its trace's (traceKey); undefined when it has none. Consecutive spans of one request give the
   * key unchanged; a new request of the same session, its id's hash continued from the session's.
   */
  requestParts(span: SpanRecord, scan: SpanScan): SpanKey | undefined {
    const session = scan.session;
    if (typeof session !== 'string' || session === '') {
      // Only an MCP span of a request (its request span, client's or server's, or its terminal): the
      // detector hands the evidence the spans it had no use for too (a 2026-07-28 terminal among them).
      return typeof scan.shown(I_METHOD) === 'string' ? this.ofTrace(span.traceId) : undefined;
    }
    const request = scan.request;
    if (typeof request !== 'string' && typeof request !== 'number') return undefined;
    if (request === '') return undefined;
    if (span.name !== SPAN_REQUEST_TERMINAL && scan.shown(I_STREAM_KIND) === StreamKind.LISTENING) return undefined;
    const service = span.service || UNKNOWN_SERVICE;
    const key = this.requestKey;
    if (session !== this.session || service !== this.service) {
      this.service = service;
      this.session = session;
      this.head = hashHead(KEY_REQUEST, service, session);
      key.tag = KEY_REQUEST;
      key.a = service;
      key.b = session;
    } else if (request === this.request) return key;
    this.request = request;
    key.c = requestId(request);
    key.hash = hashTail(this.head, key.c);
    return key;
  }

  /**
   * The key of a finding that is neither a task's nor a re-issue's (findingKey's parts; a filled-again
   * object). One about a request of the last span's session reuses that session's hash.
   */
  findingParts(f: Finding): SpanKey {
    const last = f.session_id === this.session && f.service === this.service;
    return findingParts(f, this.found, last ? this.head : undefined);
  }

  /**
   * The task key of a span that carries a task id (taskKey's parts), else undefined: such a span is kept
   * under its task's key as well as its request's. A task's polls come one after another: the key is kept
   * while its parts stay.
   */
  taskParts(span: SpanRecord, scan: SpanScan): SpanKey | undefined {
    const task = scan.shown(I_TASK);
    if (typeof task !== 'string' || task === '') return undefined;
    const service = span.service || UNKNOWN_SERVICE;
    const key = this.taskKey;
    if (task === key.b && service === key.a && key.tag === KEY_TASK) return key;
    return setKey(key, KEY_TASK, service, task, '');
  }

  /**
   * The session key of a span a loop finding may rest on (sessionKey's parts): one the server refused (a
   * status of 400 or more: a dead session's request), a listening stream's, or a refused GET; else
   * undefined. Few spans of healthy traffic are either: one listening stream per session.
   */
  loopParts(span: SpanRecord, scan: SpanScan): SpanKey | undefined {
    const session = scan.session;
    const listening = scan.shown(I_STREAM_KIND) === StreamKind.LISTENING;
    if (typeof session !== 'string' || session === '') {
      // A stateless server's listening stream: its client's re-opens (clientKey).
      if (!listening && span.name !== SPAN_LISTENING_REFUSED) return undefined;
      const client = listeningClientOf(span.attributes);
      if (client === undefined) return undefined;
      return setKey(this.loopKey, KEY_SESSION, span.service || UNKNOWN_SERVICE, clientSession(client), '');
    }
    const status = scan.shown(I_STATUS);
    const refused = typeof status === 'number' && status >= 400;
    if (!refused && !listening && span.name !== SPAN_LISTENING_REFUSED) return undefined;
    return setKey(this.loopKey, KEY_SESSION, span.service || UNKNOWN_SERVICE, session, '');
  }

  private ofTrace(traceId: string): SpanKey | undefined {
    const key = this.traceKey;
    if (traceId === key.a && key.tag === KEY_TRACE) return key;
    if (traceId.length !== 32 || traceId === INVALID_TRACE_ID) return undefined;
    return setKey(key, KEY_TRACE, traceId, '', '');
  }
}

/**
 * Fills `key` with findingKey's parts of a finding that is neither a task's nor a re-issue's; `head`:
 * hashHead of its service and session when the caller has it.
 */
export function findingParts(f: Finding, key: SpanKey, head?: number): SpanKey {
  if (keyedByRequest(f)) {
    const c = requestId(f.request_id);
    key.tag = KEY_REQUEST;
    key.a = f.service;
    key.b = f.session_id;
    key.c = c;
    key.hash = hashTail(head ?? hashHead(KEY_REQUEST, f.service, f.session_id), c);
    return key;
  }
  if (isLoopFinding(f)) {
    const service = f.service || UNKNOWN_SERVICE;
    const session = f.session_id === '' && f.client !== undefined ? clientSession(f.client) : f.session_id;
    return setKey(key, KEY_SESSION, service, session, '');
  }
  return setKey(key, KEY_TRACE, f.first_trace_id ?? f.trace_id, '', '');
}

/** The string key of the parts (requestKey, traceKey, taskKey, sessionKey; a KEY_TEXT's, its text). */
export function keyText(key: SpanKey): string {
  switch (key.tag) {
    case KEY_REQUEST:
      return requestKey(key.a, key.b, String(key.c));
    case KEY_TRACE:
      return traceKey(key.a);
    case KEY_TASK:
      return taskKey(key.a, key.b);
    case KEY_SESSION:
      return sessionKey(key.a, key.b);
    default:
      return key.a;
  }
}

/** The timeline event of a span of a request (RequestKeys gave its key): made only for a reported request. */
export function timelineEvent(span: SpanRecord): TimelineEvent {
  const attrs = span.attributes;
  let present = shownMask(attrs);
  const attributes: Record<string, AttributeValue> = {};
  for (let index = 0; present !== 0; index++, present >>>= 1) {
    if ((present & 1) !== 0) attributes[SHOWN[index]!] = attrs[SHOWN[index]!]!;
  }
  const event: TimelineEvent = {
    type: eventType(span.name),
    start: span.startTimeUnixMs,
    end: span.endTimeUnixMs,
    span_id: span.spanId,
    attributes,
  };
  if (span.kind === SPAN_KIND_SERVER) event.server = true;
  return event;
}

/**
 * Which SHOWN attributes the span has (bit i: SHOWN[i]). The span's few keys are walked once: a lookup of
 * each shown name instead would mostly miss, and a missing key is the slowest lookup on these records.
 */
function shownMask(attrs: SpanRecord['attributes']): number {
  let present = 0;
  for (const key in attrs) {
    const index = SHOWN_INDEX.get(key);
    if (index !== undefined && attrs[key] !== undefined) present |= 1 << index;
  }
  return present;
}

/** SHOWN's indices of the attributes the evidence's keys read (RequestKeys). */
const I_STREAM_KIND = SHOWN.indexOf(ATTR_MCP_STREAM_KIND);
const I_METHOD = SHOWN.indexOf(ATTR_MCP_METHOD_NAME);
const I_STATUS = SHOWN.indexOf(ATTR_HTTP_RESPONSE_STATUS_CODE);
const I_TASK = SHOWN.indexOf(ATTR_MCP_TASK_ID);
/** The two attributes the keys read that the timeline does not show, numbered after SHOWN's. */
const ROLE_SESSION = SHOWN.length;
const ROLE_REQUEST = SHOWN.length + 1;
/** Every attribute the evidence reads, by its number: SHOWN's index, ROLE_SESSION or ROLE_REQUEST. */
const ROLES = new Map<string, number>([
  ...SHOWN_INDEX,
  [ATTR_MCP_SESSION_ID, ROLE_SESSION],
  [ATTR_JSONRPC_REQUEST_ID, ROLE_REQUEST],
]);
if (ROLES.size !== SHOWN.length + 2) throw new Error('the session and request id attributes must not be SHOWN');

/**
 * What the evidence reads of one span's attributes, in one walk over its keys (read): the shown ones'
 * mask and values (as shownMask and the attributes themselves give them) and the session and request id.
 * Reused span after span. Each attribute read by its name instead would be a lookup on records of many
 * shapes (the generic, megamorphic path, and the slowest when the key is missing), several per span.
 */
export class SpanScan {
  /** shownMask of the span's attributes. */
  mask = 0;
  /** The shown attributes' values by SHOWN's index; only those in mask are the span's. */
  readonly values: (AttributeValue | undefined)[] = new Array<AttributeValue | undefined>(SHOWN.length).fill(undefined);
  session: AttributeValue | undefined = undefined;
  request: AttributeValue | undefined = undefined;

  read(attrs: SpanRecord['attributes']): void {
    const values = this.values;
    let mask = 0;
    let session: AttributeValue | undefined;
    let request: AttributeValue | undefined;
    for (const key in attrs) {
      const role = ROLES.get(key);
      if (role === undefined) continue;
      const v = attrs[key];
      if (v === undefined) continue;
      if (role < ROLE_SESSION) {
        mask |= 1 << role;
        values[role] = v;
      } else if (role === ROLE_SESSION) session = v;
      else request = v;
    }
    this.mask = mask;
    this.session = session;
    this.request = request;
  }

  /** The span's value of SHOWN[index], undefined when it has none. */
  shown(index: number): AttributeValue | undefined {
    return (this.mask & (1 << index)) !== 0 ? this.values[index] : undefined;
  }
}

export function eventType(name: string): EventType {
  if (name === SPAN_REQUEST_TERMINAL) return EventType.TERMINAL;
  if (name === SPAN_STREAM_RESUME) return EventType.RESUME;
  if (name === SPAN_SESSION_REATTACH) return EventType.REATTACH;
  if (name === SPAN_TASK_STATUS) return EventType.TASK_STATUS;
  if (name === SPAN_LISTENING_REFUSED) return EventType.LISTENING_REFUSED;
  return EventType.CALL;
}
