import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ErrorType,
  ATTR_MCP_PROTOCOL_VERSION,
  REQUEST_GIVEN_UP_ERRORS,
  protocolEra,
  eraAnswer,
  EraAnswer,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_MCP_STREAM_KIND,
  StormEnd,
  StreamKind,
  isCursorGoneStatus,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_SESSION_ID,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_LISTENING_REFUSED,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_INPUT_ROUND,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_REQUEST_RECOVERY,
  RequestRecovery,
  SPAN_STREAM_RESUME,
  SPAN_TASK_STATUS,
  ATTR_MCP_TASK_ID,
  SpanReceivedResult,
  type ProtocolEra,
} from '@resumewatch/semconv';
import { RuleContext, type RuleFamily } from './context.js';
import { IdSet } from './id-set.js';
import {
  attributeMarks,
  CommonAttributes,
  M_ERROR,
  M_FATE,
  M_REISSUE_OF,
  M_STREAM_KIND,
  M_TASK,
  M_VERSION,
} from './marks.js';
import { hexWord, numberText } from './ids.js';
import { KeyHasher } from './key-hash.js';
import { LostResults } from './lost.js';
import { DEFAULT_DETECTOR_OPTIONS, type DetectorInit, type DetectorOptions } from './options.js';
import { refusedByGuard, resumeOutcome, statusOf } from './outcome.js';
import { ReissueRules } from './reissue.js';
import { Resumption } from './resumption.js';
import { ServerDefects } from './server-defects.js';
import { UNKNOWN_SERVICE } from './services.js';
import { NO_SLOT } from './slots.js';
import { OperationReader } from './operations.js';
import { Storms } from './storms.js';
import { LoopFamily, listeningClientOf } from './loops.js';
import { TaskFamily, type TaskTimeline } from './tasks.js';
import { RequestTable } from './table.js';
import { readState, writeState, type DetectorState } from './state-codec.js';
import { SPAN_KIND_CLIENT, SPAN_KIND_SERVER, type DetectorStats, type SpanRecord } from './types.js';

/** The three span kinds the core decides on (everything else is counted and ignored). */
const TERMINAL = 1;
const RESUME = 2;
const REATTACH = 3;

/** The recoveries a client request span may name (ATTR_MCP_REQUEST_RECOVERY). */
const RECOVERIES = new Set<string>(Object.values(RequestRecovery));

/**
 * The detection core: spans in, findings out, one span at a time and without I/O.
 * Every decision is taken on event time (span start), so the order in which spans arrive does
 * not decide whether a finding exists; see the package README for the exact guarantees.
 *
 * Reading order: `ingest` classifies a span, finds its request's slot in the table and hands it to the
 * family of rules that decides on it; `request` does the same for a request span. The rules live by
 * failure family, each in its own file over one shared RuleContext (context.ts: the table, the
 * re-issues' store, services, time, counts, options, `emit`):
 * - resumption.ts: terminals and resumes (duplicate_terminal, resume_after_terminal,
 *   ambiguous_empty_replay, cursor_lost), and storms.ts, its attempts, episodes and storms
 *   (reconnect_storm, signature);
 * - reissue.ts: work that runs again (duplicate_execution, possible_duplicate_execution,
 *   completed_after_cancellation);
 * - lost.ts: results that never reached the caller (lost_result, outcome_corrected) and the retractions;
 * - server-defects.ts: foreign_replay, conflicting_terminal.
 * The span handlers are called by name (one call each, nothing looked up per span); what a family does
 * when time moves, when input ends and for stats() goes through the RuleFamily hooks of `families`.
 *
 * A new family (tasks): one file, core/tasks.ts, a class over the RuleContext implementing RuleFamily
 * (its `request` hook sees every request span), and one line in `families` below.
 *
 * What the detector knows of a request is read and changed through RequestTable (table.ts: named
 * methods, or a field by its name), which stores it as columns of typed arrays rather than one object
 * per request: that is what keeps a tracked request near 163 bytes.
 */
