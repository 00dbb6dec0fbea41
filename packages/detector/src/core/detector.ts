import { CappedLabels } from '@resumewatch/bounded';
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
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_SERVER_ADDRESS,
  FindingRecord,
  StormEnd,
  StreamKind,
  isCursorGoneStatus,
  isFailedResumptionOutcome,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_TERMINAL_DUPLICATE,
  FindingKind,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_INPUT_ROUND,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_REQUEST_RECOVERY,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  GuardAction,
  RequestRecovery,
  ResumeEvidence,
  SPAN_STREAM_RESUME,
  SPAN_TASK_STATUS,
  ATTR_MCP_TASK_ID,
  SpanReceivedResult,
  type ProtocolEra,
} from '@resumewatch/semconv';
import { IdSet } from './id-set.js';
import { hash32, hexWord } from './ids.js';
import { DEFAULT_DETECTOR_OPTIONS, type DetectorInit, type DetectorOptions } from './options.js';
import { isEvidencedEmptyReplay, resumeOutcome, statusOf } from './outcome.js';
import { MAX_CORE_SERVICES, OTHER_SERVICE, UNKNOWN_SERVER, UNKNOWN_SERVICE } from './services.js';
import { Fate, LOST, LOST_RETRACTED, REPORTED, Reissues, SETTLED, type Reissue } from './reissues.js';
import { OperationReader } from './operations.js';
import { NO_SLOT } from './slots.js';
import { RequestTable, type ForcedStormEnd } from './table.js';
import { readState, writeState, type DetectorCounts, type DetectorState } from './state-codec.js';
import { TaskFamily, type TaskTimeline } from './tasks.js';
import {
  SPAN_KIND_CLIENT,
  SPAN_KIND_SERVER,
  type DetectorEvents,
  type DetectorStats,
  type Finding,
  type SpanRecord,
} from './types.js';

/** The three span kinds the core decides on (everything else is counted and ignored). */
const TERMINAL = 1;
const RESUME = 2;
const REATTACH = 3;

/** The recoveries a client request span may name (ATTR_MCP_REQUEST_RECOVERY). */
const RECOVERIES = new Set<string>(Object.values(RequestRecovery));
/** The resume outcomes a request span may name as its last resume's. */
const OUTCOMES = new Set<string>(Object.values(ResumeOutcome));

/**
 * The detection core: spans in, findings out, one span at a time and without I/O.
 * Every decision is taken on event time (span start), so the order in which spans arrive does
 * not decide whether a finding exists; see the package README for the exact guarantees.
 *
 * Reading order: `ingest` classifies a span and finds its request's slot in the table; a span handler
 * (`terminal`, `resume`, `attempt`, and `request` for a client request span given up) updates the
 * request's state; the rules (`duplicateTerminal`, `resumeAfterTerminal`, `reconnectStorm`, `signature`,
 * `emptyReplay`, `cursorLost`, `retractFailedResumption`, `foreignReplay`, `conflictingTerminal`,
 * `completedAfterCancellation`, `lostResult`, `lostWithoutSession`, `lostResultOfBrokenStream`) decide and `emit` findings.
 * What the detector knows of a request is read and changed through RequestTable (table.ts: named
 * methods, or a field by its name), which stores it as columns of typed arrays rather than one object
 * per request: that is what keeps a tracked request near 163 bytes.
 */
export class Detector {
  readonly options: DetectorOptions;
  private readonly table: RequestTable;
  private readonly spanIds: IdSet;
  private readonly attemptStreams: IdSet;
  /** Streams whose resume was a poll or a continuation of an unfinished request: not attempts. */
  private readonly quietStreams: IdSet;
  /** Services are interned to a small number; past MAX_CORE_SERVICES they share one, `other`'s. */
  private readonly services = new CappedLabels<string>(MAX_CORE_SERVICES, OTHER_SERVICE);
  private readonly openStorms = new Set<number>();
  /** 2026-07-28 era: first attempts that were re-issued, or whose fate a server told, by trace id. */
  private readonly reissues: Reissues;
  /** Reads each request span as the operation the metrics time (events.operation). */
  private readonly operations = new OperationReader();
  private readonly onFinding: ((finding: Finding) => void) | undefined;
  private readonly events: DetectorEvents | undefined;
  /** The tasks family (tasks.ts): fed the spans that carry mcp.task.id, and the client's re-issues. */
  private readonly tasks: TaskFamily;
  private readonly clock: () => number;
  private now = -Infinity;
  private counts: DetectorCounts = {
    evictions: 0,
    released: 0,
    spans: {
      [SpanReceivedResult.ACCEPTED]: 0,
      [SpanReceivedResult.DUPLICATE]: 0,
      [SpanReceivedResult.INVALID]: 0,
      [SpanReceivedResult.IGNORED]: 0,
    },
  };

  constructor(init: DetectorInit = {}) {
    const options: DetectorOptions = { ...DEFAULT_DETECTOR_OPTIONS };
    for (const key of Object.keys(DEFAULT_DETECTOR_OPTIONS) as (keyof DetectorOptions)[]) {
      const value = init[key];
      if (value !== undefined) options[key] = value;
    }
    if (!(options.stormThreshold >= 1)) throw new RangeError('stormThreshold must be at least 1');
    this.options = options;
    this.table = new RequestTable(Math.max(1, options.maxRequests), Math.floor(options.stormThreshold));
    this.spanIds = new IdSet(options.dedupeCapacity);
    this.attemptStreams = new IdSet(options.dedupeCapacity);
    this.quietStreams = new IdSet(options.dedupeCapacity);
    this.reissues = new Reissues(Math.max(1, options.maxRequests));
    this.onFinding = init.onFinding;
    this.events = init.events;
    this.tasks = new TaskFamily({ options, services: this.services, events: init.events, onFinding: init.onFinding });
    this.clock = init.clock ?? Date.now;
  }

