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
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_REQUEST_RECOVERY,
  GuardAction,
  RequestRecovery,
  SPAN_STREAM_RESUME,
  SpanReceivedResult,
  type ProtocolEra,
} from '@resumewatch/semconv';
import { RuleContext, uniq } from './context.js';
import { IdSet } from './id-set.js';
import { hash32, hexWord } from './ids.js';
import { DEFAULT_DETECTOR_OPTIONS, type DetectorInit, type DetectorOptions } from './options.js';
import { isEvidencedEmptyReplay, resumeOutcome, statusOf } from './outcome.js';
import { UNKNOWN_SERVICE } from './services.js';
import { ServerDefects } from './server-defects.js';
import { LostResults } from './lost.js';
import { ReissueRules } from './reissue.js';
import { OperationReader } from './operations.js';
import { NO_SLOT } from './slots.js';
import { RequestTable, type ForcedStormEnd } from './table.js';
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
  private readonly ctx: RuleContext;
  private readonly table: RequestTable;
  private readonly spanIds: IdSet;
  private readonly attemptStreams: IdSet;
  /** Streams whose resume was a poll or a continuation of an unfinished request: not attempts. */
  private readonly quietStreams: IdSet;
  private readonly openStorms = new Set<number>();
  private readonly defects: ServerDefects;
  private readonly reissue: ReissueRules;
  private readonly lost: LostResults;
  /** Reads each request span as the operation the metrics time (events.operation). */
  private readonly operations = new OperationReader();

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
    this.attemptStreams = new IdSet(options.dedupeCapacity);
    this.quietStreams = new IdSet(options.dedupeCapacity);
    this.defects = new ServerDefects(ctx);
    this.reissue = new ReissueRules(ctx);
    this.lost = new LostResults(ctx, this.reissue);
  }

  /** Feeds one span; any finding it completes is delivered to onFinding before this returns. */
  ingest(span: SpanRecord): SpanReceivedResult {
    const name = span.name;
    let type: number;
    if (name === SPAN_REQUEST_TERMINAL) type = TERMINAL;
    else if (name === SPAN_STREAM_RESUME) type = RESUME;
    else if (name === SPAN_SESSION_REATTACH) type = REATTACH;
    else {
      if (typeof span.attributes[ATTR_MCP_METHOD_NAME] !== 'string') return this.count(SpanReceivedResult.IGNORED);
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
      this.ctx.events?.reattach(service, typeof accepted === 'boolean' ? accepted : status >= 200 && status < 300);
      if (!hasReq || listening) return this.count(SpanReceivedResult.ACCEPTED);
      // The same status rule as a resume's (semconv): the server no longer holds the cursor or the session.
      reattachEvicts = isCursorGoneStatus(status);
    } else if (listening) {
      this.ctx.events?.listeningResume(
        service,
        refusedByGuard(attrs) ? ResumeOutcome.ERROR : resumeOutcome(attrs, statusOf(attrs)),
      );
      return this.count(SpanReceivedResult.ACCEPTED);
    }
    const slot = this.slotFor(
      this.ctx.services.idOf(service),
      session,
      typeof req === 'string' ? req : String(req as number),
    );
    this.table.seenAt(slot, span.endTimeUnixMs > this.ctx.now ? span.endTimeUnixMs : this.ctx.now);
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
    if (nowMs > this.ctx.now) this.ctx.now = nowMs;
    const table = this.table;
    const window = this.options.stormWindowMs;
    for (const slot of this.openStorms) {
      // A storm ends when its window passes with no attempt; it is reported once it has settled.
      const quietFrom = table.lastAttemptAt(slot) + window;
      if (!table.stormEnded(slot) && this.ctx.now > quietFrom) this.endStorm(slot, quietFrom, false);
      if (table.stormEnded(slot) && this.ctx.now >= table.stormEndAt(slot) + this.options.settleMs) this.finalize(slot);
    }
    // Idle requests leave in least-recently-touched order; a storm still inside its window ends as dropped.
    const horizon = this.ctx.now - this.options.retentionMs;
    while (table.oldest !== NO_SLOT && table.lastSeenAt(table.oldest) < horizon) {
      const oldest = table.oldest;
      this.releaseSlot(oldest, this.ctx.now > table.lastAttemptAt(oldest) + window ? undefined : StormEnd.DROPPED);
      this.ctx.counts.released++;
    }
    this.reissue.advance(horizon);
  }

  /** advance() to the clock's time. */
  tick(): void {
    this.advance(this.ctx.clock());
  }

  /** End of input: ends and reports every open storm now, whatever the windows say. */
  flush(): void {
    for (const slot of this.openStorms) this.forceFinalize(slot, StormEnd.SHUTDOWN);
    // No more evidence will come: a re-issue whose first attempt's fate is unknown is reported as such.
    this.reissue.flush();
  }

  stats(): DetectorStats {
    const counts = this.ctx.counts;
    return {
      tracked: this.table.size,
      evictions: counts.evictions,
      released: counts.released,
      activeStorms: this.activeStorms(),
      reissues: this.ctx.reissues.size,
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
      now: this.ctx.now,
      counts: this.ctx.counts,
      services: this.ctx.services,
      openStorms: this.openStorms,
      table: this.table,
      reissues: this.ctx.reissues,
      spanIds: this.spanIds,
      attemptStreams: this.attemptStreams,
      quietStreams: this.quietStreams,
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
      services: this.ctx.services,
      table: this.table,
      reissues: this.ctx.reissues,
      spanIds: this.spanIds,
      attemptStreams: this.attemptStreams,
      quietStreams: this.quietStreams,
    });
    this.ctx.now = loaded.now;
    this.ctx.counts = loaded.counts;
    for (const slot of loaded.openStorms) this.openStorms.add(slot);
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
      const service = this.ctx.serviceOf(slot);
      out.set(service, (out.get(service) ?? 0) + 1);
    }
    return out;
  }

  private count(r: SpanReceivedResult): SpanReceivedResult {
    this.ctx.counts.spans[r]++;
    this.ctx.events?.span(r);
    return r;
  }

  private slotFor(service: number, session: string, request: string): number {
    const table = this.table;
    const streamHash = RequestTable.hash(service, session, request);
    const found = table.find(streamHash, service, session, request);
    if (found !== NO_SLOT) return found;
    if (table.size >= table.maxRequests) {
      this.releaseSlot(table.oldest, StormEnd.DROPPED);
      this.ctx.counts.evictions++;
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
    if (foreign || conflict) return this.defects.terminal(slot, span, time, foreign, conflict);
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
    this.ctx.events?.terminal(service, hadTerminal || markedDuplicate);
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
    this.lost.retractFailedResumption(slot, span, time, true);
    this.duplicateTerminal(slot, span.traceId, duplicateTime, span.spanId);
    // Spans out of order: a resume already seen turns out to be later than this terminal.
    const resumeTime = table.latestResumeAt(slot);
    if (resumeTime >= table.firstTerminalAt(slot))
      this.resumeAfterTerminal(slot, span.traceId, table.firstTerminalAt(slot), resumeTime, undefined);
    this.reissue.completedAfterCancellation(slot, span.traceId);
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
    if (era !== undefined && this.ctx.events) this.countEra(span, era, version as string);
    const fate = attrs[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION];
    if (typeof fate === 'boolean') this.reissue.firstAttemptFate(span, fate);
    // Once per request, at its end: nothing per SSE event, whatever the metrics make of it.
    if (this.ctx.events?.operation) {
      const op = this.operations.read(span, span.service || UNKNOWN_SERVICE);
      if (op) this.ctx.events.operation(op);
    }
    if (span.kind !== SPAN_KIND_CLIENT) return;
    const reissueOf = attrs[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID];
    // A Multi Round-Trip round carries the answer the server asked for: the same call going on, not a re-issue.
    if (typeof reissueOf === 'string' && attrs[ATTR_MCP_REQUEST_INPUT_ROUND] !== true)
      this.reissue.reissued(span, reissueOf);
    const error = attrs[ATTR_ERROR_TYPE];
    if (typeof error !== 'string') return;
    const recovery = attrs[ATTR_MCP_REQUEST_RECOVERY];
    // What the client did about a stream that ended without the result, in the session era (the
    // instrumentation names none for a 2026-07-28 request, whose recovery is its re-issue).
    const sessionRecovery =
      typeof recovery === 'string' && RECOVERIES.has(recovery) && recovery !== RequestRecovery.NOT_REISSUED;
    // 2026-07-28 era: nothing resumes a broken stream; its end is the request's end. In the session era a
    // stream that broke with no event id is the same (recovery `no_event_id`): no cursor, nothing resumes it.
    if (error === ErrorType.STREAM_BROKEN && !sessionRecovery) return this.lost.ofBrokenStream(span);
    if (error !== ErrorType.STREAM_BROKEN && !REQUEST_GIVEN_UP_ERRORS.includes(error)) return;
    const session = attrs[ATTR_MCP_SESSION_ID];
    const req = attrs[ATTR_JSONRPC_REQUEST_ID];
    if (typeof req !== 'string' && typeof req !== 'number') return;
    // A session-less server (2025-11-25 and before: no Mcp-Session-Id): no session keys its request.
    if (typeof session !== 'string') {
      if (sessionRecovery && error !== ErrorType.CANCELLED)
        this.lost.withoutSession(span, recovery as RequestRecovery, error, req);
      return;
    }
    const service = this.ctx.services.idOf(span.service || UNKNOWN_SERVICE);
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
    if (cancelled) this.reissue.cancelled(slot, span);
    if (lost) this.lost.onRequestEnd(slot, span, recovery as RequestRecovery, error);
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
    if (answer === EraAnswer.ACCEPTED) this.ctx.events!.request(span.service || UNKNOWN_SERVICE, era);
    else if (answer === EraAnswer.REFUSED)
      this.ctx.events!.negotiationRefused(span.service || UNKNOWN_SERVICE, version);
  }

  /** A resume (GET with Last-Event-ID) of the request's stream. */
  private resume(slot: number, span: SpanRecord, hi: number, lo: number, time: number, service: string): void {
    const table = this.table;
    table.ensureCold(slot);
    const attrs = span.attributes;
    if (refusedByGuard(attrs)) {
      this.ctx.events?.resume(service, ResumeOutcome.ERROR);
      return;
    }
    const status = statusOf(attrs);
    const outcome = resumeOutcome(attrs, status);
    this.ctx.events?.resume(service, outcome);
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
        this.lost.retractFailedResumption(slot, span, time, false);
      }
      if (outcome === ResumeOutcome.CONTINUATION) this.lost.countedContinuation(slot, span, hi, lo, time);
      else if (outcome === ResumeOutcome.PARTIAL_REPLAY) this.lost.onPartialReplay(slot, span, time);
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
    this.ctx.emit(slot, FindingKind.DUPLICATE_TERMINAL, traceId, first, last, ids, { duplicates });
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
    this.ctx.emit(slot, FindingKind.RESUME_AFTER_TERMINAL, traceId, first, last, ids);
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
    this.ctx.emit(
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
    this.ctx.emit(slot, FindingKind.SIGNATURE, traceId, first, Math.max(stormLast, time), uniq(ids), {
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
    this.ctx.emit(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY, span.traceId, time, time, [span.spanId], {
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
    this.ctx.emit(slot, FindingKind.CURSOR_LOST, span.traceId, first, time, ids, { outcome, status_code: status });
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
    this.ctx.emit(
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
    const service = this.ctx.serviceOf(slot);
    this.ctx.events?.stormFinalized(service, attempts, endedBy);
    const first = table.firstAttemptAt(slot);
    const last = table.lastAttemptAt(slot);
    table.retireStorm(slot);
    this.openStorms.delete(slot);
    this.ctx.emit(
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