export class Detector {
  readonly options: DetectorOptions;
  private readonly ctx: RuleContext;
  private readonly table: RequestTable;
  private readonly spanIds: IdSet;
  private readonly storms: Storms;
  private readonly reissue: ReissueRules;
  private readonly lost: LostResults;
  private readonly resumption: Resumption;
  /** Every family with a hook, in the order their hooks run (advance, flush, stats). */
  private readonly families: readonly RuleFamily[];
  /** The families that see request spans (RuleFamily.request); none of the built-in ones. */
  private readonly requestFamilies: readonly RuleFamily[];
  /** The tasks family (tasks.ts): fed the spans that carry a task id, the status spans and the client's re-issues. */
  private readonly tasks: TaskFamily;
  /** The loops family (loops.ts): refused sessions and listening streams, and the sessions started. */
  private readonly loops: LoopFamily;
  /** Reads each request span as the operation the metrics time (events.operation). */
  private readonly operations = new OperationReader();
  /** The request table's key hash, with the session's half remembered (key-hash.ts). */
  private readonly keys = new KeyHasher();
  /** The last service name interned and its number: the spans of one export request share their service. */
  private lastService = '';
  private lastServiceId = -1;
  /** The common attributes' values that attributeMarks read off a record, copied out by its caller at once. */
  private readonly common = new CommonAttributes();

  constructor(init: DetectorInit = {}) {
    const options: DetectorOptions = { ...DEFAULT_DETECTOR_OPTIONS };
    for (const key of Object.keys(DEFAULT_DETECTOR_OPTIONS) as (keyof DetectorOptions)[]) {
      const value = init[key];
      if (value !== undefined) options[key] = value;
    }
    if (!(options.stormThreshold >= 1)) throw new RangeError('stormThreshold must be at least 1');
    this.options = options;
    const ctx = new RuleContext(options, init.onFinding, init.events, init.clock ?? Date.now);
    this.ctx = ctx;
    this.table = ctx.table;
    this.spanIds = new IdSet(options.dedupeCapacity);
    this.storms = new Storms(ctx);
    // A re-issue of a call that created a task is the tasks family's (constructed below; read lazily).
    this.reissue = new ReissueRules(ctx, (trace) => this.tasks.createdTaskIn(trace));
    this.lost = new LostResults(ctx, this.reissue);
    this.resumption = new Resumption(ctx, this.storms, this.lost, this.reissue, new ServerDefects(ctx));
    // The families with hooks (RuleFamily), which run in this order: storms end before idle requests leave,
    // then re-issues settle. A new family is constructed over the same ctx and added here, one line
    // (`new Tasks(ctx),` for core/tasks.ts); its `request` hook then sees every request span.
    this.loops = new LoopFamily(ctx);
    this.families = [this.storms, this.reissue, this.loops];
    // The tasks family keeps its own records (by service and task id, not in the request table) and its
    // own clock of due verdicts: it is called by name below (its spans, advance, stats, state).
    this.tasks = new TaskFamily({ options, services: ctx.services, events: init.events, onFinding: init.onFinding });
    this.requestFamilies = this.families.filter((family) => family.request !== undefined);
  }