  /** Feeds one span; any finding it completes is delivered to onFinding before this returns. */
  ingest(span: SpanRecord): SpanReceivedResult {
    const name = span.name;
    let type: number;
    if (name === SPAN_REQUEST_TERMINAL) type = TERMINAL;
    else if (name === SPAN_STREAM_RESUME) type = RESUME;
    else if (name === SPAN_SESSION_REATTACH) type = REATTACH;
    else {
      if (typeof span.attributes[ATTR_MCP_METHOD_NAME] !== 'string') {
        // A task status notification's span (no method of its own) is the tasks family's if it names a task.
        if (name !== SPAN_TASK_STATUS || !this.tasks.span(span)) return this.count(SpanReceivedResult.IGNORED);
        return this.count(SpanReceivedResult.ACCEPTED);
      }
      this.request(span);
      return this.count(SpanReceivedResult.ACCEPTED);
    }
    const time = span.startTimeUnixMs;
    if (span.spanId.length !== 16 || span.traceId.length !== 32 || !(time >= 0) || !(span.endTimeUnixMs >= 0)) {
      return this.count(SpanReceivedResult.INVALID);
    }
    const attrs = span.attributes;
    const session = attrs[ATTR_MCP_SESSION_ID];
    const req = attrs[ATTR_JSONRPC_REQUEST_ID];
    const hasReq = typeof req === 'string' ? req.length > 0 : typeof req === 'number';
    // A resume of the listening stream is no request's resume, even if a replayed terminal named one.
    const listening = type !== TERMINAL && attrs[ATTR_MCP_STREAM_KIND] === StreamKind.LISTENING;
    if (
      typeof session !== 'string' ||
      session.length === 0 ||
      (!hasReq && type === RESUME && !listening) ||
      (!hasReq && type === TERMINAL)
    ) {
      return this.count(SpanReceivedResult.IGNORED);
    }
    // The span id's two words are parsed once here and reused by whatever stores the id below.
    const hi = hexWord(span.spanId, 0);
    const lo = hexWord(span.spanId, 8);
    if (!this.spanIds.add(hi, lo)) return this.count(SpanReceivedResult.DUPLICATE);
    const service = span.service || UNKNOWN_SERVICE;
    let reattachEvicts = false;
    if (type === REATTACH) {
      const status = statusOf(attrs);
      const accepted = attrs[ATTR_MCP_REATTACH_ACCEPTED];
      this.events?.reattach(service, typeof accepted === 'boolean' ? accepted : status >= 200 && status < 300);
      if (!hasReq || listening) return this.count(SpanReceivedResult.ACCEPTED);
      // The same status rule as a resume's (semconv): the server no longer holds the cursor or the session.
      reattachEvicts = isCursorGoneStatus(status);
    } else if (listening) {
      this.events?.listeningResume(
        service,
        refusedByGuard(attrs) ? ResumeOutcome.ERROR : resumeOutcome(attrs, statusOf(attrs)),
      );
      return this.count(SpanReceivedResult.ACCEPTED);
    }
    const slot = this.slotFor(
      this.services.idOf(service),
      session,
      typeof req === 'string' ? req : String(req as number),
    );
    this.table.seenAt(slot, span.endTimeUnixMs > this.now ? span.endTimeUnixMs : this.now);
    if (type === TERMINAL) this.terminal(slot, span, hi, lo, time, service);
    else if (type === RESUME) this.resume(slot, span, hi, lo, time, service);
    else this.attempt(slot, span, hi, lo, time, service, reattachEvicts);
    return this.count(SpanReceivedResult.ACCEPTED);
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
    if (nowMs > this.now) this.now = nowMs;
    const table = this.table;
    const window = this.options.stormWindowMs;
    for (const slot of this.openStorms) {
      // A storm ends when its window passes with no attempt; it is reported once it has settled.
      const quietFrom = table.lastAttemptAt(slot) + window;
      if (!table.stormEnded(slot) && this.now > quietFrom) this.endStorm(slot, quietFrom, false);
      if (table.stormEnded(slot) && this.now >= table.stormEndAt(slot) + this.options.settleMs) this.finalize(slot);
    }
    // Idle requests leave in least-recently-touched order; a storm still inside its window ends as dropped.
    const horizon = this.now - this.options.retentionMs;
    while (table.oldest !== NO_SLOT && table.lastSeenAt(table.oldest) < horizon) {
      const oldest = table.oldest;
      this.releaseSlot(oldest, this.now > table.lastAttemptAt(oldest) + window ? undefined : StormEnd.DROPPED);
      this.counts.released++;
    }
    this.advanceReissues(horizon);
    this.tasks.advance(this.now);
  }

  /** Re-issues whose window has passed get their verdict; first attempts idle past retention leave. */
  private advanceReissues(horizon: number): void {
    const reissues = this.reissues;
    for (const trace of reissues.pending) {
      const entry = reissues.get(trace)!;
      if (this.now >= entry.settlesAt) this.settleReissue(trace, entry);
    }
    // A re-issue still in its window was touched at its deadline or later: it is never past the horizon.
    for (let trace = reissues.oldest(); trace !== undefined; trace = reissues.oldest()) {
      const entry = reissues.get(trace)!;
      if (!(entry.touchedAt < horizon)) break;
      this.settleReissue(trace, entry);
      reissues.delete(trace);
      this.counts.released++;
    }
  }

  /** advance() to the clock's time. */
  tick(): void {
    this.advance(this.clock());
  }

  /** End of input: ends and reports every open storm now, whatever the windows say. */
  flush(): void {
    for (const slot of this.openStorms) this.forceFinalize(slot, StormEnd.SHUTDOWN);
    // No more evidence will come: a re-issue whose first attempt's fate is unknown is reported as such.
    for (const trace of this.reissues.pending) this.settleReissue(trace, this.reissues.get(trace)!);
  }

  stats(): DetectorStats {
    const counts = this.counts;
    return {
      tracked: this.table.size,
      evictions: counts.evictions,
      released: counts.released,
      activeStorms: this.activeStorms(),
      reissues: this.reissues.size,
      tasks: this.tasks.size,
      taskEvictions: this.tasks.evictions,
      spans: { ...counts.spans },
    };
  }

  /**
   * Everything the detector knows, as plain data by the names of its state codec (state-codec.ts):
   * copied, so that a door can write it to a file while the detector goes on, and a restarted process
   * can importState() it. See src/doors/state-file.ts.
   */
  exportState(): DetectorState {
    return writeState({
      options: this.options,
      now: this.now,
      counts: this.counts,
      services: this.services,
      openStorms: this.openStorms,
      table: this.table,
      reissues: this.reissues,
      spanIds: this.spanIds,
      attemptStreams: this.attemptStreams,
      quietStreams: this.quietStreams,
      tasks: this.tasks,
    });
  }

  /**
   * Loads exportState() of a detector with the same options into this fresh one. A state of another
   * format, other options, or with a missing, unknown or mistyped field is refused whole
   * (StateMismatchError, one line saying why), and this detector stays empty.
   */
  importState(state: DetectorState): void {
    const loaded = readState(state, {
      options: this.options,
      services: this.services,
      table: this.table,
      reissues: this.reissues,
      spanIds: this.spanIds,
      attemptStreams: this.attemptStreams,
      quietStreams: this.quietStreams,
      tasks: this.tasks,
    });
    this.now = loaded.now;
    this.counts = loaded.counts;
    for (const slot of loaded.openStorms) this.openStorms.add(slot);
  }

  /** A task's timeline (creation, statuses, polls, result or expiry, duplicate) as plain data, for the page. */
  taskTimeline(service: string, taskId: string): TaskTimeline | undefined {
    return this.tasks.timeline(service, taskId);
  }

  /** Live task records by service: a count of state, read when needed (the live tasks gauge). */
  liveTasksByService(): Map<string, number> {
    return this.tasks.liveByService();
  }

  private activeStorms(): number {
    let n = 0;
    for (const slot of this.openStorms) if (!this.table.stormEnded(slot)) n++;
    return n;
  }

  /**
   * The reported storms not yet ended, by service: a count of state, read when it is needed (a scrape),
   * so it is right after a restart and never drifts from the storms the detector holds.
   */
  activeStormsByService(): Map<string, number> {
    const out = new Map<string, number>();
    for (const slot of this.openStorms) {
      if (this.table.stormEnded(slot)) continue;
      const service = this.serviceOf(slot);
      out.set(service, (out.get(service) ?? 0) + 1);
    }
    return out;
  }

  private count(r: SpanReceivedResult): SpanReceivedResult {
    this.counts.spans[r]++;
    this.events?.span(r);
    return r;
  }

  private slotFor(service: number, session: string, request: string): number {
    const table = this.table;
    const streamHash = RequestTable.hash(service, session, request);
    const found = table.find(streamHash, service, session, request);
    if (found !== NO_SLOT) return found;
    if (table.size >= table.maxRequests) {
      this.releaseSlot(table.oldest, StormEnd.DROPPED);
      this.counts.evictions++;
    }
    return table.create(streamHash, service, session, request);
  }

  /** Drops the request's state; an open storm of it ends now, `forcedBy` saying why (undefined: its window had passed). */
  private releaseSlot(slot: number, forcedBy: ForcedStormEnd | undefined): void {
    if (this.openStorms.has(slot)) this.forceFinalize(slot, forcedBy);
    this.table.release(slot);
  }

  // ---------------------------------------------------------------------------------------------
  // Span handlers: what each kind of span changes in its request's state, and which rules it runs.
  // ---------------------------------------------------------------------------------------------

