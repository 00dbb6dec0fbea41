import { BoundedMap } from '@resumewatch/bounded';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_MCP_CLIENT_INSTANCE_ID,
  ATTR_MCP_STREAM_RETRY_MS,
  LISTENING_CLOSED_AT_ONCE_MS,
  SPAN_LISTENING_REFUSED,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  FindingKind,
  METHOD_INITIALIZE,
} from '@resumewatch/semconv';
import type { RuleContext, RuleFamily } from './context.js';
import { statusOf } from './outcome.js';
import { UNKNOWN_SERVICE } from './services.js';
import type { AttributeValue, SpanRecord } from './types.js';
import { TimedIdSet, identityOf } from './timed-id-set.js';

/** Session ids longer than this are not keyed (the wire keeps longer ones as a bounded stand-in anyway). */
const MAX_SESSION_ID = 256;
/** Spans kept as a loop's evidence: its first ones, enough to draw it, never the whole loop. */
const MAX_EVIDENCE = 16;
/**
 * What a re-open may come before the announced `retry:` and still keep its pace: a client's timer fires on
 * its event loop's millisecond clock, up to a millisecond before the fractional time a span records, and
 * the stream's end is stamped where it was observed. Far below any pace a loop keeps.
 */
const PACE_SLACK_MS = 5;
/** Client keys longer than this are not keyed (an address is short; an instance id is 12 hex digits). */
const MAX_CLIENT_KEY = 256;

/**
 * The answers that refuse a session: 404 (the spec's "session not found"), and 400, which some servers
 * (server-everything among them) give for a session id they do not know.
 */
function refusesSession(status: number): boolean {
  return status === 404 || status === 400;
}

/** One (service, session)'s loop so far: refusals in the current window, and whether it was reported. */
class LoopRecord {
  /** Time (span start) of the window's first counted span; -1 before any. */
  windowStart = -1;
  count = 0;
  first = 0;
  last = 0;
  status = 0;
  traceId = '';
  requestId = '';
  spanIds: string[] = [];
  /** The span kind counted: a loop seen from the client and from the server is counted once, from one side. */
  kind = -1;
  reported = false;
  /** The end of the latest fruitless stream, and the `retry:` (ms) it announced (0: none): the pace asked for. */
  lastEnd = -1;
  retryMs = 0;
}

/**
 * Who re-opened a listening stream that names no session (a stateless server's, cline/cline#12119): the
 * gateway's client (client.address, the peer or the trusted forwarded address; a server's span may carry
 * it too), else the instrumented client that made the span (mcp.client.instance_id: one span recorder,
 * whose spans come from one process; the resource's service.instance.id is optional and most resources
 * lack it, and service.name alone would count a fleet of replicas that each took one 405 as one client).
 * Clients behind one address are one client here. Undefined: nothing tells clients apart, not keyed.
 */
export function listeningClientOf(attrs: SpanRecord['attributes']): string | undefined {
  const address = attrs[ATTR_CLIENT_ADDRESS];
  if (typeof address === 'string' && address.length > 0 && address.length <= MAX_CLIENT_KEY) return address;
  const instance = attrs[ATTR_MCP_CLIENT_INSTANCE_ID];
  if (typeof instance === 'string' && instance.length > 0 && instance.length <= MAX_CLIENT_KEY) return instance;
  return undefined;
}

/**
 * The loops family (issue 39): what a client does again and again after the server said no.
 * - dead_session_loop: request spans carrying a session id the server refused (404, or 400) reach
 *   sessionLoopThreshold within sessionLoopWindowMs, with no `initialize` of the service answered in
 *   between (a client that re-initializes after one refusal starts a new count). A refused
 *   session reattach span (SPAN_SESSION_REATTACH, not accepted, on a request stream) counts as a refusal too.
 * - listening_stream_loop: listening streams (spans with mcp.stream.kind=listening: the GET's reattach,
 *   the resumes of the listening stream, mcp.stream.listening_refused) answered 405 (any status other
 *   than 2xx), or closed at once with no event, more than listeningLoopThreshold times within
 *   listeningLoopWindowMs: the first one, then the re-opens. Keyed by session, or without one by client
 *   (listeningClientOf). A re-open at least the `retry:` the last fruitless stream announced after its
 *   end keeps the server's pace: not counted (what the wire shows: the stream's end, the next GET's start).
 * Each is reported once per session (or client) and episode: a record whose window passes with no span starts over.
 * Records are bounded (maxRequests per rule, least recently touched dropped) and leave after retentionMs
 * without a span. What a client said about its own identity is not on the spans: the `initialize` that
 * ends an episode is any of the service's, which can hide a loop in a busy service, never make one.
 */