  /**
   * Feeds one span; any finding it completes is delivered to onFinding before this returns.
   * `spanIdWords`: the span id's 8 bytes as two big-endian 32-bit words at [0] and [1], when the door has
   * them (the OTLP/protobuf decoder hands them to its sink, SpanSink): the core then does not parse
   * `span.spanId`'s 16 hex digits again. Given, they must be that id's; without them the core parses the
   * text. (An array rather than two numbers: a word of 2^30 or more passed as a number is a heap number,
   * allocated at each call that is not inlined.)
   */
  ingest(span: SpanRecord, spanIdWords?: Uint32Array): SpanReceivedResult {
    const name = span.name;
    let type: number;
    if (name === SPAN_REQUEST_TERMINAL) type = TERMINAL;
    else if (name === SPAN_STREAM_RESUME) type = RESUME;
    else if (name === SPAN_SESSION_REATTACH) type = REATTACH;
    else {
      // A span with a method name (a string) is a request span: `request` reads the name with the marks.
      if (this.request(span, spanIdWords)) return this.count(SpanReceivedResult.ACCEPTED);
      if (name === SPAN_LISTENING_REFUSED) return this.listeningRefused(span);
      // A task status notification's span (no method of its own) is the tasks family's if it names a task.
      if (name !== SPAN_TASK_STATUS) return this.count(SpanReceivedResult.IGNORED);
      if (!this.firstDelivery(span, spanIdWords)) return this.count(SpanReceivedResult.DUPLICATE);
      if (!this.tasks.span(span)) return this.count(SpanReceivedResult.IGNORED);
      return this.count(SpanReceivedResult.ACCEPTED);
    }
    const time = span.startTimeUnixMs;
    if (span.spanId.length !== 16 || span.traceId.length !== 32 || !(time >= 0) || !(span.endTimeUnixMs >= 0)) {
      return this.count(SpanReceivedResult.INVALID);
    }
    const attrs = span.attributes;
    // Which of the rarely present attributes the record has, found once (marks.ts): the rules below read only those.
    const common = this.common;
    const marks = attributeMarks(attrs, common, true);
    const session = common.session;
    const req = common.request;
    const stream = common.stream;
    const hasReq = typeof req === 'string' ? req.length > 0 : typeof req === 'number';
    // A resume of the listening stream is no request's resume, even if a replayed terminal named one.
    const listening =
      type !== TERMINAL && (marks & M_STREAM_KIND) !== 0 && attrs[ATTR_MCP_STREAM_KIND] === StreamKind.LISTENING;
    // A stateless server's listening stream names no session: the loops family keys it by its client.
    if (listening && type !== TERMINAL && (typeof session !== 'string' || session.length === 0))
      return this.sessionlessListening(span);
    if (
      typeof session !== 'string' ||
      session.length === 0 ||
      (!hasReq && type === RESUME && !listening) ||
      (!hasReq && type === TERMINAL)
    ) {
      return this.count(SpanReceivedResult.IGNORED);
    }
    // The span id's two words, the door's or parsed once here, reused by whatever stores the id below.
    let hi: number;
    let lo: number;
    if (spanIdWords === undefined) {
      hi = hexWord(span.spanId, 0);
      lo = hexWord(span.spanId, 8);
    } else {
      hi = spanIdWords[0]!;
      lo = spanIdWords[1]!;
    }
    if (!this.spanIds.add(hi, lo)) return this.count(SpanReceivedResult.DUPLICATE);
    const service = span.service || UNKNOWN_SERVICE;
    let reattachEvicts = false;
    if (type === REATTACH) {
      const status = statusOf(attrs, marks);
      const accepted = attrs[ATTR_MCP_REATTACH_ACCEPTED];
      this.ctx.events?.reattach(service, typeof accepted === 'boolean' ? accepted : status >= 200 && status < 300);
      this.loops.reattach(span, session, listening);
      if (!hasReq || listening) return this.count(SpanReceivedResult.ACCEPTED);
      // The same status rule as a resume's (semconv): the server no longer holds the cursor or the session.
      reattachEvicts = isCursorGoneStatus(status);
    } else if (listening) {
      this.loops.listeningResume(span, session);
      this.ctx.events?.listeningResume(
        service,
        refusedByGuard(attrs, marks) ? ResumeOutcome.ERROR : resumeOutcome(attrs, statusOf(attrs, marks)),
      );
      return this.count(SpanReceivedResult.ACCEPTED);
    }
    const slot = this.slotFor(
      this.serviceId(service),
      session,
      typeof req === 'string' ? req : numberText(req as number),
    );
    const now = this.ctx.now;
    this.table.seenAt(slot, span.endTimeUnixMs > now ? span.endTimeUnixMs : now);
    if (type === TERMINAL) this.resumption.terminal(slot, span, hi, lo, time, service, marks, stream);
    else if (type === RESUME) this.resumption.resume(slot, span, hi, lo, time, service, marks);
    else this.storms.attempt(slot, span, hi, lo, time, reattachEvicts, marks);
    return this.count(SpanReceivedResult.ACCEPTED);
  }

  /** A refused GET of the listening stream (SPAN_LISTENING_REFUSED): the loops family's, once per span id. */
  private listeningRefused(span: SpanRecord): SpanReceivedResult {
    const session = span.attributes[ATTR_MCP_SESSION_ID];
    if (typeof session !== 'string' || session.length === 0) return this.sessionlessListening(span);
    if (!(span.startTimeUnixMs >= 0)) return this.count(SpanReceivedResult.IGNORED);
    if (!this.firstDelivery(span)) return this.count(SpanReceivedResult.DUPLICATE);
    this.loops.listeningResume(span, session);
    return this.count(SpanReceivedResult.ACCEPTED);
  }