  /** A terminal (result or error) delivered to the application for the request. */
  private terminal(slot: number, span: SpanRecord, hi: number, lo: number, time: number, service: string): void {
    const table = this.table;
    const attrs = span.attributes;
    const marks = terminalMarks(attrs);
    const foreign = (marks & HAS_FOREIGN) !== 0 && attrs[ATTR_MCP_TERMINAL_FOREIGN] === true;
    const conflict = (marks & HAS_CONFLICT) !== 0 && attrs[ATTR_MCP_TERMINAL_CONFLICT] === true;
    // A server defect, guard or not: it never counts as the client's duplicate or resume after terminal.
    if (foreign || conflict) return this.serverDefect(slot, span, time, foreign, conflict);
    const stream = attrs[ATTR_MCP_STREAM_ID];
    const streamHash = hash32(typeof stream === 'string' && stream.length > 0 ? stream : span.spanId);
    const hadTerminal = table.hasTerminal(slot);
    if (hadTerminal && droppedByGuard(attrs)) return;
    let markedDuplicate = (marks & HAS_DUPLICATE) !== 0 && attrs[ATTR_MCP_TERMINAL_DUPLICATE] === true;
    if (markedDuplicate && table.foreignStream(slot) !== 0) {
      // The "first" terminal it duplicates was a foreign one: the server's defect, already reported.
      const first = attrs[ATTR_MCP_TERMINAL_FIRST_STREAM_ID];
      if (typeof first === 'string' && hash32(first) === table.foreignStream(slot)) markedDuplicate = false;
    }
    table.countTerminal(slot, markedDuplicate);
    this.events?.terminal(service, hadTerminal || markedDuplicate);
    let duplicateTime = time;
    if (!hadTerminal) {
      table.setFirstTerminal(slot, time, streamHash, hi, lo);
    } else if (streamHash === table.firstTerminalStream(slot)) {
      // The same stream delivering it again (a replay to the same stream) is no duplicate by itself.
      table.countFirstStreamDelivery(slot, time, hi, lo);
    } else if (time < table.firstTerminalAt(slot)) {
      // A delivery earlier than the one taken as first: that one becomes the duplicate.
      duplicateTime = table.firstTerminalAt(slot);
      table.demoteFirstTerminal(slot);
      table.setFirstTerminal(slot, time, streamHash, hi, lo);
    } else {
      table.noteDuplicateSpan(slot, hi, lo);
    }
    // The common case, a request's first terminal with nothing else known about it (no cold row: never
    // resumed, reattached or duplicated): no finding to retract, no duplicate, no resume before it.
    if (!hadTerminal && !markedDuplicate && !table.hasColdRow(slot)) return;
    // The request reached its terminal: no resume of it failed to get its result.
    this.retractFailedResumption(slot, span, time, true);
    this.duplicateTerminal(slot, span.traceId, duplicateTime, span.spanId);
    // Spans out of order: a resume already seen turns out to be later than this terminal.
    const resumeTime = table.latestResumeAt(slot);
    if (resumeTime >= table.firstTerminalAt(slot))
      this.resumeAfterTerminal(slot, span.traceId, table.firstTerminalAt(slot), resumeTime, undefined);
    this.completedAfterCancellation(slot, span.traceId);
  }

  /**
   * A request span: counted by era and timed as an operation (the metrics' events). For the findings,
   * only one that the client gave up (its deadline passed, it was aborted or cancelled before its
   * terminal event) tells anything. No state is made for the requests that end as they
   * should: a given-up request is looked at only if it is already tracked, except a cancelled one,
   * whose terminal may still come.
   */
  private request(span: SpanRecord): void {
    const attrs = span.attributes;
    const version = attrs[ATTR_MCP_PROTOCOL_VERSION];
    const era = protocolEra(version);
    if (era !== undefined && this.events) this.countEra(span, era, version as string);
    const fate = attrs[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION];
    if (typeof fate === 'boolean') this.firstAttemptFate(span, fate);
    // The one check a span that concerns no task pays for the tasks family.
    if (attrs[ATTR_MCP_TASK_ID] !== undefined) this.tasks.span(span);
    // Once per request, at its end: nothing per SSE event, whatever the metrics make of it.
    if (this.events?.operation) {
      const op = this.operations.read(span, span.service || UNKNOWN_SERVICE);
      if (op) this.events.operation(op);
    }
    if (span.kind !== SPAN_KIND_CLIENT) return;
    const reissueOf = attrs[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID];
    // A Multi Round-Trip round carries the answer the server asked for: the same call going on, not a re-issue.
    if (typeof reissueOf === 'string' && attrs[ATTR_MCP_REQUEST_INPUT_ROUND] !== true) {
      this.reissued(span, reissueOf);
      this.tasks.reissue(span, reissueOf);
    }
    const error = attrs[ATTR_ERROR_TYPE];
    if (typeof error !== 'string') return;
    const recovery = attrs[ATTR_MCP_REQUEST_RECOVERY];
    // What the client did about a stream that ended without the result, in the session era (the
    // instrumentation names none for a 2026-07-28 request, whose recovery is its re-issue).
    const sessionRecovery =
      typeof recovery === 'string' && RECOVERIES.has(recovery) && recovery !== RequestRecovery.NOT_REISSUED;
    // 2026-07-28 era: nothing resumes a broken stream; its end is the request's end. In the session era a
    // stream that broke with no event id is the same (recovery `no_event_id`): no cursor, nothing resumes it.
    if (error === ErrorType.STREAM_BROKEN && !sessionRecovery) return this.lostResultOfBrokenStream(span);
    if (error !== ErrorType.STREAM_BROKEN && !REQUEST_GIVEN_UP_ERRORS.includes(error)) return;
    const session = attrs[ATTR_MCP_SESSION_ID];
    const req = attrs[ATTR_JSONRPC_REQUEST_ID];
    if (typeof req !== 'string' && typeof req !== 'number') return;
    // A session-less server (2025-11-25 and before: no Mcp-Session-Id): no session keys its request.
    if (typeof session !== 'string') {
      if (sessionRecovery && error !== ErrorType.CANCELLED)
        this.lostWithoutSession(span, recovery as RequestRecovery, error, req);
      return;
    }
    const service = this.services.idOf(span.service || UNKNOWN_SERVICE);
    const request = typeof req === 'string' ? req : String(req);
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
        : this.table.find(RequestTable.hash(service, session, request), service, session, request);
    if (slot === NO_SLOT) return;
    this.cursorLostOnGiveUp(slot, span);
    if (cancelled) this.cancelled(slot, span);
    if (lost) this.lostOnRequestEnd(slot, span, recovery as RequestRecovery, error);
  }

  /**
   * A client request span that ended at its deadline or by an abort after its stream ended without its
   * result, saying what the client did about it. Resumed: lost, unless its last resume's outcome is a
   * failed resumption the detector reports on its own (ambiguous_empty_replay, cursor_lost tell the loss).
   */
  private lostOnRequestEnd(slot: number, span: SpanRecord, recovery: RequestRecovery, error: string): void {
    const table = this.table;
    table.seenAt(slot, span.endTimeUnixMs > this.now ? span.endTimeUnixMs : this.now);
    const last = span.attributes[ATTR_MCP_RESUME_OUTCOME];
    const outcome = typeof last === 'string' && OUTCOMES.has(last) ? (last as ResumeOutcome) : undefined;
    if (outcome !== undefined && outcome !== ResumeOutcome.PARTIAL_REPLAY && isFailedResumptionOutcome(outcome)) return;
    const extra: Partial<Finding> = { recovery, request_end: error };
    if (recovery === RequestRecovery.RESUMED && outcome !== undefined) extra.outcome = outcome;
    this.lostResult(slot, span.traceId, span.startTimeUnixMs, span.endTimeUnixMs, span.spanId, extra);
  }

