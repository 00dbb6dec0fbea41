import { CappedLabels } from '@resumewatch/bounded';
import {
  ATTR_JSONRPC_REQUEST_ID,
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
  GuardAction,
  SPAN_STREAM_RESUME,
  SpanReceivedResult,
} from '@resumewatch/semconv';
import { IdSet } from './id-set.js';
import { hash32, hexWord, wordHex } from './ids.js';
import { DEFAULT_DETECTOR_OPTIONS, type DetectorInit, type DetectorOptions } from './options.js';
import { isEvidencedEmptyReplay, resumeOutcome, statusOf } from './outcome.js';
import { MAX_CORE_SERVICES, OTHER_SERVICE, UNKNOWN_SERVER, UNKNOWN_SERVICE } from './services.js';
import { RequestTable } from './table.js';
import { STATE_FORMAT, StateMismatchError, fieldsOf, loadFields, type DetectorState } from './state.js';
import type { DetectorEvents, DetectorStats, Finding, SpanRecord } from './types.js';

/** The three span kinds the core decides on (everything else is counted and ignored). */
const TERMINAL = 1;
const RESUME = 2;
const REATTACH = 3;

// What the detector has decided about a request so far: one bit each in `table.flags[slot]`, so that a
// tracked request costs four bytes of state here rather than an object. "Reported" bits make a rule
// fire once per request, whatever the order in which its spans arrive.
/** duplicate_terminal was reported. */
const DUPLICATE_REPORTED = 1;
/** resume_after_terminal was reported. */
const RESUME_AFTER_TERMINAL_REPORTED = 2;
/** The current episode of attempts reached the storm threshold and reconnect_storm was reported. */
const IN_STORM = 4;
/** The current storm has ended (quiet window, eviction or forced end); its storm_ended record waits for settleMs. */
const STORM_ENDED = 8;
/** The episode's latest attempt was answered 400/404/409: the server evicted the session, so the storm ends there. */
const LAST_ATTEMPT_EVICTED = 16;
/** signature (duplicate terminal and storm on one request) was reported. */
const SIGNATURE_REPORTED = 32;
/** ambiguous_empty_replay was reported. */
const EMPTY_REPLAY_REPORTED = 64;
/** cursor_lost was reported. */
const CURSOR_LOST_REPORTED = 128;
/** A storm of this request has been reported and has ended (its numbers are in stAttempts, stFirst, stEnd). */
const PAST_STORM_REPORTED = 256;
/** The ambiguous_empty_replay finding was withdrawn by a retraction record. */
const EMPTY_REPLAY_RETRACTED = 512;
/** The cursor_lost finding was withdrawn by a retraction record. */
const CURSOR_LOST_RETRACTED = 1024;
/** foreign_replay was reported (the metrics count every occurrence, the finding is once per request). */
const FOREIGN_REPLAY_REPORTED = 2048;
/** conflicting_terminal was reported (once per request, like foreign_replay). */
const CONFLICTING_TERMINAL_REPORTED = 4096;
/** Why an open storm was ended by force: the detector's input ended, or the request's state was dropped. */
const STORM_ENDED_BY_SHUTDOWN = 8192;
const STORM_ENDED_BY_DROP = 16384;

const NONE = -1;