  /**
   * A span of a listening stream that names no session (a stateless server's: its refused GET, its
   * resume, its reattach): the loops family's, keyed by its client (listeningClientOf), once per span id.
   */
  private sessionlessListening(span: SpanRecord): SpanReceivedResult {
    const client = listeningClientOf(span.attributes);
    if (client === undefined || !(span.startTimeUnixMs >= 0) || !(span.endTimeUnixMs >= 0))
      return this.count(SpanReceivedResult.IGNORED);
    if (!this.firstDelivery(span)) return this.count(SpanReceivedResult.DUPLICATE);
    this.loops.listeningResume(span, '', client);
    // Counted as a session's listening resume is (resumewatch_listening_resumes_total).
    if (span.name === SPAN_STREAM_RESUME) {
      const attrs = span.attributes;
      this.ctx.events?.listeningResume(
        span.service || UNKNOWN_SERVICE,
        refusedByGuard(attrs) ? ResumeOutcome.ERROR : resumeOutcome(attrs, statusOf(attrs)),
      );
    }
    return this.count(SpanReceivedResult.ACCEPTED);
  }

  /**
   * A task span seen for the first time (by its span id, in the same bounded set as the stream spans',
   * kept across restarts). The tasks family counts polls: a span delivered again (an exporter's retry,
   * the export requests sent again after a restart) must not count twice, wherever it comes in the order.
   */
  private firstDelivery(span: SpanRecord, spanIdWords?: Uint32Array): boolean {
    if (span.spanId.length !== 16) return true;
    if (spanIdWords !== undefined) return this.spanIds.add(spanIdWords[0]!, spanIdWords[1]!);
    return this.spanIds.add(hexWord(span.spanId, 0), hexWord(span.spanId, 8));
  }

  /**
   * A span a decoder found of no use and did not make (the OTLP decoders' onSkipped): counted IGNORED,
   * as ingest counts a span of another name than the contract spans' that carries no MCP method name.
   */
  ignored(): void {
    this.count(SpanReceivedResult.IGNORED);
  }

  /** Moves the detector's time forward (Unix ms): ends quiet storms, reports settled ones, releases idle state. */
  advance(nowMs: number): void {
    const ctx = this.ctx;
    if (nowMs > ctx.now) ctx.now = nowMs;
    const horizon = ctx.now - this.options.retentionMs;
    const families = this.families;
    for (let i = 0; i < families.length; i++) families[i]!.advance?.(horizon);
    this.tasks.advance(ctx.now);
  }

  /** advance() to the clock's time. */
  tick(): void {
    this.advance(this.ctx.clock());
  }

  /** End of input: ends and reports every open storm now, whatever the windows say. */
  flush(): void {
    const families = this.families;
    for (let i = 0; i < families.length; i++) families[i]!.flush?.();
  }

  stats(): DetectorStats {
    const counts = this.ctx.counts;
    const stats: DetectorStats = {
      tracked: this.table.size,
      evictions: counts.evictions,
      released: counts.released,
      activeStorms: 0,
      reissues: 0,
      tasks: this.tasks.size,
      taskEvictions: this.tasks.evictions,
      loops: this.loops.size,
      spans: { ...counts.spans },
    };
    for (const family of this.families) family.stats?.(stats);
    return stats;
  }

  /**
   * Everything the detector knows, as plain data by the names of its state codec (state-codec.ts):
   * copied, so that a door can write it to a file while the detector goes on, and a restarted process
   * can importState() it. See src/doors/state-file.ts.
   */
  exportState(): DetectorState {
    const ctx = this.ctx;
    return writeState({
      options: this.options,
      now: ctx.now,
      counts: ctx.counts,
      services: ctx.services,
      openStorms: this.storms.openStorms,
      table: this.table,
      reissues: ctx.reissues,
      spanIds: this.spanIds,
      attemptStreams: this.storms.attemptStreams,
      quietStreams: this.storms.quietStreams,
      tasks: this.tasks,
    });
  }