export class LoopFamily implements RuleFamily {
  private readonly dead: BoundedMap<string, LoopRecord>;
  private readonly listening: BoundedMap<string, LoopRecord>;
  /** The latest answered `initialize` (span end) by interned service: refusals before it do not count. */
  private readonly initializedAt = new Map<number, number>();
  /**
   * Sessions whose start was counted, by service and id: a session seen from both sides counts once.
   * Held by a 64-bit hash of the two (about 24 bytes a session, not a key string and a Map entry): it
   * only keeps a count from counting twice, no finding reads it, and it outlives the session's DELETE.
   */
  private readonly started: TimedIdSet;
  /** The detector's time, or the latest span end seen if later: the records' clock (as tasks.ts's pending). */
  private latest = 0;

  constructor(private readonly ctx: RuleContext) {
    const cap = Math.max(1, ctx.options.maxRequests);
    const now = (): number => (ctx.now > this.latest ? ctx.now : this.latest);
    this.dead = new BoundedMap(cap, ctx.options.retentionMs, now);
    this.listening = new BoundedMap(cap, ctx.options.retentionMs, now);
    this.started = new TimedIdSet(Math.max(1, ctx.options.dedupeCapacity), ctx.options.retentionMs, now);
  }

  /** Loop records held, across both rules. */
  get size(): number {
    return this.dead.size + this.listening.size;
  }

  /** A request span: an answered `initialize` (a session started), or a refusal of its session. */
  request(
    span: SpanRecord,
    marks: number,
    session: AttributeValue | undefined,
    method: AttributeValue | undefined,
  ): void {
    this.seen(span);
    const status = statusOf(span.attributes, marks);
    if (method === METHOD_INITIALIZE) return this.initialized(span, status, session);
    if (typeof session !== 'string' || session.length === 0 || session.length > MAX_SESSION_ID) return;
    if (refusesSession(status)) return this.refused(span, session, status);
    // A request on the session answered 2xx: the session lives, and a 400 before it was about the request
    // (a malformed one), not the session. Looked up only while some session has refusals counted.
    if (status >= 200 && status < 300 && this.dead.size > 0) this.alive(span, session);
  }

  /** A session reattach span (SPAN_SESSION_REATTACH): refused on a request stream, it is a refusal of its session. */
  reattach(span: SpanRecord, session: string, listening: boolean): void {
    this.seen(span);
    const status = statusOf(span.attributes);
    if (listening) return this.listeningOpened(span, session, status);
    if (span.attributes[ATTR_MCP_REATTACH_ACCEPTED] === false && refusesSession(status))
      this.refused(span, session, status);
  }

  /**
   * A resume of the listening stream (a GET with Last-Event-ID), or a refused GET of it
   * (SPAN_LISTENING_REFUSED). `session` empty: a stateless server's stream, keyed by `client`.
   */
  listeningResume(span: SpanRecord, session: string, client?: string): void {
    this.seen(span);
    this.listeningOpened(span, session, statusOf(span.attributes), client);
  }

  private seen(span: SpanRecord): void {
    if (span.endTimeUnixMs > this.latest) this.latest = span.endTimeUnixMs;
  }

  advance(): void {
    this.dead.prune();
    this.listening.prune();
    this.started.prune();
  }

  private initialized(span: SpanRecord, status: number, session: unknown): void {
    // Answered: a session id given, or a success with none (a server without sessions). A refused or failed one started nothing.
    const withId = typeof session === 'string' && session.length > 0 && session.length <= MAX_SESSION_ID;
    if (span.attributes[ATTR_ERROR_TYPE] !== undefined || (!withId && !(status >= 200 && status < 300))) return;
    const name = span.service || UNKNOWN_SERVICE;
    const service = this.ctx.services.idOf(name);
    const end = span.endTimeUnixMs;
    if (end >= (this.initializedAt.get(service) ?? -Infinity)) this.initializedAt.set(service, end);
    if (withId) {
      const [hi, lo] = identityOf(service, session);
      if (this.started.has(hi, lo)) return;
      this.started.add(hi, lo);
    }
    this.ctx.events?.sessionStarted?.(this.ctx.services.keyOf(service)!);
  }

  private refused(span: SpanRecord, session: string, status: number): void {
    const service = this.ctx.services.idOf(span.service || UNKNOWN_SERVICE);
    const record = this.recordOf(this.dead, service, session, span, this.ctx.options.sessionLoopWindowMs);
    if (record === undefined) return;
    // An initialize of the service answered after the episode began: the client may have started anew.
    const init = this.initializedAt.get(service);
    if (init !== undefined && record.windowStart >= 0 && init >= record.windowStart && init <= span.startTimeUnixMs)
      this.restart(record, span);
    this.count(record, span, status);
    if (record.count >= this.ctx.options.sessionLoopThreshold)
      this.report(record, FindingKind.DEAD_SESSION_LOOP, service, session);
  }