  /**
   * lost_result of a session-less server's request (session era, no Mcp-Session-Id): the request span
   * ended without its result after its stream ended without it, as `lostOnRequestEnd` decides for a
   * session's request. Nothing keys it but its trace, and nothing can retract it: with no session there
   * is no resume to bring the result later (a re-issue is another request). Once per request span.
   */
  private lostWithoutSession(span: SpanRecord, recovery: RequestRecovery, error: string, req: string | number): void {
    if (span.spanId.length !== 16 || !(span.endTimeUnixMs >= span.startTimeUnixMs) || !(span.startTimeUnixMs >= 0))
      return;
    if (!this.onFinding) return;
    const last = span.attributes[ATTR_MCP_RESUME_OUTCOME];
    const outcome = typeof last === 'string' && OUTCOMES.has(last) ? (last as ResumeOutcome) : undefined;
    const finding: Finding = {
      kind: FindingKind.LOST_RESULT,
      // Interned as every finding's service is: past MAX_CORE_SERVICES it is `other`'s.
      service: this.services.keyOf(this.services.idOf(span.service || UNKNOWN_SERVICE))!,
      session_id: '',
      request_id: typeof req === 'string' ? req : String(req),
      trace_id: span.traceId,
      first_time_unix_ms: span.startTimeUnixMs,
      last_time_unix_ms: span.endTimeUnixMs,
      span_ids: [span.spanId],
      recovery,
      request_end: error,
    };
    if (recovery === RequestRecovery.RESUMED && outcome !== undefined) finding.outcome = outcome;
    this.onFinding(finding);
  }

  /**
   * A request span counts in its era only when the server accepted it there (eraAnswer); a negotiation the
   * server refused (a `server/discover` probe answered 400, then the client's fallback to `initialize`) is
   * counted apart, by the version asked, and never as traffic of that era.
   */
  private countEra(span: SpanRecord, era: ProtocolEra, version: string): void {
    const attrs = span.attributes;
    const answer = eraAnswer(
      attrs[ATTR_MCP_METHOD_NAME],
      era,
      statusOf(attrs),
      attrs[ATTR_RPC_RESPONSE_STATUS_CODE],
      attrs[ATTR_ERROR_TYPE],
      span.kind !== SPAN_KIND_SERVER,
    );
    if (answer === EraAnswer.ACCEPTED) this.events!.request(span.service || UNKNOWN_SERVICE, era);
    else if (answer === EraAnswer.REFUSED) this.events!.negotiationRefused(span.service || UNKNOWN_SERVICE, version);
  }

  /** The client cancelled the request (`notifications/cancelled`) when its request span ended. */
  private cancelled(slot: number, span: SpanRecord): void {
    const table = this.table;
    const at = span.endTimeUnixMs;
    table.seenAt(slot, at > this.now ? at : this.now);
    // The earliest cancellation counts: the same span exported twice, or a retry's, changes nothing.
    if (!(at >= table.read(slot, 'cancelledAt'))) {
      table.write(slot, 'cancelledAt', at);
      table.writeSpan(slot, 'cancelledSpan', hexWord(span.spanId, 0), hexWord(span.spanId, 8));
    }
    this.completedAfterCancellation(slot, span.traceId);
  }

  /**
   * A request span of a first attempt's trace (a server's, or the gateway's, which sees the upstream
   * finish) that says whether its handler went on to produce the result after the stream was closed.
   * `completed` wins over `stopped`, whatever the order: it is the evidence that the work ran.
   */
  private firstAttemptFate(span: SpanRecord, completed: boolean): void {
    if (span.traceId.length !== 32 || span.spanId.length !== 16 || !(span.startTimeUnixMs >= 0)) return;
    if (!(span.endTimeUnixMs >= span.startTimeUnixMs)) return;
    const entry = this.reissueEntry(span.traceId, span.endTimeUnixMs);
    const fate = completed ? Fate.COMPLETED : Fate.STOPPED;
    // Of two spans saying the same, the earlier one is kept, so that the finding is the same in any order.
    if (fate > entry.fate || (fate === entry.fate && span.startTimeUnixMs < entry.fateStart)) {
      entry.fate = fate;
      entry.fateSpanId = span.spanId;
      entry.fateStart = span.startTimeUnixMs;
      entry.fateEnd = span.endTimeUnixMs;
    }
    this.duplicateExecution(span.traceId, entry);
  }

  /**
   * A client request span that re-issues the request of trace `firstTrace` (its stream broke before
   * the result). The first re-issue of an attempt counts; the same span again, or another re-issue of
   * the same attempt, changes nothing. Its verdict waits for the first attempt's fate until
   * `reissueSettleMs` after the re-issue ended.
   */
  private reissued(span: SpanRecord, firstTrace: string): void {
    if (firstTrace.length !== 32 || span.traceId.length !== 32 || span.spanId.length !== 16) return;
    if (!(span.startTimeUnixMs >= 0) || !(span.endTimeUnixMs >= span.startTimeUnixMs)) return;
    const deadline = span.endTimeUnixMs + this.options.reissueSettleMs;
    const entry = this.reissueEntry(firstTrace, deadline);
    if (entry.service >= 0) return;
    const attrs = span.attributes;
    const session = attrs[ATTR_MCP_SESSION_ID];
    const req = attrs[ATTR_JSONRPC_REQUEST_ID];
    const firstSpan = attrs[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID];
    entry.service = this.services.idOf(span.service || UNKNOWN_SERVICE);
    entry.sessionId = typeof session === 'string' ? session : '';
    entry.requestId = typeof req === 'string' ? req : typeof req === 'number' ? String(req) : '';
    entry.traceId = span.traceId;
    entry.spanId = span.spanId;
    entry.firstSpanId = typeof firstSpan === 'string' && firstSpan.length === 16 ? firstSpan : '';
    entry.start = span.startTimeUnixMs;
    entry.end = span.endTimeUnixMs;
    entry.settlesAt = deadline;
    this.reissues.pending.add(firstTrace);
    this.retractLostByReissue(firstTrace, entry);
    this.duplicateExecution(firstTrace, entry);
  }

  /** The first attempt's entry, touched at `at` (or the detector's time, if later); the least recently touched makes room. */
  private reissueEntry(trace: string, at: number): Reissue {
    const reissues = this.reissues;
    if (reissues.full(trace)) {
      const oldest = reissues.oldest()!;
      this.settleReissue(oldest, reissues.get(oldest)!);
      reissues.delete(oldest);
      this.counts.evictions++;
    }
    return reissues.touch(trace, at > this.now ? at : this.now);
  }

  /**
   * The re-issue's window has passed (or its state has to go, or input ended): the fate known now is
   * its verdict. Unknown: possible_duplicate_execution; stopped: nothing (a later `completed` still
   * reports duplicate_execution while the entry is kept).
   */
  private settleReissue(trace: string, entry: Reissue): void {
    this.reissues.pending.delete(trace);
    if (entry.service < 0 || (entry.flags & SETTLED) !== 0) return;
    entry.flags |= SETTLED;
    if (entry.fate === Fate.UNKNOWN) this.possibleDuplicateExecution(trace, entry);
  }