  /**
   * Loads exportState() of a detector with the same options into this fresh one. A state of another
   * format, other options, or with a missing, unknown or mistyped field is refused whole
   * (StateMismatchError, one line saying why), and this detector stays empty.
   */
  importState(state: DetectorState): void {
    const ctx = this.ctx;
    const loaded = readState(state, {
      options: this.options,
      services: ctx.services,
      table: this.table,
      reissues: ctx.reissues,
      spanIds: this.spanIds,
      attemptStreams: this.storms.attemptStreams,
      quietStreams: this.storms.quietStreams,
      tasks: this.tasks,
    });
    ctx.now = loaded.now;
    ctx.counts = loaded.counts;
    // The services were numbered again from the file.
    this.lastService = '';
    this.lastServiceId = -1;
    for (const slot of loaded.openStorms) this.storms.openStorms.add(slot);
  }

  /**
   * The reported storms not yet ended, by service: a count of state, read when it is needed (a scrape),
   * so it is right after a restart and never drifts from the storms the detector holds.
   */
  activeStormsByService(): Map<string, number> {
    return this.storms.activeByService();
  }

  /** A task's timeline (creation, statuses, polls, result or expiry, duplicate) as plain data, for the page. */
  taskTimeline(service: string, taskId: string): TaskTimeline | undefined {
    return this.tasks.timeline(service, taskId);
  }

  /** Live task records by service: a count of state, read when needed (the live tasks gauge). */
  liveTasksByService(): Map<string, number> {
    return this.tasks.liveByService();
  }

  private count(r: SpanReceivedResult): SpanReceivedResult {
    this.ctx.counts.spans[r]++;
    this.ctx.events?.span(r);
    return r;
  }

  /**
   * The service's interned number (ctx.services.idOf), the last one remembered. Only a name the services
   * know is remembered: one past their cap goes to idOf every time, which counts it refused.
   */
  private serviceId(service: string): number {
    if (service === this.lastService) return this.lastServiceId;
    const services = this.ctx.services;
    const id = services.idOf(service);
    if (services.keyOf(id) === service) {
      this.lastService = service;
      this.lastServiceId = id;
    }
    return id;
  }

  private slotFor(service: number, session: string, request: string): number {
    const table = this.table;
    const streamHash = this.keys.hash(service, session, request);
    const found = table.find(streamHash, service, session, request);
    if (found !== NO_SLOT) return found;
    if (table.size >= table.maxRequests) {
      this.storms.release(table.oldest, StormEnd.DROPPED);
      this.ctx.counts.evictions++;
    }
    return table.create(streamHash, service, session, request);
  }