  private alive(span: SpanRecord, session: string): void {
    const record = this.dead.get(`${this.ctx.services.idOf(span.service || UNKNOWN_SERVICE)}\u0000${session}`);
    if (
      record !== undefined &&
      !record.reported &&
      record.windowStart >= 0 &&
      span.startTimeUnixMs >= record.windowStart
    )
      this.restart(record, span);
  }

  private listeningOpened(span: SpanRecord, session: string, status: number, client?: string): void {
    const attrs = span.attributes;
    const ok = status >= 200 && status < 300;
    // Closed at once with no event: a resume that replayed nothing, or a refused-span of a plain GET whose
    // stream the server ended at once (the instrumentation emits it only then; its span runs to that end).
    const fruitless =
      !ok ||
      ((attrs[ATTR_MCP_RESUME_REPLAYED_EVENTS] === 0 || span.name === SPAN_LISTENING_REFUSED) &&
        span.endTimeUnixMs - span.startTimeUnixMs <= LISTENING_CLOSED_AT_ONCE_MS);
    if (!fruitless || (session.length === 0 && client === undefined)) return;
    const service = this.ctx.services.idOf(span.service || UNKNOWN_SERVICE);
    const key = session.length > 0 ? session : `\u0001${client}`;
    const record = this.recordOf(this.listening, service, key, span, this.ctx.options.listeningLoopWindowMs);
    if (record === undefined) return;
    // The server's pace: the last fruitless stream announced `retry: N` and this GET came N or more after its end.
    const paced =
      record.retryMs > 0 &&
      record.lastEnd >= 0 &&
      span.startTimeUnixMs - record.lastEnd >= record.retryMs - PACE_SLACK_MS;
    const retry = attrs[ATTR_MCP_STREAM_RETRY_MS];
    record.retryMs = typeof retry === 'number' && retry > 0 ? retry : 0;
    if (span.endTimeUnixMs > record.lastEnd) record.lastEnd = span.endTimeUnixMs;
    if (paced) return;
    this.count(record, span, status);
    // The first fruitless stream, then more than the threshold's re-opens.
    if (record.count > this.ctx.options.listeningLoopThreshold)
      this.report(record, FindingKind.LISTENING_STREAM_LOOP, service, session, client);
  }

  /** The session's record, its window started over when the last one passed; undefined: a span of the other side. */
  private recordOf(
    map: BoundedMap<string, LoopRecord>,
    service: number,
    session: string,
    span: SpanRecord,
    windowMs: number,
  ): LoopRecord | undefined {
    const key = `${service}\u0000${session}`;
    let record = map.get(key);
    if (record === undefined) {
      record = new LoopRecord();
      map.set(key, record);
    } else map.touch(key);
    if (record.kind !== -1 && record.kind !== span.kind) return undefined;
    record.kind = span.kind;
    // A new episode: the window passed since its first span (a reported loop may be reported again then).
    if (record.windowStart >= 0 && span.startTimeUnixMs - record.windowStart > windowMs) {
      this.restart(record, span);
      record.reported = false;
    }
    return record;
  }

  private restart(record: LoopRecord, span: SpanRecord): void {
    record.windowStart = -1;
    record.count = 0;
    record.spanIds = [];
    record.first = span.startTimeUnixMs;
  }

  private count(record: LoopRecord, span: SpanRecord, status: number): void {
    if (record.windowStart < 0) {
      record.windowStart = span.startTimeUnixMs;
      record.first = span.startTimeUnixMs;
      record.traceId = span.traceId;
      const req = span.attributes[ATTR_JSONRPC_REQUEST_ID];
      record.requestId = typeof req === 'string' || typeof req === 'number' ? String(req) : '';
    }
    record.count++;
    if (span.endTimeUnixMs > record.last) record.last = span.endTimeUnixMs;
    record.status = status;
    if (record.spanIds.length < MAX_EVIDENCE) record.spanIds.push(span.spanId);
  }

  private report(record: LoopRecord, kind: FindingKind, service: number, session: string, client?: string): void {
    if (record.reported) return;
    record.reported = true;
    this.ctx.onFinding?.({
      kind,
      service: this.ctx.services.keyOf(service)!,
      session_id: session,
      request_id: record.requestId,
      trace_id: record.traceId,
      first_time_unix_ms: record.first,
      last_time_unix_ms: record.last,
      span_ids: [...record.spanIds],
      attempts: record.count,
      status_code: record.status,
      ...(session.length === 0 && client !== undefined ? { client } : {}),
    });
  }
}