  /** A resume (GET with Last-Event-ID) of the request's stream. */
  private resume(slot: number, span: SpanRecord, hi: number, lo: number, time: number, service: string): void {
    const table = this.table;
    table.ensureCold(slot);
    const attrs = span.attributes;
    if (refusedByGuard(attrs)) {
      this.events?.resume(service, ResumeOutcome.ERROR);
      return;
    }
    const status = statusOf(attrs);
    const outcome = resumeOutcome(attrs, status);
    this.events?.resume(service, outcome);
    const observed = attrs[ATTR_MCP_REQUEST_TERMINAL_OBSERVED] === true;
    if (attrs[ATTR_MCP_RESUME_REPLAYED_TERMINAL] === true) {
      // A replayed terminal is a duplicate if one had been delivered before, or if it is not the first replay to deliver it.
      table.countReplayedTerminal(slot, observed);
      this.duplicateTerminal(slot, span.traceId, time, span.spanId);
    }
    table.noteResume(slot, time, hi, lo);
    const haveTerminal = table.hasTerminal(slot);
    if (observed || (haveTerminal && table.firstTerminalAt(slot) <= time)) {
      this.resumeAfterTerminal(
        slot,
        span.traceId,
        haveTerminal ? Math.min(table.firstTerminalAt(slot), time) : time,
        time,
        span.spanId,
      );
    } else if (
      outcome === ResumeOutcome.CONTINUATION ||
      outcome === ResumeOutcome.POLL ||
      outcome === ResumeOutcome.PARTIAL_REPLAY
    ) {
      // The request is alive: a poll or a continuation before its terminal is no attempt and no finding.
      // A partial replay carried messages too (the server held the stream), but its request then ended
      // without its result: lost.
      if (outcome !== ResumeOutcome.POLL) {
        table.noteContinuation(slot, time);
        this.retractFailedResumption(slot, span, time, false);
      }
      if (outcome === ResumeOutcome.CONTINUATION) this.countedContinuation(slot, span, hi, lo, time);
      else if (outcome === ResumeOutcome.PARTIAL_REPLAY) this.lostOnPartialReplay(slot, span, time);
      this.notAttempt(slot, span);
      return;
    } else if (!haveTerminal && isFailedResumptionOutcome(outcome)) {
      if (outcome === ResumeOutcome.EMPTY_REPLAY) this.emptyReplay(slot, span, time, status);
      else this.cursorLost(slot, span, hi, lo, time, outcome, status);
    }
    this.attempt(slot, span, hi, lo, time, service, isFailedResumptionOutcome(outcome));
  }