  /**
   * A request span: counted by era and timed as an operation (the metrics' events), then handed to the
   * families' rules. For the findings, only one that the client gave up (its deadline passed, it was aborted or
   * cancelled before its terminal event) tells anything. No state is made for the requests that end as
   * they should: a given-up request is looked at only if it is already tracked, except a cancelled one,
   * whose terminal may still come. False, and nothing done, for a span with no method name (a string):
   * no request span.
   */
  private request(span: SpanRecord, spanIdWords: Uint32Array | undefined): boolean {
    const attrs = span.attributes;
    // Which of the rarely present attributes the record has (marks.ts): most request spans have none of them.
    // The method, session and request id are read in the same pass.
    const common = this.common;
    const marks = attributeMarks(attrs, common);
    const method = common.method;
    if (typeof method !== 'string') return false;
    const session = common.session;
    const events = this.ctx.events;
    const version = (marks & M_VERSION) !== 0 ? attrs[ATTR_MCP_PROTOCOL_VERSION] : undefined;
    const era = protocolEra(version);
    if (era !== undefined && events) this.countEra(span, era, version as string);
    const fate = (marks & M_FATE) !== 0 ? attrs[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION] : undefined;
    if (typeof fate === 'boolean') this.reissue.firstAttemptFate(span, fate);
    // The one check a span that concerns no task pays for the tasks family.
    if ((marks & M_TASK) !== 0 && attrs[ATTR_MCP_TASK_ID] !== undefined && this.firstDelivery(span, spanIdWords))
      this.tasks.span(span);
    // Once per request, at its end: nothing per SSE event, whatever the metrics make of it.
    if (events?.operation) {
      const op = this.operations.read(span, span.service || UNKNOWN_SERVICE);
      if (op) events.operation(op);
    }
    // The families with a `request` hook (the loops family's) see every request span here.
    const others = this.requestFamilies;
    for (let i = 0; i < others.length; i++) others[i]!.request!(span, marks, session, method);
    if (span.kind !== SPAN_KIND_CLIENT) return true;
    const reissueOf = (marks & M_REISSUE_OF) !== 0 ? attrs[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID] : undefined;
    // A Multi Round-Trip round carries the answer the server asked for: the same call going on, not a re-issue.
    if (typeof reissueOf === 'string' && attrs[ATTR_MCP_REQUEST_INPUT_ROUND] !== true) {
      this.reissue.reissued(span, reissueOf);
      this.tasks.reissue(span, reissueOf);
    }
    if ((marks & M_ERROR) === 0) return true;
    const error = attrs[ATTR_ERROR_TYPE];
    if (typeof error !== 'string') return true;
    const recovery = attrs[ATTR_MCP_REQUEST_RECOVERY];
    // What the client did about a stream that ended without the result, in the session era (the
    // instrumentation names none for a 2026-07-28 request, whose recovery is its re-issue).
    const sessionRecovery =
      typeof recovery === 'string' && RECOVERIES.has(recovery) && recovery !== RequestRecovery.NOT_REISSUED;
    // 2026-07-28 era: nothing resumes a broken stream; its end is the request's end. In the session era a
    // stream that broke with no event id is the same (recovery `no_event_id`): no cursor, nothing resumes it.
    if (error === ErrorType.STREAM_BROKEN && !sessionRecovery) {
      this.lost.ofBrokenStream(span);
      return true;
    }
    if (error !== ErrorType.STREAM_BROKEN && !REQUEST_GIVEN_UP_ERRORS.includes(error)) return true;
    // Looked up by name: few request spans come this far (attributeMarks reads no request id of a dictionary's).
    const req = attrs[ATTR_JSONRPC_REQUEST_ID];
    if (typeof req !== 'string' && typeof req !== 'number') return true;
    // A session-less server (2025-11-25 and before: no Mcp-Session-Id): no session keys its request.
    if (typeof session !== 'string') {
      if (sessionRecovery && error !== ErrorType.CANCELLED)
        this.lost.withoutSession(span, recovery as RequestRecovery, error, req);
      return true;
    }
    const service = this.serviceId(span.service || UNKNOWN_SERVICE);
    const request = typeof req === 'string' ? req : numberText(req);
    const valid = session.length > 0 && request.length > 0 && span.spanId.length === 16 && span.endTimeUnixMs >= 0;
    // Only `cancelled` says the server was told (notifications/cancelled). `timeout` is the instrumentation's
    // own deadline, and `aborted` a closed stream or session: neither asks the server to stop.
    const cancelled = error === ErrorType.CANCELLED && valid;
    // A request whose stream had ended without its result (the span says what the client did about it)
    // and that ended at its deadline, by an abort, or by a break no resume can mend, lost its result. A
    // cancelled one was given up on purpose.
    const lost = !cancelled && valid && sessionRecovery;
    const slot =
      cancelled || lost
        ? this.slotFor(service, session, request)
        : this.table.find(this.keys.hash(service, session, request), service, session, request);
    if (slot === NO_SLOT) return true;
    this.resumption.cursorLostOnGiveUp(slot, span);
    if (cancelled) this.reissue.cancelled(slot, span);
    if (lost) this.lost.onRequestEnd(slot, span, recovery as RequestRecovery, error);
    return true;
  }

  /**
   * A request span counts in its era only when the server accepted it there (eraAnswer); a negotiation the
   * server refused (a `server/discover` probe answered 400, then the client's fallback to `initialize`) is
   * counted apart, by the version asked, and never as traffic of that era.
   */
  private countEra(span: SpanRecord, era: ProtocolEra, version: string): void {
    const attrs = span.attributes;
    const events = this.ctx.events!;
    const answer = eraAnswer(
      attrs[ATTR_MCP_METHOD_NAME],
      era,
      statusOf(attrs),
      attrs[ATTR_RPC_RESPONSE_STATUS_CODE],
      attrs[ATTR_ERROR_TYPE],
      span.kind !== SPAN_KIND_SERVER,
    );
    if (answer === EraAnswer.ACCEPTED) events.request(span.service || UNKNOWN_SERVICE, era);
    else if (answer === EraAnswer.REFUSED) events.negotiationRefused(span.service || UNKNOWN_SERVICE, version);
  }
}