/**
 * The detection core: spans in, findings out, one span at a time and without I/O.
 * Every decision is taken on event time (span start), so the order in which spans arrive does
 * not decide whether a finding exists; see the package README for the exact guarantees.
 *
 * Reading order: `ingest` classifies a span and finds its request's slot in the table; a span handler
 * (`terminal`, `resume`, `attempt`) updates the request's state; the rules (`duplicateTerminal`,
 * `resumeAfterTerminal`, `reconnectStorm`, `signature`, `emptyReplay`, `cursorLost`,
 * `retractFailedResumption`, `foreignReplay`, `conflictingTerminal`) decide and `emit` findings.
 * Per-request state is columns of typed arrays (see table.ts) rather than one object per request:
 * that is what keeps a tracked request near 163 bytes.
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
  private readonly onFinding: ((finding: Finding) => void) | undefined;
  private readonly events: DetectorEvents | undefined;
  private readonly clock: () => number;
  private now = -Infinity;
  /** The words of the span id being ingested (set by ingest before any handler runs). */
  private spanHi = 0;
  private spanLo = 0;
  private evictions = 0;
  private released = 0;
  private accepted = 0;
  private duplicate = 0;
  private invalid = 0;
  private ignored = 0;

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
    this.onFinding = init.onFinding;
    this.events = init.events;
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
      return this.count(
        typeof span.attributes[ATTR_MCP_METHOD_NAME] === 'string' ? SpanReceivedResult.ACCEPTED : SpanReceivedResult.IGNORED,
      );
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
    if (typeof session !== 'string' || session.length === 0 || (!hasReq && type === RESUME && !listening) || (!hasReq && type === TERMINAL)) {
      return this.count(SpanReceivedResult.IGNORED);
    }
    // The span id's two words are parsed once here and reused by whatever stores the id below.
    const hi = hexWord(span.spanId, 0);
    const lo = hexWord(span.spanId, 8);
    this.spanHi = hi;
    this.spanLo = lo;
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
      this.events?.listeningResume(service, refusedByGuard(attrs) ? ResumeOutcome.ERROR : resumeOutcome(attrs, statusOf(attrs)));
      return this.count(SpanReceivedResult.ACCEPTED);
    }
    const slot = this.slotFor(this.services.idOf(service), session, typeof req === 'string' ? req : String(req as number));
    const table = this.table;
    const seen = span.endTimeUnixMs > this.now ? span.endTimeUnixMs : this.now;
    if (!(table.seen[slot]! >= seen)) table.seen[slot] = seen;
    table.touch(slot);
    if (type === TERMINAL) this.terminal(slot, span, time, service);
    else if (type === RESUME) this.resume(slot, span, time, service);
    else this.attempt(slot, span, time, service, reattachEvicts);
    return this.count(SpanReceivedResult.ACCEPTED);
  }

  /** Moves the detector's time forward (Unix ms): ends quiet storms, reports settled ones, releases idle state. */
  advance(nowMs: number): void {
    if (nowMs > this.now) this.now = nowMs;
    const table = this.table;
    const window = this.options.stormWindowMs;
    for (const slot of this.openStorms) {
      const cold = table.cold[slot]!;
      // A storm ends when its window passes with no attempt; it is reported once it has settled.
      const quietFrom = table.epLast[cold]! + window;
      if (!table.has(slot, STORM_ENDED) && this.now > quietFrom) this.endStorm(slot, quietFrom, false);
      if (table.has(slot, STORM_ENDED) && this.now >= table.stEnd[cold]! + this.options.settleMs) this.finalize(slot);
    }
    // Idle requests leave in least-recently-touched order; a storm still inside its window ends as dropped.
    const horizon = this.now - this.options.retentionMs;
    while (table.head !== NONE && table.seen[table.head]! < horizon) {
      const head = table.head;
      this.releaseSlot(head, this.now > table.epLast[table.cold[head]!]! + window ? 0 : STORM_ENDED_BY_DROP);
      this.released++;
    }
  }


  /** advance() to the clock's time. */
  tick(): void {
    this.advance(this.clock());
  }

  /** End of input: ends and reports every open storm now, whatever the windows say. */
  flush(): void {
    for (const slot of this.openStorms) this.forceFinalize(slot, STORM_ENDED_BY_SHUTDOWN);
  }

  stats(): DetectorStats {
    return {
      tracked: this.table.size,
      evictions: this.evictions,
      released: this.released,
      activeStorms: this.activeStorms(),
      spans: {
        [SpanReceivedResult.ACCEPTED]: this.accepted,
        [SpanReceivedResult.DUPLICATE]: this.duplicate,
        [SpanReceivedResult.INVALID]: this.invalid,
        [SpanReceivedResult.IGNORED]: this.ignored,
      },
    };
  }

  /**
   * Everything the detector knows, as plain data (typed arrays shared, not copied), so that a door can
   * write it to a file and a restarted process can importState() it. See src/doors/state-file.ts.
   */
  exportState(): DetectorState {
    return {
      format: STATE_FORMAT,
      options: { ...this.options },
      now: this.now,
      counts: [this.evictions, this.released, this.accepted, this.duplicate, this.invalid, this.ignored],
      services: [...this.services.keys()],
      openStorms: [...this.openStorms],
      table: fieldsOf(this.table),
      spanIds: fieldsOf(this.spanIds),
      attemptStreams: fieldsOf(this.attemptStreams),
    };
  }

  /** Loads exportState() of a detector with the same options into this fresh one; StateMismatchError if it does not fit. */
  importState(state: DetectorState): void {
    if (state.format !== STATE_FORMAT) throw new StateMismatchError(`state format ${state.format}, expected ${STATE_FORMAT}`);
    for (const k of Object.keys(this.options) as (keyof DetectorOptions)[]) {
      if (state.options[k] !== this.options[k]) throw new StateMismatchError(`state was kept with ${k}=${state.options[k]}, this detector has ${this.options[k]}`);
    }
    if (this.table.size > 0 || this.services.size > 0) throw new StateMismatchError('importState needs a detector that has seen no span');
    loadFields(this.table, state.table, 'request table');
    loadFields(this.spanIds, state.spanIds, 'span ids');
    loadFields(this.attemptStreams, state.attemptStreams, 'attempt streams');
    this.now = state.now;
    [this.evictions, this.released, this.accepted, this.duplicate, this.invalid, this.ignored] = state.counts as [number, number, number, number, number, number];
    // Admitted in their order, the names get back their numbers, which the table's service column holds.
    for (const name of state.services) this.services.idOf(name);
    if (this.services.size !== state.services.length) throw new StateMismatchError(`state holds ${state.services.length} services, ${this.services.size} distinct within the cap`);
    for (const slot of state.openStorms) this.openStorms.add(slot);
    // The metrics of the new process count the storms still open.
    for (const slot of this.openStorms) if (!this.table.has(slot, STORM_ENDED)) this.events?.stormStarted(this.serviceOf(slot));
  }

  private activeStorms(): number {
    let n = 0;
    for (const slot of this.openStorms) if (!this.table.has(slot, STORM_ENDED)) n++;
    return n;
  }

  private count(r: SpanReceivedResult): SpanReceivedResult {
    if (r === SpanReceivedResult.ACCEPTED) this.accepted++;
    else if (r === SpanReceivedResult.DUPLICATE) this.duplicate++;
    else if (r === SpanReceivedResult.INVALID) this.invalid++;
    else this.ignored++;
    this.events?.span(r);
    return r;
  }

  private slotFor(service: number, session: string, request: string): number {
    const table = this.table;
    const streamHash = RequestTable.hash(service, session, request);
    const found = table.find(streamHash, service, session, request);
    if (found !== NONE) return found;
    if (table.size >= table.maxRequests) {
      this.releaseSlot(table.head, STORM_ENDED_BY_DROP);
      this.evictions++;
    }
    return table.create(streamHash, service, session, request);
  }

  private releaseSlot(slot: number, endFlag: number): void {
    if (this.openStorms.has(slot)) this.forceFinalize(slot, endFlag);
    this.table.release(slot);
  }

  // ---------------------------------------------------------------------------------------------
  // Span handlers: what each kind of span changes in its request's state, and which rules it runs.
  // ---------------------------------------------------------------------------------------------

  /** A terminal (result or error) delivered to the application for the request. */
  private terminal(slot: number, span: SpanRecord, time: number, service: string): void {
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
    // Read-only until a duplicate needs a cold row (most terminals are their request's only one).
    let cold = table.cold[slot]!;
    if (hadTerminal && droppedByGuard(attrs)) return;
    let markedDuplicate = (marks & HAS_DUPLICATE) !== 0 && attrs[ATTR_MCP_TERMINAL_DUPLICATE] === true;
    if (markedDuplicate && table.foreignStream[cold] !== 0) {
      // The "first" terminal it duplicates was a foreign one: the server's defect, already reported.
      const first = attrs[ATTR_MCP_TERMINAL_FIRST_STREAM_ID];
      if (typeof first === 'string' && hash32(first) === table.foreignStream[cold]) markedDuplicate = false;
    }
    table.termTotal[slot]!++;
    if (markedDuplicate) table.attrDups[slot]!++;
    this.events?.terminal(service, hadTerminal || markedDuplicate);
    let duplicateTime = time;
    if (!hadTerminal) {
      table.termT[slot] = time;
      table.termStream[slot] = streamHash;
      table.termOnFirst[slot] = 1;
      this.setCurrentSpan(table.termSpan, slot);
    } else if (streamHash === table.termStream[slot]) {
      // The same stream delivering it again (a replay to the same stream) is no duplicate by itself.
      table.termOnFirst[slot]!++;
      if (time < table.termT[slot]!) {
        table.termT[slot] = time;
        this.setCurrentSpan(table.termSpan, slot);
      }
    } else if (time < table.termT[slot]!) {
      // A delivery earlier than the one taken as first: that one becomes the duplicate.
      duplicateTime = table.termT[slot]!;
      cold = table.ensureCold(slot);
      if (!hasSpan(table.dupSpan, cold)) copySpan(table.dupSpan, cold, table.termSpan, slot);
      table.termT[slot] = time;
      table.termStream[slot] = streamHash;
      table.termOnFirst[slot] = 1;
      this.setCurrentSpan(table.termSpan, slot);
    } else if (!hasSpan(table.dupSpan, cold)) {
      cold = table.ensureCold(slot);
      setSpan(table.dupSpan, cold, span.spanId);
    }
    // The common case, a request's first terminal with nothing else known about it (no cold row: never
    // resumed, reattached or duplicated): no finding to retract, no duplicate, no resume before it.
    if (!hadTerminal && !markedDuplicate && cold === 0) return;
    // The request reached its terminal: no resume of it failed to get its result.
    this.retractFailedResumption(slot, span, time, true);
    this.duplicateTerminal(slot, span.traceId, duplicateTime, span.spanId);
    // Spans out of order: a resume already seen turns out to be later than this terminal.
    const resumeTime = table.resT[cold]!;
    if (resumeTime >= table.termT[slot]!) this.resumeAfterTerminal(slot, span.traceId, table.termT[slot]!, resumeTime, undefined);
  }

  /** A resume (GET with Last-Event-ID) of the request's stream. */
  private resume(slot: number, span: SpanRecord, time: number, service: string): void {
    const table = this.table;
    const cold = table.ensureCold(slot);
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
      if (observed) table.replayDups[cold]!++;
      else table.replayFirsts[cold]!++;
      this.duplicateTerminal(slot, span.traceId, time, span.spanId);
    }
    if (!(time <= table.resT[cold]!)) {
      table.resT[cold] = time;
      setSpan(table.resSpan, cold, span.spanId);
    }
    const haveTerminal = table.hasTerminal(slot);
    if (observed || (haveTerminal && table.termT[slot]! <= time)) {
      this.resumeAfterTerminal(slot, span.traceId, haveTerminal ? Math.min(table.termT[slot]!, time) : time, time, span.spanId);
    } else if (outcome === ResumeOutcome.CONTINUATION || outcome === ResumeOutcome.POLL) {
      // The request is alive: a poll or a continuation before its terminal is no attempt and no finding.
      if (outcome === ResumeOutcome.CONTINUATION) {
        if (!(table.contT[cold]! >= time)) table.contT[cold] = time;
        this.retractFailedResumption(slot, span, time, false);
      }
      this.notAttempt(slot, span);
      return;
    } else if (!haveTerminal && isFailedResumptionOutcome(outcome)) {
      if (outcome === ResumeOutcome.EMPTY_REPLAY) this.emptyReplay(slot, span, time, status);
      else this.cursorLost(slot, span, time, outcome, status);
    }
    this.attempt(slot, span, time, service, isFailedResumptionOutcome(outcome));
  }

  /**
   * One reattach/resume attempt of the request, counted into its current episode; attempts are distinct
   * new streams, so the two spans of one GET count once. `evicts`: the server answered 400/404/409, so
   * the session (and the storm, if this episode is one) ends with this attempt.
   */
  private attempt(slot: number, span: SpanRecord, time: number, service: string, evicts: boolean): void {
    if (refusedByGuard(span.attributes)) return;
    const table = this.table;
    const cold = table.ensureCold(slot);
    const stream = span.attributes[ATTR_MCP_STREAM_ID];
    let streamHash: number;
    if (typeof stream === 'string' && stream.length > 0) {
      streamHash = hash32(stream);
      const key = this.attemptKey(slot);
      if (this.quietStreams.contains(streamHash, key)) return;
      if (!this.attemptStreams.add(streamHash, key)) {
        // The second span of an attempt already counted: it can still tell that the server evicted it.
        if (evicts && table.epAttempts[cold]! > 0 && streamHash === table.epLastStream[cold]) this.markEvicting(slot);
        return;
      }
    } else {
      streamHash = hash32(span.spanId);
    }
    let flags = table.flags[slot]!;
    // An attempt inside a storm already reported and ended belongs to that storm, not to a new one.
    if (!(flags & IN_STORM) && time <= table.stEnd[cold]!) return;
    const window = this.options.stormWindowMs;
    if (table.epAttempts[cold]! > 0) {
      if (time > table.epLast[cold]! + window) this.closeEpisode(slot);
      else if (time < table.epFirst[cold]! - window) return;
    }
    table.epAttempts[cold]!++;
    if (!(time >= table.epFirst[cold]!)) {
      table.epFirst[cold] = time;
      setSpan(table.epFirstSpan, cold, span.spanId);
    }
    flags = table.flags[slot]!;
    if (!(time < table.epLast[cold]!)) {
      table.epLast[cold] = time;
      table.epLastStream[cold] = streamHash;
      setSpan(table.epLastSpan, cold, span.spanId);
      setTrace(table.epLastTrace, cold, span.traceId);
      flags = evicts ? flags | LAST_ATTEMPT_EVICTED : flags & ~LAST_ATTEMPT_EVICTED;
      if (flags & STORM_ENDED && !evicts) {
        // A later attempt: the storm did not end where it seemed to.
        flags &= ~STORM_ENDED;
        table.stEnd[cold] = NaN;
        this.events?.stormStarted(service);
      }
      table.flags[slot] = flags;
    }
    table.addAttemptTime(cold, time);
    if (!(flags & IN_STORM)) this.reconnectStorm(slot, span, time, service);
    if (table.has(slot, IN_STORM) && table.has(slot, LAST_ATTEMPT_EVICTED) && !table.has(slot, STORM_ENDED)) {
      this.endStorm(slot, table.epLast[cold]!, true);
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
    const cold = table.cold[slot]!;
    if (table.has(slot, DUPLICATE_REPORTED)) return;
    const duplicates = this.duplicates(slot);
    if (duplicates < 1) return;
    table.mark(slot, DUPLICATE_REPORTED);
    const haveTerminal = table.hasTerminal(slot);
    const first = haveTerminal ? Math.min(table.termT[slot]!, time) : time;
    const last = haveTerminal ? Math.max(table.termT[slot]!, time) : time;
    const ids: string[] = [];
    if (haveTerminal) ids.push(spanHex(table.termSpan, slot));
    const duplicateSpan = hasSpan(table.dupSpan, cold) ? spanHex(table.dupSpan, cold) : spanId;
    if (!ids.includes(duplicateSpan)) ids.push(duplicateSpan);
    this.emit(slot, FindingKind.DUPLICATE_TERMINAL, traceId, first, last, ids, { duplicates });
    // A storm was reported before any duplicate had arrived: the pattern is complete now.
    this.signature(slot, traceId, last);
  }

  /**
   * resume_after_terminal: a resume of a request whose terminal had been delivered (by event time, or
   * as the instrumentation observed it). `resumeSpanId` undefined: the latest resume stored in the table.
   */
  private resumeAfterTerminal(slot: number, traceId: string, first: number, last: number, resumeSpanId: string | undefined): void {
    const table = this.table;
    if (table.has(slot, RESUME_AFTER_TERMINAL_REPORTED)) return;
    table.mark(slot, RESUME_AFTER_TERMINAL_REPORTED);
    const resumeSpan = resumeSpanId ?? spanHex(table.resSpan, table.cold[slot]!);
    const ids = table.hasTerminal(slot) ? [spanHex(table.termSpan, slot), resumeSpan] : [resumeSpan];
    this.emit(slot, FindingKind.RESUME_AFTER_TERMINAL, traceId, first, last, ids);
  }

  /**
   * reconnect_storm: `stormThreshold` attempts of one episode within `stormWindowMs`. The ring holds the
   * threshold latest attempt times, so its span is the tightest window of that many attempts.
   */
  private reconnectStorm(slot: number, span: SpanRecord, time: number, service: string): void {
    const table = this.table;
    const cold = table.cold[slot]!;
    const oldest = table.oldestRingTime(cold);
    const newest = table.newestRingTime(cold);
    if (!(newest - oldest <= this.options.stormWindowMs)) return;
    table.mark(slot, IN_STORM);
    this.openStorms.add(slot);
    this.events?.stormStarted(service);
    this.emit(slot, FindingKind.RECONNECT_STORM, span.traceId, oldest, newest, uniq([spanHex(table.epFirstSpan, cold), span.spanId]), {
      attempts: table.epAttempts[cold]!,
    });
    // Duplicates were delivered before the storm was complete: the pattern is complete now.
    this.signature(slot, span.traceId, time);
  }

  /**
   * signature: the seed pattern, reported once as soon as both halves are known (a duplicate terminal on a
   * distinct stream, and a reported storm, current or ended), in whichever order they were learnt.
   */
  private signature(slot: number, traceId: string, time: number): void {
    const table = this.table;
    const cold = table.cold[slot]!;
    const flags = table.flags[slot]!;
    if (flags & SIGNATURE_REPORTED || !(flags & (IN_STORM | PAST_STORM_REPORTED))) return;
    const duplicates = this.duplicates(slot);
    if (duplicates < 1) return;
    table.flags[slot] = flags | SIGNATURE_REPORTED;
    const current = (flags & IN_STORM) !== 0;
    const stormFirst = current ? table.epFirst[cold]! : table.stFirst[cold]!;
    const stormLast = current ? table.epLast[cold]! : table.stEnd[cold]!;
    const first = table.hasTerminal(slot) ? Math.min(table.termT[slot]!, stormFirst) : stormFirst;
    const ids = [spanHex(table.epFirstSpan, cold), spanHex(table.epLastSpan, cold)];
    if (hasSpan(table.dupSpan, cold)) ids.unshift(spanHex(table.dupSpan, cold));
    if (table.hasTerminal(slot)) ids.unshift(spanHex(table.termSpan, slot));
    this.emit(slot, FindingKind.SIGNATURE, traceId, first, Math.max(stormLast, time), uniq(ids), {
      duplicates,
      attempts: current ? table.epAttempts[cold]! : table.stAttempts[cold]!,
    });
  }

  /**
   * ambiguous_empty_replay: an evidenced empty replay of a request with no terminal and no continuation
   * at or after it, by event time. Withdrawn by retractFailedResumption if the request turns out alive.
   */
  private emptyReplay(slot: number, span: SpanRecord, time: number, status: number): void {
    const table = this.table;
    const cold = table.ensureCold(slot);
    if (table.has(slot, EMPTY_REPLAY_REPORTED) || table.contT[cold]! >= time || !isEvidencedEmptyReplay(span.attributes, span.kind)) return;
    table.mark(slot, EMPTY_REPLAY_REPORTED);
    table.emptyT[cold] = time;
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
  private cursorLost(slot: number, span: SpanRecord, time: number, outcome: ResumeOutcome, status: number): void {
    const table = this.table;
    const cold = table.ensureCold(slot);
    let first = time;
    const ids = [span.spanId];
    if (outcome === ResumeOutcome.CURSOR_REJECTED) {
      // Provisional: the server may still hold the dropped connection, and the client's next resume succeed.
      if (table.rejects[cold]!++ === 0) {
        table.rejT[cold] = time;
        setSpan(table.rejSpan, cold, span.spanId);
        return;
      }
      const earlier = table.rejT[cold]!;
      first = Math.min(earlier, time);
      if (earlier <= time) ids.unshift(spanHex(table.rejSpan, cold));
      else ids.push(spanHex(table.rejSpan, cold));
      time = Math.max(earlier, time);
    }
    if (table.has(slot, CURSOR_LOST_REPORTED) || table.contT[cold]! >= time) return;
    table.mark(slot, CURSOR_LOST_REPORTED);
    table.lostT[cold] = time;
    this.emit(slot, FindingKind.CURSOR_LOST, span.traceId, first, time, ids, { outcome, status_code: status });
  }

  /**
   * Retraction: a continuation at `time` (or a terminal at any time) shows the request alive, which
   * contradicts the ambiguous_empty_replay and cursor_lost findings reported before it.
   */
  private retractFailedResumption(slot: number, span: SpanRecord, time: number, terminal: boolean): void {
    const table = this.table;
    const cold = table.cold[slot]!;
    const flags = table.flags[slot]!;
    if (flags & EMPTY_REPLAY_REPORTED && !(flags & EMPTY_REPLAY_RETRACTED) && (terminal || time >= table.emptyT[cold]!)) {
      table.mark(slot, EMPTY_REPLAY_RETRACTED);
      const reported = table.emptyT[cold]!;
      this.emit(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY, span.traceId, reported, time, [span.spanId], undefined, FindingRecord.RETRACTION);
    }
    if (flags & CURSOR_LOST_REPORTED && !(flags & CURSOR_LOST_RETRACTED) && (terminal || time >= table.lostT[cold]!)) {
      table.mark(slot, CURSOR_LOST_RETRACTED);
      this.emit(slot, FindingKind.CURSOR_LOST, span.traceId, table.lostT[cold]!, time, [span.spanId], undefined, FindingRecord.RETRACTION);
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
    const cold = table.ensureCold(slot);
    const stream = span.attributes[ATTR_MCP_STREAM_ID];
    // Kept so that a later "duplicate" of this foreign terminal is not taken for the client's duplicate.
    if (typeof stream === 'string' && stream.length > 0) table.foreignStream[cold] = hash32(stream);
    this.reportServerDefect(slot, FindingKind.FOREIGN_REPLAY, FOREIGN_REPLAY_REPORTED, server, span, time, extra);
  }

  /** conflicting_terminal: a second terminal of the request whose content differs from the first. */
  private conflictingTerminal(slot: number, span: SpanRecord, time: number, server: string, extra: Partial<Finding>): void {
    this.table.ensureCold(slot);
    this.reportServerDefect(slot, FindingKind.CONFLICTING_TERMINAL, CONFLICTING_TERMINAL_REPORTED, server, span, time, extra);
  }

  /** Server defects are counted per server every time (metrics), and reported once per request and kind. */
  private reportServerDefect(
    slot: number,
    kind: FindingKind,
    flag: number,
    server: string,
    span: SpanRecord,
    time: number,
    extra: Partial<Finding>,
  ): void {
    this.events?.serverDefect(kind, server);
    if (this.table.has(slot, flag)) return;
    this.table.mark(slot, flag);
    this.emit(slot, kind, span.traceId, time, time, [span.spanId], extra);
  }

  // ---------------------------------------------------------------------------------------------
  // Episodes and storms: how attempts are counted, withdrawn, and how a storm ends.
  // ---------------------------------------------------------------------------------------------

  /** Terminals beyond the first, by whichever of the three evidences counts most. */
  private duplicates(slot: number): number {
    const table = this.table;
    const cold = table.cold[slot]!;
    const replays = table.replayDups[cold]! + Math.max(0, table.replayFirsts[cold]! - 1);
    return Math.max(table.termTotal[slot]! - table.termOnFirst[slot]!, table.attrDups[slot]!, replays);
  }

  /** Key of the request's attempt streams; the slot's serial keeps a reused slot from inheriting them. */
  private attemptKey(slot: number): number {
    const table = this.table;
    return Math.imul(table.hashes[slot]!, 0x9e3779b1) ^ table.serial[slot]!;
  }

  /** The stream of a poll or continuation is no attempt; if its reattach span already counted it, that is undone. */
  private notAttempt(slot: number, span: SpanRecord): void {
    const stream = span.attributes[ATTR_MCP_STREAM_ID];
    if (typeof stream !== 'string' || stream.length === 0) return;
    const streamHash = hash32(stream);
    const key = this.attemptKey(slot);
    if (this.quietStreams.add(streamHash, key) && this.attemptStreams.contains(streamHash, key)) this.withdraw(slot, span.startTimeUnixMs);
  }

  /** Removes one counted attempt (the one nearest `time`) from the current episode, unless it is already a storm. */
  private withdraw(slot: number, time: number): void {
    const table = this.table;
    const cold = table.ensureCold(slot);
    if (!(table.epAttempts[cold]! > 0) || table.has(slot, IN_STORM)) return;
    table.epAttempts[cold]!--;
    table.removeAttemptTimeNear(cold, time);
  }

  /** The server evicted the session on the episode's latest attempt: a storm in progress ends there. */
  private markEvicting(slot: number): void {
    const table = this.table;
    const cold = table.cold[slot]!;
    table.mark(slot, LAST_ATTEMPT_EVICTED);
    if (table.has(slot, IN_STORM) && !table.has(slot, STORM_ENDED)) this.endStorm(slot, table.epLast[cold]!, true);
  }

  /** The storm ends at `at`; its storm_ended record follows once settleMs has passed (at once on eviction with no settle time). */
  private endStorm(slot: number, at: number, byEviction: boolean): void {
    const table = this.table;
    const cold = table.ensureCold(slot);
    table.mark(slot, STORM_ENDED);
    table.stEnd[cold] = at;
    this.events?.stormEnded(this.serviceOf(slot));
    if (byEviction && this.options.settleMs <= 0) this.finalize(slot);
  }

  /** Ends an open storm now; `endFlag` says why (0: the window passed quietly). */
  private forceFinalize(slot: number, endFlag: number): void {
    const table = this.table;
    const cold = table.cold[slot]!;
    if (!table.has(slot, STORM_ENDED)) {
      table.mark(slot, endFlag);
      this.endStorm(slot, table.epLast[cold]! + this.options.stormWindowMs, false);
    }
    if (this.openStorms.has(slot)) this.finalize(slot);
  }

  /** Starts a new episode after a quiet gap, reporting the end of the storm the old one was, if any. */
  private closeEpisode(slot: number): void {
    if (this.table.has(slot, IN_STORM)) this.forceFinalize(slot, 0);
    else this.resetEpisode(slot);
  }

  /** A reported storm has ended (and settled): one storm_ended record, never a second signature. */
  private finalize(slot: number): void {
    const table = this.table;
    const cold = table.ensureCold(slot);
    const attempts = table.epAttempts[cold]!;
    const flags = table.flags[slot]!;
    const endedBy =
      flags & LAST_ATTEMPT_EVICTED
        ? StormEnd.EVICTED
        : flags & STORM_ENDED_BY_SHUTDOWN
          ? StormEnd.SHUTDOWN
          : flags & STORM_ENDED_BY_DROP
            ? StormEnd.DROPPED
            : StormEnd.QUIET;
    const service = this.serviceOf(slot);
    this.events?.stormFinalized(service, attempts, endedBy);
    const first = table.epFirst[cold]!;
    const last = table.epLast[cold]!;
    this.resetEpisode(slot);
    // Kept after the episode is reset: a later duplicate still completes the signature with this storm.
    table.stEnd[cold] = last;
    table.stFirst[cold] = first;
    table.stAttempts[cold] = attempts;
    table.unmark(slot, STORM_ENDED_BY_SHUTDOWN | STORM_ENDED_BY_DROP);
    table.mark(slot, PAST_STORM_REPORTED);
    this.openStorms.delete(slot);
    this.emit(
      slot,
      FindingKind.RECONNECT_STORM,
      traceHex(table.epLastTrace, cold),
      first,
      last,
      uniq([spanHex(table.epFirstSpan, cold), spanHex(table.epLastSpan, cold)]),
      // The whole storm's counts: duplicates too, so a reader sees one count per request at its end.
      { attempts, duplicates: this.duplicates(slot) || undefined, ended_by: endedBy, ended_by_eviction: endedBy === StormEnd.EVICTED },
      FindingRecord.STORM_ENDED,
    );
  }

  private resetEpisode(slot: number): void {
    const table = this.table;
    const cold = table.ensureCold(slot);
    table.epAttempts[cold] = 0;
    table.epFirst[cold] = NaN;
    table.epLast[cold] = NaN;
    table.unmark(slot, IN_STORM | STORM_ENDED | LAST_ATTEMPT_EVICTED);
    table.clearAttemptTimes(cold);
  }

  /** Stores the id of the span being ingested at `row` of a two-word span-id column. */
  private setCurrentSpan(column: Uint32Array, row: number): void {
    column[row * 2] = this.spanHi;
    column[row * 2 + 1] = this.spanLo;
  }

  private serviceOf(slot: number): string {
    return this.services.keyOf(this.table.svc[slot]!)!;
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
      session_id: this.table.sessions[slot]!,
      request_id: this.table.requests[slot]!,
      trace_id: traceId,
      first_time_unix_ms: first,
      last_time_unix_ms: last,
      span_ids: spanIds,
      ...extra,
    };
    this.onFinding(finding);
  }
}

function setSpan(column: Uint32Array, slot: number, hex: string): void {
  column[slot * 2] = hexWord(hex, 0);
  column[slot * 2 + 1] = hexWord(hex, 8);
}
function hasSpan(column: Uint32Array, slot: number): boolean {
  return column[slot * 2] !== 0 || column[slot * 2 + 1] !== 0;
}
function copySpan(to: Uint32Array, toRow: number, from: Uint32Array, fromRow: number): void {
  to[toRow * 2] = from[fromRow * 2]!;
  to[toRow * 2 + 1] = from[fromRow * 2 + 1]!;
}
function spanHex(column: Uint32Array, slot: number): string {
  return wordHex(column[slot * 2]!) + wordHex(column[slot * 2 + 1]!);
}
function setTrace(column: Uint32Array, slot: number, hex: string): void {
  for (let i = 0; i < 4; i++) column[slot * 4 + i] = hexWord(hex, i * 8);
}
function traceHex(column: Uint32Array, slot: number): string {
  let out = '';
  for (let i = 0; i < 4; i++) out += wordHex(column[slot * 4 + i]!);
  return out;
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