  /**
   * One reattach/resume attempt of the request, counted into its current episode; attempts are distinct
   * new streams, so the two spans of one GET count once. `evicts`: the server answered 400/404/409, so
   * the session (and the storm, if this episode is one) ends with this attempt.
   */
  private attempt(
    slot: number,
    span: SpanRecord,
    hi: number,
    lo: number,
    time: number,
    service: string,
    evicts: boolean,
  ): void {
    if (refusedByGuard(span.attributes)) return;
    const table = this.table;
    table.ensureCold(slot);
    const stream = span.attributes[ATTR_MCP_STREAM_ID];
    let streamHash: number;
    if (typeof stream === 'string' && stream.length > 0) {
      streamHash = hash32(stream);
      const key = table.incarnationKey(slot);
      if (this.quietStreams.contains(streamHash, key)) return;
      if (!this.attemptStreams.add(streamHash, key)) {
        // The second span of an attempt already counted: it can still tell that the server evicted it.
        if (evicts && table.episodeAttemptCount(slot) > 0 && streamHash === table.lastAttemptStream(slot))
          this.markEvicting(slot);
        return;
      }
    } else {
      streamHash = hash32(span.spanId);
    }
    // An attempt inside a storm already reported and ended belongs to that storm, not to a new one.
    if (!table.inStorm(slot) && time <= table.stormEndAt(slot)) return;
    const window = this.options.stormWindowMs;
    if (table.episodeAttemptCount(slot) > 0) {
      if (time > table.lastAttemptAt(slot) + window) this.closeEpisode(slot);
      else if (time < table.firstAttemptAt(slot) - window) return;
    }
    table.countAttempt(slot, time, hi, lo);
    if (!(time < table.lastAttemptAt(slot))) {
      table.setLastAttempt(slot, time, streamHash, span.traceId, hi, lo, evicts);
      if (table.stormEnded(slot) && !evicts) {
        // A later attempt: the storm did not end where it seemed to.
        table.reopenStorm(slot);
      }
    }
    if (!table.inStorm(slot)) this.reconnectStorm(slot, span, time);
    if (table.inStorm(slot) && table.lastAttemptEvicted(slot) && !table.stormEnded(slot)) {
      this.endStorm(slot, table.lastAttemptAt(slot), true);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Rules: one method per finding kind, each reporting its finding at most once per request.
  // ---------------------------------------------------------------------------------------------

  /**
   * duplicate_terminal: the request's terminal was delivered more than once (on distinct streams, marked
   * duplicate by the instrumentation, or replayed by a resume after one had been delivered).
   */
  private duplicateTerminal(slot: number, traceId: string, time: number, spanId: string): void {
    const table = this.table;
    if (table.wasReported(slot, FindingKind.DUPLICATE_TERMINAL)) return;
    const duplicates = table.duplicateDeliveries(slot);
    if (duplicates < 1) return;
    table.markReported(slot, FindingKind.DUPLICATE_TERMINAL);
    const haveTerminal = table.hasTerminal(slot);
    const first = haveTerminal ? Math.min(table.firstTerminalAt(slot), time) : time;
    const last = haveTerminal ? Math.max(table.firstTerminalAt(slot), time) : time;
    const ids: string[] = [];
    if (haveTerminal) ids.push(table.firstTerminalSpanId(slot));
    const duplicateSpan = table.duplicateSpanId(slot) ?? spanId;
    if (!ids.includes(duplicateSpan)) ids.push(duplicateSpan);
    this.emit(slot, FindingKind.DUPLICATE_TERMINAL, traceId, first, last, ids, { duplicates });
    // A storm was reported before any duplicate had arrived: the pattern is complete now.
    this.signature(slot, traceId, last);
  }

  /**
   * resume_after_terminal: a resume of a request whose terminal had been delivered (by event time, or
   * as the instrumentation observed it). `resumeSpanId` undefined: the latest resume stored in the table.
   */
  private resumeAfterTerminal(
    slot: number,
    traceId: string,
    first: number,
    last: number,
    resumeSpanId: string | undefined,
  ): void {
    const table = this.table;
    if (table.wasReported(slot, FindingKind.RESUME_AFTER_TERMINAL)) return;
    table.markReported(slot, FindingKind.RESUME_AFTER_TERMINAL);
    const resumeSpan = resumeSpanId ?? table.latestResumeSpanId(slot);
    const ids = table.hasTerminal(slot) ? [table.firstTerminalSpanId(slot), resumeSpan] : [resumeSpan];
    this.emit(slot, FindingKind.RESUME_AFTER_TERMINAL, traceId, first, last, ids);
  }

  /**
   * reconnect_storm: `stormThreshold` attempts of one episode within `stormWindowMs`. The ring holds the
   * threshold latest attempt times, so its span is the tightest window of that many attempts.
   */
  private reconnectStorm(slot: number, span: SpanRecord, time: number): void {
    const table = this.table;
    const oldest = table.oldestRingTime(slot);
    const newest = table.newestRingTime(slot);
    if (!(newest - oldest <= this.options.stormWindowMs)) return;
    table.startStorm(slot);
    this.openStorms.add(slot);
    this.emit(
      slot,
      FindingKind.RECONNECT_STORM,
      span.traceId,
      oldest,
      newest,
      uniq([table.firstAttemptSpanId(slot), span.spanId]),
      {
        attempts: table.episodeAttemptCount(slot),
      },
    );
    // Duplicates were delivered before the storm was complete: the pattern is complete now.
    this.signature(slot, span.traceId, time);
  }

  /**
   * signature: the seed pattern, reported once as soon as both halves are known (a duplicate terminal on a
   * distinct stream, and a reported storm, current or ended), in whichever order they were learnt.
   */
  private signature(slot: number, traceId: string, time: number): void {
    const table = this.table;
    const current = table.inStorm(slot);
    if (table.wasReported(slot, FindingKind.SIGNATURE) || !(current || table.hasPastStorm(slot))) return;
    const duplicates = table.duplicateDeliveries(slot);
    if (duplicates < 1) return;
    table.markReported(slot, FindingKind.SIGNATURE);
    const stormFirst = current ? table.firstAttemptAt(slot) : table.pastStormFirstAt(slot);
    const stormLast = current ? table.lastAttemptAt(slot) : table.stormEndAt(slot);
    const first = table.hasTerminal(slot) ? Math.min(table.firstTerminalAt(slot), stormFirst) : stormFirst;
    const ids = [table.firstAttemptSpanId(slot), table.lastAttemptSpanId(slot)];
    const duplicateSpan = table.duplicateSpanId(slot);
    if (duplicateSpan !== undefined) ids.unshift(duplicateSpan);
    if (table.hasTerminal(slot)) ids.unshift(table.firstTerminalSpanId(slot));
    this.emit(slot, FindingKind.SIGNATURE, traceId, first, Math.max(stormLast, time), uniq(ids), {
      duplicates,
      attempts: current ? table.episodeAttemptCount(slot) : table.pastStormAttemptCount(slot),
    });
  }

  /**
   * ambiguous_empty_replay: an evidenced empty replay of a request with no terminal and no continuation
   * at or after it, by event time. Withdrawn by retractFailedResumption if the request turns out alive.
   */
  private emptyReplay(slot: number, span: SpanRecord, time: number, status: number): void {
    const table = this.table;
    if (
      table.wasReported(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY) ||
      table.continuationAt(slot) >= time ||
      !isEvidencedEmptyReplay(span.attributes, span.kind)
    )
      return;
    table.markReported(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY);
    table.setEmptyReplayAt(slot, time);
    this.emit(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY, span.traceId, time, time, [span.spanId], {
      outcome: ResumeOutcome.EMPTY_REPLAY,
      status_code: status,
    });
  }

  /**
   * cursor_lost: a resume answered 404 at once, or 400/409 once a second resume of the request is
   * rejected too, for a request with no terminal and no continuation at or after the failure, by event
   * time. Withdrawn by retractFailedResumption if the request turns out alive.
   */
  private cursorLost(
    slot: number,
    span: SpanRecord,
    hi: number,
    lo: number,
    time: number,
    outcome: ResumeOutcome,
    status: number,
  ): void {
    const table = this.table;
    let first = time;
    const ids = [span.spanId];
    if (outcome === ResumeOutcome.CURSOR_REJECTED) {
      // Provisional: the server may still hold the dropped connection, and the client's next resume succeed.
      if (!table.hasRejection(slot)) {
        table.setFirstRejection(slot, time, hi, lo);
        return;
      }
      const earlier = table.firstRejectionAt(slot);
      first = Math.min(earlier, time);
      if (earlier <= time) ids.unshift(table.firstRejectionSpanId(slot));
      else ids.push(table.firstRejectionSpanId(slot));
      time = Math.max(earlier, time);
    }
    if (table.wasReported(slot, FindingKind.CURSOR_LOST) || table.continuationAt(slot) >= time) return;
    table.markReported(slot, FindingKind.CURSOR_LOST);
    table.setCursorLostAt(slot, time);
    this.emit(slot, FindingKind.CURSOR_LOST, span.traceId, first, time, ids, { outcome, status_code: status });
  }

  /**
   * cursor_lost confirmed by the request's end: a lone 400/409 (provisional: the client may resume
   * again and succeed) and then the client gave the request up without its terminal event or a
   * continuation. Many clients stop after one rejection; the guard confirms the same way.
   */
  private cursorLostOnGiveUp(slot: number, span: SpanRecord): void {
    const table = this.table;
    if (!table.hasColdRow(slot) || !table.hasRejection(slot) || table.hasTerminal(slot)) return;
    const rejectedAt = table.firstRejectionAt(slot);
    if (table.wasReported(slot, FindingKind.CURSOR_LOST) || table.continuationAt(slot) >= rejectedAt) return;
    const end = Math.max(span.endTimeUnixMs, rejectedAt);
    table.markReported(slot, FindingKind.CURSOR_LOST);
    table.setCursorLostAt(slot, end);
    this.emit(
      slot,
      FindingKind.CURSOR_LOST,
      span.traceId,
      rejectedAt,
      end,
      [table.firstRejectionSpanId(slot), span.spanId],
      {
        outcome: ResumeOutcome.CURSOR_REJECTED,
      },
    );
  }

  /**
   * completed_after_cancellation: the client cancelled the request and its first terminal arrived at or
   * after the cancellation, by event time, whichever of the two spans came first. The application was
   * told the call failed while the work ran to completion (the server did not stop, or its result was
   * already under way): a retry runs the side effect twice, the harm of the replay loop.
   */
  private completedAfterCancellation(slot: number, traceId: string): void {
    const table = this.table;
    const cancelledAt = table.read(slot, 'cancelledAt');
    if (
      table.wasReported(slot, FindingKind.COMPLETED_AFTER_CANCELLATION) ||
      !table.hasTerminal(slot) ||
      !(table.firstTerminalAt(slot) >= cancelledAt)
    )
      return;
    table.markReported(slot, FindingKind.COMPLETED_AFTER_CANCELLATION);
    this.emit(slot, FindingKind.COMPLETED_AFTER_CANCELLATION, traceId, cancelledAt, table.firstTerminalAt(slot), [
      table.readSpan(slot, 'cancelledSpan')!,
      table.firstTerminalSpanId(slot),
    ]);
  }

  /**
   * duplicate_execution: a re-issued request whose first attempt ran to completion on the server after
   * its stream broke (a span of the first attempt's trace said `completed_after_cancellation`), in
   * whichever order the two spans came: the side effect ran twice. Once per re-issue.
   */
  private duplicateExecution(firstTrace: string, entry: Reissue): void {
    if (entry.service < 0 || entry.fate !== Fate.COMPLETED || (entry.flags & REPORTED) !== 0) return;
    this.emitReissue(FindingKind.DUPLICATE_EXECUTION, firstTrace, entry);
  }

  /**
   * possible_duplicate_execution: a re-issued request whose first attempt's fate no span told within
   * the window: it may have run twice. Reported when the window passes, once per re-issue.
   */
  private possibleDuplicateExecution(firstTrace: string, entry: Reissue): void {
    if ((entry.flags & REPORTED) !== 0) return;
    this.emitReissue(FindingKind.POSSIBLE_DUPLICATE_EXECUTION, firstTrace, entry);
  }

  /** A re-issue's finding: the re-issuing client's service and request, the first attempt's trace beside its own. */
  private emitReissue(kind: FindingKind, firstTrace: string, entry: Reissue): void {
    entry.flags |= REPORTED;
    this.reissues.pending.delete(firstTrace);
    if (!this.onFinding) return;
    const fate = entry.fate === Fate.COMPLETED;
    const ids = [entry.firstSpanId, fate ? entry.fateSpanId : '', entry.spanId].filter((id) => id.length > 0);
    this.onFinding({
      kind,
      service: this.services.keyOf(entry.service)!,
      session_id: entry.sessionId,
      request_id: entry.requestId,
      trace_id: entry.traceId,
      first_time_unix_ms: fate ? Math.min(entry.fateStart, entry.start) : entry.start,
      last_time_unix_ms: fate ? Math.max(entry.fateEnd, entry.end) : entry.end,
      span_ids: uniq(ids),
      first_trace_id: firstTrace,
    });
  }

  /**
   * lost_result: the request ended (its deadline, an abort) without its result after its stream had
   * ended without it, whatever the client did (resumed, could not, did not), unless its terminal is known.
   * Retracted by a terminal that arrives later; a continuation counted before it is corrected.
   */
  private lostResult(
    slot: number,
    traceId: string,
    first: number,
    last: number,
    spanId: string,
    extra: Partial<Finding>,
  ): void {
    const table = this.table;
    if (table.wasReported(slot, FindingKind.LOST_RESULT) || table.hasTerminal(slot)) return;
    table.ensureCold(slot);
    table.markReported(slot, FindingKind.LOST_RESULT);
    table.write(slot, 'lostAt', last);
    this.emit(slot, FindingKind.LOST_RESULT, traceId, first, last, [spanId], extra);
    this.correctContinuation(slot, traceId);
  }

  /** A resume the instrumentation decided at the request's end: it replayed messages, not the result. */
  private lostOnPartialReplay(slot: number, span: SpanRecord, time: number): void {
    const evidence = span.attributes[ATTR_MCP_RESUME_EVIDENCE];
    this.lostResult(slot, span.traceId, time, Math.max(time, span.endTimeUnixMs), span.spanId, {
      recovery: RequestRecovery.RESUMED,
      outcome: ResumeOutcome.PARTIAL_REPLAY,
      request_end: evidence === ResumeEvidence.DEADLINE ? ErrorType.TIMEOUT : ErrorType.ABORTED,
    });
  }

  /** A resume counted as `continuation`: kept (the latest), in case its request turns out to have lost its result. */
  private countedContinuation(slot: number, span: SpanRecord, hi: number, lo: number, time: number): void {
    const table = this.table;
    if (!(table.read(slot, 'countedContinuationAt') > time)) {
      table.write(slot, 'countedContinuationAt', time);
      table.writeSpan(slot, 'countedContinuationSpan', hi, lo);
    }
    this.correctContinuation(slot, span.traceId);
  }

  /**
   * outcome_corrected: a resume counted as `continuation` before its request ended without its result
   * (lost_result, not retracted) was a partial replay. Once per request, whichever of the two came first.
   */
  private correctContinuation(slot: number, traceId: string): void {
    const table = this.table;
    const at = table.read(slot, 'countedContinuationAt');
    if (
      !table.wasReported(slot, FindingKind.LOST_RESULT) ||
      table.wasRetracted(slot, FindingKind.LOST_RESULT) ||
      !(at <= table.read(slot, 'lostAt')) ||
      table.read(slot, 'correctedAt') >= 0
    )
      return;
    table.write(slot, 'correctedAt', at);
    this.emit(
      slot,
      FindingKind.LOST_RESULT,
      traceId,
      at,
      table.read(slot, 'lostAt'),
      [table.readSpan(slot, 'countedContinuationSpan')!],
      { outcome: ResumeOutcome.PARTIAL_REPLAY },
      FindingRecord.OUTCOME_CORRECTED,
    );
  }

  /**
   * lost_result, 2026-07-28 era: a client request span ended `stream_broken` (its stream ended before its
   * result; nothing resumes in this era). Kept by its trace beside the re-issues: a re-issue of it that is
   * already known means the client recovered it (no finding); one that comes later retracts it.
   */
  private lostResultOfBrokenStream(span: SpanRecord): void {
    if (span.traceId.length !== 32 || span.spanId.length !== 16 || !(span.startTimeUnixMs >= 0)) return;
    if (!(span.endTimeUnixMs >= span.startTimeUnixMs)) return;
    const entry = this.reissueEntry(span.traceId, span.endTimeUnixMs);
    if (entry.service >= 0 || (entry.flags & LOST) !== 0) return;
    const attrs = span.attributes;
    const req = attrs[ATTR_JSONRPC_REQUEST_ID];
    const session = attrs[ATTR_MCP_SESSION_ID];
    entry.flags |= LOST;
    entry.lostService = this.services.idOf(span.service || UNKNOWN_SERVICE);
    entry.lostRequestId = typeof req === 'string' ? req : typeof req === 'number' ? String(req) : '';
    entry.lostSpanId = span.spanId;
    entry.lostStart = span.startTimeUnixMs;
    entry.lostEnd = span.endTimeUnixMs;
    this.onFinding?.({
      kind: FindingKind.LOST_RESULT,
      service: this.services.keyOf(entry.lostService)!,
      session_id: typeof session === 'string' ? session : '',
      request_id: entry.lostRequestId,
      trace_id: span.traceId,
      first_time_unix_ms: entry.lostStart,
      last_time_unix_ms: entry.lostEnd,
      span_ids: [span.spanId],
      recovery: RequestRecovery.NOT_REISSUED,
      request_end: ErrorType.STREAM_BROKEN,
    });
  }

  /** The broken first attempt's lost_result is retracted by its re-issue: the client recovered the call. */
  private retractLostByReissue(firstTrace: string, entry: Reissue): void {
    if ((entry.flags & LOST) === 0 || (entry.flags & LOST_RETRACTED) !== 0) return;
    entry.flags |= LOST_RETRACTED;
    this.onFinding?.({
      kind: FindingKind.LOST_RESULT,
      record: FindingRecord.RETRACTION,
      service: this.services.keyOf(entry.lostService)!,
      session_id: '',
      request_id: entry.lostRequestId,
      trace_id: entry.traceId,
      first_time_unix_ms: entry.lostEnd,
      last_time_unix_ms: entry.start,
      span_ids: [entry.spanId],
      first_trace_id: firstTrace,
    });
  }

  /**
   * Retraction: a continuation at `time` (or a terminal at any time) shows the request alive, which
   * contradicts the ambiguous_empty_replay and cursor_lost findings reported before it. A terminal also
   * contradicts a lost_result: the result came after all.
   */
  private retractFailedResumption(slot: number, span: SpanRecord, time: number, terminal: boolean): void {
    const table = this.table;
    if (
      table.wasReported(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY) &&
      !table.wasRetracted(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY) &&
      (terminal || time >= table.emptyReplayAt(slot))
    ) {
      table.markRetracted(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY);
      this.emit(
        slot,
        FindingKind.AMBIGUOUS_EMPTY_REPLAY,
        span.traceId,
        table.emptyReplayAt(slot),
        time,
        [span.spanId],
        undefined,
        FindingRecord.RETRACTION,
      );
    }
    if (
      table.wasReported(slot, FindingKind.CURSOR_LOST) &&
      !table.wasRetracted(slot, FindingKind.CURSOR_LOST) &&
      (terminal || time >= table.cursorLostAt(slot))
    ) {
      table.markRetracted(slot, FindingKind.CURSOR_LOST);
      this.emit(
        slot,
        FindingKind.CURSOR_LOST,
        span.traceId,
        table.cursorLostAt(slot),
        time,
        [span.spanId],
        undefined,
        FindingRecord.RETRACTION,
      );
    }
    if (
      terminal &&
      table.wasReported(slot, FindingKind.LOST_RESULT) &&
      !table.wasRetracted(slot, FindingKind.LOST_RESULT)
    ) {
      table.markRetracted(slot, FindingKind.LOST_RESULT);
      this.emit(
        slot,
        FindingKind.LOST_RESULT,
        span.traceId,
        table.read(slot, 'lostAt'),
        time,
        [span.spanId],
        undefined,
        FindingRecord.RETRACTION,
      );
    }
  }

  /** A terminal the instrumentation marked foreign and/or conflicting: the server's defect, never the client's. */
  private serverDefect(slot: number, span: SpanRecord, time: number, foreign: boolean, conflict: boolean): void {
    const attrs = span.attributes;
    const address = attrs[ATTR_SERVER_ADDRESS];
    const server = typeof address === 'string' && address.length > 0 ? address : UNKNOWN_SERVER;
    const stream = attrs[ATTR_MCP_STREAM_ID];
    const first = attrs[ATTR_MCP_TERMINAL_FIRST_STREAM_ID];
    const extra: Partial<Finding> = { server };
    if (typeof stream === 'string') extra.stream_id = stream;
    if (typeof first === 'string') extra.first_stream_id = first;
    if (foreign) this.foreignReplay(slot, span, time, server, extra);
    if (conflict) this.conflictingTerminal(slot, span, time, server, extra);
  }

  /** foreign_replay: a terminal replayed to a stream that had not carried the request. */
  private foreignReplay(slot: number, span: SpanRecord, time: number, server: string, extra: Partial<Finding>): void {
    const table = this.table;
    table.ensureCold(slot);
    const stream = span.attributes[ATTR_MCP_STREAM_ID];
    // Kept so that a later "duplicate" of this foreign terminal is not taken for the client's duplicate.
    if (typeof stream === 'string' && stream.length > 0) table.setForeignStream(slot, hash32(stream));
    this.reportServerDefect(slot, FindingKind.FOREIGN_REPLAY, server, span, time, extra);
  }

  /** conflicting_terminal: a second terminal of the request whose content differs from the first. */
  private conflictingTerminal(
    slot: number,
    span: SpanRecord,
    time: number,
    server: string,
    extra: Partial<Finding>,
  ): void {
    this.table.ensureCold(slot);
    this.reportServerDefect(slot, FindingKind.CONFLICTING_TERMINAL, server, span, time, extra);
  }

  /** Server defects are counted per server every time (metrics), and reported once per request and kind. */
  private reportServerDefect(
    slot: number,
    kind: FindingKind,
    server: string,
    span: SpanRecord,
    time: number,
    extra: Partial<Finding>,
  ): void {
    this.events?.serverDefect(kind, server);
    if (this.table.wasReported(slot, kind)) return;
    this.table.markReported(slot, kind);
    this.emit(slot, kind, span.traceId, time, time, [span.spanId], extra);
  }

  // ---------------------------------------------------------------------------------------------
  // Episodes and storms: how attempts are counted, withdrawn, and how a storm ends.
  // ---------------------------------------------------------------------------------------------

  /** The stream of a poll or continuation is no attempt; if its reattach span already counted it, that is undone. */
  private notAttempt(slot: number, span: SpanRecord): void {
    const stream = span.attributes[ATTR_MCP_STREAM_ID];
    if (typeof stream !== 'string' || stream.length === 0) return;
    const streamHash = hash32(stream);
    const key = this.table.incarnationKey(slot);
    if (this.quietStreams.add(streamHash, key) && this.attemptStreams.contains(streamHash, key))
      this.withdraw(slot, span.startTimeUnixMs);
  }

  /** Removes one counted attempt (the one nearest `time`) from the current episode, unless it is already a storm. */
  private withdraw(slot: number, time: number): void {
    const table = this.table;
    if (!(table.episodeAttemptCount(slot) > 0) || table.inStorm(slot)) return;
    table.withdrawAttempt(slot, time);
  }

  /** The server evicted the session on the episode's latest attempt: a storm in progress ends there. */
  private markEvicting(slot: number): void {
    const table = this.table;
    table.markLastAttemptEvicted(slot);
    if (table.inStorm(slot) && !table.stormEnded(slot)) this.endStorm(slot, table.lastAttemptAt(slot), true);
  }

  /** The storm ends at `at`; its storm_ended record follows once settleMs has passed (at once on eviction with no settle time). */
  private endStorm(slot: number, at: number, byEviction: boolean): void {
    this.table.endStorm(slot, at);
    if (byEviction && this.options.settleMs <= 0) this.finalize(slot);
  }

  /** Ends an open storm now; `forcedBy` says why (undefined: the window passed quietly). */
  private forceFinalize(slot: number, forcedBy: ForcedStormEnd | undefined): void {
    const table = this.table;
    if (!table.stormEnded(slot)) {
      if (forcedBy !== undefined) table.forceStormEnd(slot, forcedBy);
      this.endStorm(slot, table.lastAttemptAt(slot) + this.options.stormWindowMs, false);
    }
    if (this.openStorms.has(slot)) this.finalize(slot);
  }

  /** Starts a new episode after a quiet gap, reporting the end of the storm the old one was, if any. */
  private closeEpisode(slot: number): void {
    if (this.table.inStorm(slot)) this.forceFinalize(slot, undefined);
    else this.table.resetEpisode(slot);
  }

  /** A reported storm has ended (and settled): one storm_ended record, never a second signature. */
  private finalize(slot: number): void {
    const table = this.table;
    const attempts = table.episodeAttemptCount(slot);
    const endedBy = table.stormEndedBy(slot);
    const service = this.serviceOf(slot);
    this.events?.stormFinalized(service, attempts, endedBy);
    const first = table.firstAttemptAt(slot);
    const last = table.lastAttemptAt(slot);
    table.retireStorm(slot);
    this.openStorms.delete(slot);
    this.emit(
      slot,
      FindingKind.RECONNECT_STORM,
      table.lastAttemptTraceId(slot),
      first,
      last,
      uniq([table.firstAttemptSpanId(slot), table.lastAttemptSpanId(slot)]),
      // The whole storm's counts: duplicates too, so a reader sees one count per request at its end.
      {
        attempts,
        duplicates: table.duplicateDeliveries(slot) || undefined,
        ended_by: endedBy,
        ended_by_eviction: endedBy === StormEnd.EVICTED,
      },
      FindingRecord.STORM_ENDED,
    );
  }

  private serviceOf(slot: number): string {
    return this.services.keyOf(this.table.serviceId(slot))!;
  }

  private emit(
    slot: number,
    kind: FindingKind,
    traceId: string,
    first: number,
    last: number,
    spanIds: string[],
    extra?: Partial<Finding>,
    record?: FindingRecord,
  ): void {
    if (!this.onFinding) return;
    const finding: Finding = {
      kind,
      ...(record ? { record } : {}),
      service: this.serviceOf(slot),
      session_id: this.table.sessionId(slot),
      request_id: this.table.requestId(slot),
      trace_id: traceId,
      first_time_unix_ms: first,
      last_time_unix_ms: last,
      span_ids: spanIds,
      ...extra,
    };
    this.onFinding(finding);
  }
}

function uniq(ids: string[]): string[] {
  return [...new Set(ids)];
}

const HAS_FOREIGN = 1;
const HAS_CONFLICT = 2;
const HAS_DUPLICATE = 4;

const HAS_ALL = HAS_FOREIGN | HAS_CONFLICT | HAS_DUPLICATE;

/**
 * Which of a terminal's rarely present attributes its record may have (a clear bit: certainly absent),
 * in one pass over its keys. On the `{}` records the doors build, a lookup of a missing key is V8's
 * slowest property access (megamorphic, and it walks on to Object.prototype), and these three are
 * missing on almost every terminal: one enumeration of the record's few keys, compared by pointer,
 * costs far less than three missed lookups. A null-prototype record is a dictionary, where a missed
 * lookup is cheap and enumeration is not: it is read directly. Records are plain data (every key
 * enumerable); the caller still reads each value whose bit is set.
 */
function terminalMarks(attrs: SpanRecord['attributes']): number {
  if (Object.getPrototypeOf(attrs) === null) return HAS_ALL;
  let marks = 0;
  for (const key in attrs) {
    if (key === ATTR_MCP_TERMINAL_FOREIGN) marks |= HAS_FOREIGN;
    else if (key === ATTR_MCP_TERMINAL_CONFLICT) marks |= HAS_CONFLICT;
    else if (key === ATTR_MCP_TERMINAL_DUPLICATE) marks |= HAS_DUPLICATE;
  }
  return marks;
}

// What the guard stopped in the client (a resume it refused, a duplicate terminal it dropped before the
// application saw it) shows in the metrics, not in findings, so a protected client pages no one.

/** The guard dropped this terminal: a duplicate of one the application already had. */
function droppedByGuard(attrs: SpanRecord['attributes']): boolean {
  return attrs[ATTR_MCP_GUARD_ACTION] === GuardAction.DUPLICATE_TERMINAL_DROPPED;
}

/** The guard refused this resume in the client: it never left the process, so it is no attempt. */
function refusedByGuard(attrs: SpanRecord['attributes']): boolean {
  return attrs[ATTR_MCP_GUARD_ACTION] === GuardAction.RESUME_REFUSED;
}
