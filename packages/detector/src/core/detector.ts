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
import { OTHER_SERVICE, UNKNOWN_SERVER, UNKNOWN_SERVICE } from './services.js';
import { RequestTable } from './table.js';
import { STATE_FORMAT, StateMismatchError, fieldsOf, loadFields, type DetectorState } from './state.js';
import type { DetectorEvents, DetectorStats, Finding, SpanRecord } from './types.js';

const TERMINAL = 1;
const RESUME = 2;
const REATTACH = 3;

const F_DUP = 1;
const F_RAT = 2;
const F_STORM = 4;
const F_ENDED = 8;
const F_EVICT_LAST = 16;
const F_SIG = 32;
const F_EMPTY = 64;
const F_LOST = 128;
/** A storm of this request has been reported and has ended (its numbers are in stAttempts, stFirst, stEnd). */
const F_STORMED = 256;
const F_EMPTY_RETRACTED = 512;
const F_LOST_RETRACTED = 1024;
const F_FOREIGN = 2048;
const F_CONFLICT = 4096;
/** Why an open storm was ended by force: the detector's input ended, or the request's state was dropped. */
const F_END_SHUTDOWN = 8192;
const F_END_DROPPED = 16384;

const NONE = -1;
const MAX_SERVICES = 4096;

/**
 * The detection core: spans in, findings out, one span at a time and without I/O.
 * Every decision is taken on event time (span start), so the order in which spans arrive does
 * not decide whether a finding exists; see the package README for the exact guarantees.
 */
export class Detector {
  readonly options: DetectorOptions;
  private readonly table: RequestTable;
  private readonly spanIds: IdSet;
  private readonly attemptStreams: IdSet;
  /** Streams whose resume was a poll or a continuation of an unfinished request: not attempts. */
  private readonly quietStreams: IdSet;
  private readonly serviceIndex = new Map<string, number>();
  private readonly serviceNames: string[] = [];
  private readonly openStorms = new Set<number>();
  private readonly onFinding: ((f: Finding) => void) | undefined;
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
    const o: DetectorOptions = { ...DEFAULT_DETECTOR_OPTIONS };
    for (const k of Object.keys(DEFAULT_DETECTOR_OPTIONS) as (keyof DetectorOptions)[]) {
      const v = init[k];
      if (v !== undefined) o[k] = v;
    }
    if (!(o.stormThreshold >= 1)) throw new RangeError('stormThreshold must be at least 1');
    this.options = o;
    this.table = new RequestTable(Math.max(1, o.maxRequests), Math.floor(o.stormThreshold));
    this.spanIds = new IdSet(o.dedupeCapacity);
    this.attemptStreams = new IdSet(o.dedupeCapacity);
    this.quietStreams = new IdSet(o.dedupeCapacity);
    this.onFinding = init.onFinding;
    this.events = init.events;
    this.clock = init.clock ?? Date.now;
  }

  /** Feeds one span; any finding it completes is delivered to onFinding before this returns. */
  ingest(s: SpanRecord): SpanReceivedResult {
    const name = s.name;
    let type: number;
    if (name === SPAN_REQUEST_TERMINAL) type = TERMINAL;
    else if (name === SPAN_STREAM_RESUME) type = RESUME;
    else if (name === SPAN_SESSION_REATTACH) type = REATTACH;
    else {
      return this.count(
        typeof s.attributes[ATTR_MCP_METHOD_NAME] === 'string' ? SpanReceivedResult.ACCEPTED : SpanReceivedResult.IGNORED,
      );
    }
    const t = s.startTimeUnixMs;
    if (s.spanId.length !== 16 || s.traceId.length !== 32 || !(t >= 0) || !(s.endTimeUnixMs >= 0)) {
      return this.count(SpanReceivedResult.INVALID);
    }
    const a = s.attributes;
    const session = a[ATTR_MCP_SESSION_ID];
    const req = a[ATTR_JSONRPC_REQUEST_ID];
    const hasReq = typeof req === 'string' ? req.length > 0 : typeof req === 'number';
    // A resume of the listening stream is no request's resume, even if a replayed terminal named one.
    const listening = type !== TERMINAL && a[ATTR_MCP_STREAM_KIND] === StreamKind.LISTENING;
    if (typeof session !== 'string' || session.length === 0 || (!hasReq && type === RESUME && !listening) || (!hasReq && type === TERMINAL)) {
      return this.count(SpanReceivedResult.IGNORED);
    }
    // The span id's two words are parsed once here and reused by whatever stores the id below.
    const hi = hexWord(s.spanId, 0);
    const lo = hexWord(s.spanId, 8);
    this.spanHi = hi;
    this.spanLo = lo;
    if (!this.spanIds.add(hi, lo)) return this.count(SpanReceivedResult.DUPLICATE);
    const service = s.service || UNKNOWN_SERVICE;
    let reattachEvicts = false;
    if (type === REATTACH) {
      const status = statusOf(a);
      const acc = a[ATTR_MCP_REATTACH_ACCEPTED];
      this.events?.reattach(service, typeof acc === 'boolean' ? acc : status >= 200 && status < 300);
      if (!hasReq || listening) return this.count(SpanReceivedResult.ACCEPTED);
      reattachEvicts = status === 400 || status === 404 || status === 409;
    } else if (listening) {
      this.events?.listeningResume(service, refusedByGuard(a) ? ResumeOutcome.ERROR : resumeOutcome(a, statusOf(a)));
      return this.count(SpanReceivedResult.ACCEPTED);
    }
    const slot = this.slotFor(this.serviceId(service), session, typeof req === 'string' ? req : String(req as number));
    const T = this.table;
    const seen = s.endTimeUnixMs > this.now ? s.endTimeUnixMs : this.now;
    if (!(T.seen[slot]! >= seen)) T.seen[slot] = seen;
    T.touch(slot);
    if (type === TERMINAL) this.terminal(slot, s, t, service);
    else if (type === RESUME) this.resume(slot, s, t, service);
    else this.attempt(slot, s, t, service, reattachEvicts);
    return this.count(SpanReceivedResult.ACCEPTED);
  }

  /** Moves the detector's time forward (Unix ms): ends quiet storms, reports settled ones, releases idle state. */
  advance(nowMs: number): void {
    if (nowMs > this.now) this.now = nowMs;
    const T = this.table;
    const w = this.options.stormWindowMs;
    for (const slot of this.openStorms) {
      const c = T.cold[slot]!;
      const f = T.flags[slot]!;
      if (!(f & F_ENDED) && this.now > T.epLast[c]! + w) this.endStorm(slot, T.epLast[c]! + w, false);
      if (T.flags[slot]! & F_ENDED && this.now >= T.stEnd[c]! + this.options.settleMs) this.finalize(slot);
    }
    const horizon = this.now - this.options.retentionMs;
    while (T.head !== NONE && T.seen[T.head]! < horizon) {
      const head = T.head;
      this.releaseSlot(head, this.now > T.epLast[T.cold[head]!]! + w ? 0 : F_END_DROPPED);
      this.released++;
    }
  }

  /** advance() to the clock's time. */
  tick(): void {
    this.advance(this.clock());
  }

  /** End of input: ends and reports every open storm now, whatever the windows say. */
  flush(): void {
    for (const slot of this.openStorms) this.forceFinalize(slot, F_END_SHUTDOWN);
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
      services: [...this.serviceNames],
      openStorms: [...this.openStorms],
      table: fieldsOf(this.table),
      spanIds: fieldsOf(this.spanIds),
      attemptStreams: fieldsOf(this.attemptStreams),
    };
  }

  /** Loads exportState() of a detector with the same options into this fresh one; StateMismatchError if it does not fit. */
  importState(s: DetectorState): void {
    if (s.format !== STATE_FORMAT) throw new StateMismatchError(`state format ${s.format}, expected ${STATE_FORMAT}`);
    for (const k of Object.keys(this.options) as (keyof DetectorOptions)[]) {
      if (s.options[k] !== this.options[k]) throw new StateMismatchError(`state was kept with ${k}=${s.options[k]}, this detector has ${this.options[k]}`);
    }
    if (this.table.size > 0 || this.serviceNames.length > 0) throw new StateMismatchError('importState needs a detector that has seen no span');
    loadFields(this.table, s.table, 'request table');
    loadFields(this.spanIds, s.spanIds, 'span ids');
    loadFields(this.attemptStreams, s.attemptStreams, 'attempt streams');
    this.now = s.now;
    [this.evictions, this.released, this.accepted, this.duplicate, this.invalid, this.ignored] = s.counts as [number, number, number, number, number, number];
    for (const name of s.services) {
      this.serviceIndex.set(name, this.serviceNames.length);
      this.serviceNames.push(name);
    }
    for (const slot of s.openStorms) this.openStorms.add(slot);
    // The metrics of the new process count the storms still open.
    for (const slot of this.openStorms) if (!(this.table.flags[slot]! & F_ENDED)) this.events?.stormStarted(this.serviceOf(slot));
  }

  private activeStorms(): number {
    let n = 0;
    for (const slot of this.openStorms) if (!(this.table.flags[slot]! & F_ENDED)) n++;
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
    const T = this.table;
    const h = RequestTable.hash(service, session, request);
    const found = T.find(h, service, session, request);
    if (found !== NONE) return found;
    if (T.size >= T.maxRequests) {
      this.releaseSlot(T.head, F_END_DROPPED);
      this.evictions++;
    }
    return T.create(h, service, session, request);
  }

  /** Services are interned to a small number; past MAX_SERVICES they share one overflow entry, `other`. */
  private serviceId(name: string): number {
    let id = this.serviceIndex.get(name);
    if (id !== undefined) return id;
    if (this.serviceNames.length >= MAX_SERVICES && name !== OTHER_SERVICE) return this.serviceId(OTHER_SERVICE);
    id = this.serviceNames.length;
    this.serviceNames.push(name);
    this.serviceIndex.set(name, id);
    return id;
  }

  private releaseSlot(slot: number, endFlag: number): void {
    if (this.openStorms.has(slot)) this.forceFinalize(slot, endFlag);
    this.table.release(slot);
  }

  private terminal(slot: number, s: SpanRecord, t: number, service: string): void {
    const T = this.table;
    const a = s.attributes;
    const marks = terminalMarks(a);
    const foreign = (marks & HAS_FOREIGN) !== 0 && a[ATTR_MCP_TERMINAL_FOREIGN] === true;
    const conflict = (marks & HAS_CONFLICT) !== 0 && a[ATTR_MCP_TERMINAL_CONFLICT] === true;
    // A server defect, guard or not: it never counts as the client's duplicate or resume after terminal.
    if (foreign || conflict) return this.serverDefect(slot, s, t, foreign, conflict);
    const stream = a[ATTR_MCP_STREAM_ID];
    const h = hash32(typeof stream === 'string' && stream.length > 0 ? stream : s.spanId);
    const had = T.termTotal[slot]! > 0;
    // Read-only until a duplicate needs a cold row (most terminals are their request's only one).
    let c = T.cold[slot]!;
    if (had && droppedByGuard(a)) return;
    let attrDup = (marks & HAS_DUPLICATE) !== 0 && a[ATTR_MCP_TERMINAL_DUPLICATE] === true;
    if (attrDup && T.foreignStream[c] !== 0) {
      // The "first" terminal it duplicates was a foreign one: the server's defect, already reported.
      const first = a[ATTR_MCP_TERMINAL_FIRST_STREAM_ID];
      if (typeof first === 'string' && hash32(first) === T.foreignStream[c]) attrDup = false;
    }
    T.termTotal[slot]!++;
    if (attrDup) T.attrDups[slot]!++;
    this.events?.terminal(service, had || attrDup);
    let dupTime = t;
    if (!had) {
      T.termT[slot] = t;
      T.termStream[slot] = h;
      T.termOnFirst[slot] = 1;
      this.setCurrentSpan(T.termSpan, slot);
    } else if (h === T.termStream[slot]) {
      T.termOnFirst[slot]!++;
      if (t < T.termT[slot]!) {
        T.termT[slot] = t;
        this.setCurrentSpan(T.termSpan, slot);
      }
    } else if (t < T.termT[slot]!) {
      // A delivery earlier than the one taken as first: that one becomes the duplicate.
      dupTime = T.termT[slot]!;
      c = T.ensureCold(slot);
      if (!hasSpan(T.dupSpan, c)) copySpan(T.dupSpan, c, T.termSpan, slot);
      T.termT[slot] = t;
      T.termStream[slot] = h;
      T.termOnFirst[slot] = 1;
      this.setCurrentSpan(T.termSpan, slot);
    } else if (!hasSpan(T.dupSpan, c)) {
      c = T.ensureCold(slot);
      setSpan(T.dupSpan, c, s.spanId);
    }
    // The common case, a request's first terminal with nothing else known about it (no cold row: never
    // resumed, reattached or duplicated): no finding to retract, no duplicate, no resume before it.
    if (!had && !attrDup && c === 0) return;
    // The request reached its terminal: no resume of it failed to get its result.
    this.retract(slot, s, t, true);
    this.checkDuplicate(slot, s.traceId, dupTime, s.spanId);
    const resT = T.resT[c]!;
    if (!(T.flags[slot]! & F_RAT) && resT >= T.termT[slot]!) {
      T.flags[slot]! |= F_RAT;
      this.emit(slot, FindingKind.RESUME_AFTER_TERMINAL, s.traceId, T.termT[slot]!, resT, [
        spanHex(T.termSpan, slot),
        spanHex(T.resSpan, c),
      ]);
    }
  }

  /** foreign_replay and conflicting_terminal: counted per server every time, reported once per request and kind. */
  private serverDefect(slot: number, s: SpanRecord, t: number, foreign: boolean, conflict: boolean): void {
    const T = this.table;
    const c = T.ensureCold(slot);
    const a = s.attributes;
    const address = a[ATTR_SERVER_ADDRESS];
    const server = typeof address === 'string' && address.length > 0 ? address : UNKNOWN_SERVER;
    const stream = a[ATTR_MCP_STREAM_ID];
    const first = a[ATTR_MCP_TERMINAL_FIRST_STREAM_ID];
    if (foreign && typeof stream === 'string' && stream.length > 0) T.foreignStream[c] = hash32(stream);
    const extra: Partial<Finding> = { server };
    if (typeof stream === 'string') extra.stream_id = stream;
    if (typeof first === 'string') extra.first_stream_id = first;
    if (foreign) this.defect(slot, FindingKind.FOREIGN_REPLAY, F_FOREIGN, server, s, t, extra);
    if (conflict) this.defect(slot, FindingKind.CONFLICTING_TERMINAL, F_CONFLICT, server, s, t, extra);
  }

  private defect(slot: number, kind: FindingKind, flag: number, server: string, s: SpanRecord, t: number, extra: Partial<Finding>): void {
    this.events?.serverDefect(kind, server);
    const T = this.table;
    if (T.flags[slot]! & flag) return;
    T.flags[slot]! |= flag;
    this.emit(slot, kind, s.traceId, t, t, [s.spanId], extra);
  }

  private resume(slot: number, s: SpanRecord, t: number, service: string): void {
    const T = this.table;
    const c = T.ensureCold(slot);
    const a = s.attributes;
    if (refusedByGuard(a)) {
      this.events?.resume(service, ResumeOutcome.ERROR);
      return;
    }
    const status = statusOf(a);
    const outcome = resumeOutcome(a, status);
    this.events?.resume(service, outcome);
    const observed = a[ATTR_MCP_REQUEST_TERMINAL_OBSERVED] === true;
    if (a[ATTR_MCP_RESUME_REPLAYED_TERMINAL] === true) {
      // A replayed terminal is a duplicate if one had been delivered before, or if it is not the first replay to deliver it.
      if (observed) T.replayDups[c]!++;
      else T.replayFirsts[c]!++;
      this.checkDuplicate(slot, s.traceId, t, s.spanId);
    }
    if (!(t <= T.resT[c]!)) {
      T.resT[c] = t;
      setSpan(T.resSpan, c, s.spanId);
    }
    const haveTerm = T.termTotal[slot]! > 0;
    const f = T.flags[slot]!;
    if (observed || (haveTerm && T.termT[slot]! <= t)) {
      if (!(f & F_RAT)) {
        T.flags[slot] = f | F_RAT;
        const ids = haveTerm ? [spanHex(T.termSpan, slot), s.spanId] : [s.spanId];
        this.emit(slot, FindingKind.RESUME_AFTER_TERMINAL, s.traceId, haveTerm ? Math.min(T.termT[slot]!, t) : t, t, ids);
      }
    } else if (outcome === ResumeOutcome.CONTINUATION || outcome === ResumeOutcome.POLL) {
      // The request is alive: a poll or a continuation before its terminal is no attempt and no finding.
      if (outcome === ResumeOutcome.CONTINUATION) {
        if (!(T.contT[c]! >= t)) T.contT[c] = t;
        this.retract(slot, s, t, false);
      }
      this.notAttempt(slot, s);
      return;
    } else if (!haveTerm && isFailedResumptionOutcome(outcome)) {
      this.failedResumption(slot, s, t, outcome, status);
    }
    this.attempt(slot, s, t, service, isFailedResumptionOutcome(outcome));
  }

  /**
   * ambiguous_empty_replay (an evidenced empty replay) and cursor_lost (404 at once; 400/409 once a second
   * resume of the request is rejected too), for a request with no terminal and no continuation at or
   * after the failure, by event time.
   */
  private failedResumption(slot: number, s: SpanRecord, t: number, outcome: ResumeOutcome, status: number): void {
    const T = this.table;
    const c = T.ensureCold(slot);
    const f = T.flags[slot]!;
    if (outcome === ResumeOutcome.EMPTY_REPLAY) {
      if (f & F_EMPTY || T.contT[c]! >= t || !isEvidencedEmptyReplay(s.attributes, s.kind)) return;
      T.flags[slot] = f | F_EMPTY;
      T.emptyT[c] = t;
      this.emit(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY, s.traceId, t, t, [s.spanId], { outcome, status_code: status });
      return;
    }
    let first = t;
    const ids = [s.spanId];
    if (outcome === ResumeOutcome.CURSOR_REJECTED) {
      // Provisional: the server may still hold the dropped connection, and the client's next resume succeed.
      if (T.rejects[c]!++ === 0) {
        T.rejT[c] = t;
        setSpan(T.rejSpan, c, s.spanId);
        return;
      }
      const earlier = T.rejT[c]!;
      first = Math.min(earlier, t);
      if (earlier <= t) ids.unshift(spanHex(T.rejSpan, c));
      else ids.push(spanHex(T.rejSpan, c));
      t = Math.max(earlier, t);
    }
    if (f & F_LOST || T.contT[c]! >= t) return;
    T.flags[slot] = f | F_LOST;
    T.lostT[c] = t;
    this.emit(slot, FindingKind.CURSOR_LOST, s.traceId, first, t, ids, { outcome, status_code: status });
  }

  /** A continuation at `t` (or a terminal at any time) contradicts the failed-resumption findings before it. */
  private retract(slot: number, s: SpanRecord, t: number, terminal: boolean): void {
    const T = this.table;
    const c = T.cold[slot]!;
    const f = T.flags[slot]!;
    if (f & F_EMPTY && !(f & F_EMPTY_RETRACTED) && (terminal || t >= T.emptyT[c]!)) {
      T.flags[slot]! |= F_EMPTY_RETRACTED;
      this.emit(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY, s.traceId, T.emptyT[c]!, t, [s.spanId], undefined, FindingRecord.RETRACTION);
    }
    if (f & F_LOST && !(f & F_LOST_RETRACTED) && (terminal || t >= T.lostT[c]!)) {
      T.flags[slot]! |= F_LOST_RETRACTED;
      this.emit(slot, FindingKind.CURSOR_LOST, s.traceId, T.lostT[c]!, t, [s.spanId], undefined, FindingRecord.RETRACTION);
    }
  }

  private checkDuplicate(slot: number, traceId: string, t: number, spanId: string): void {
    const T = this.table;
    const c = T.cold[slot]!;
    if (T.flags[slot]! & F_DUP) return;
    const dups = this.duplicates(slot);
    if (dups < 1) return;
    T.flags[slot]! |= F_DUP;
    const haveTerm = T.termTotal[slot]! > 0;
    const first = haveTerm ? Math.min(T.termT[slot]!, t) : t;
    const last = haveTerm ? Math.max(T.termT[slot]!, t) : t;
    const ids: string[] = [];
    if (haveTerm) ids.push(spanHex(T.termSpan, slot));
    const dup = hasSpan(T.dupSpan, c) ? spanHex(T.dupSpan, c) : spanId;
    if (!ids.includes(dup)) ids.push(dup);
    this.emit(slot, FindingKind.DUPLICATE_TERMINAL, traceId, first, last, ids, { duplicates: dups });
    // A storm was reported before any duplicate had arrived: the pattern is complete now.
    this.signature(slot, traceId, last);
  }

  private duplicates(slot: number): number {
    const T = this.table;
    const c = T.cold[slot]!;
    const replays = T.replayDups[c]! + Math.max(0, T.replayFirsts[c]! - 1);
    return Math.max(T.termTotal[slot]! - T.termOnFirst[slot]!, T.attrDups[slot]!, replays);
  }

  private attemptKey(slot: number): number {
    const T = this.table;
    return Math.imul(T.hashes[slot]!, 0x9e3779b1) ^ T.serial[slot]!;
  }

  /** The stream of a poll or continuation is no attempt; if its reattach span already counted it, that is undone. */
  private notAttempt(slot: number, s: SpanRecord): void {
    const stream = s.attributes[ATTR_MCP_STREAM_ID];
    if (typeof stream !== 'string' || stream.length === 0) return;
    const h = hash32(stream);
    const key = this.attemptKey(slot);
    if (this.quietStreams.add(h, key) && this.attemptStreams.contains(h, key)) this.withdraw(slot, s.startTimeUnixMs);
  }

  /** Removes one counted attempt (the one nearest `t`) from the current episode, unless it is already a storm. */
  private withdraw(slot: number, t: number): void {
    const T = this.table;
    const c = T.ensureCold(slot);
    if (!(T.epAttempts[c]! > 0) || T.flags[slot]! & F_STORM) return;
    T.epAttempts[c]!--;
    const n = T.ringSize;
    const base = c * n;
    const ring = T.ring;
    let best = -1;
    let distance = Infinity;
    for (let i = base; i < base + n; i++) {
      const d = Math.abs(ring[i]! - t);
      if (d < distance) {
        distance = d;
        best = i;
      }
    }
    if (best < 0) return;
    for (let i = best; i > base; i--) ring[i] = ring[i - 1]!;
    ring[base] = NaN;
  }

  /** One reattach/resume attempt; attempts are distinct new streams, so the two spans of one GET count once. */
  private attempt(slot: number, s: SpanRecord, t: number, service: string, evicts: boolean): void {
    if (refusedByGuard(s.attributes)) return;
    const T = this.table;
    const c = T.ensureCold(slot);
    const stream = s.attributes[ATTR_MCP_STREAM_ID];
    let h: number;
    if (typeof stream === 'string' && stream.length > 0) {
      h = hash32(stream);
      const key = this.attemptKey(slot);
      if (this.quietStreams.contains(h, key)) return;
      if (!this.attemptStreams.add(h, key)) {
        if (evicts && T.epAttempts[c]! > 0 && h === T.epLastStream[c]) this.markEvicting(slot);
        return;
      }
    } else {
      h = hash32(s.spanId);
    }
    let f = T.flags[slot]!;
    if (!(f & F_STORM) && t <= T.stEnd[c]!) return;
    const w = this.options.stormWindowMs;
    if (T.epAttempts[c]! > 0) {
      if (t > T.epLast[c]! + w) this.closeEpisode(slot);
      else if (t < T.epFirst[c]! - w) return;
    }
    T.epAttempts[c]!++;
    if (!(t >= T.epFirst[c]!)) {
      T.epFirst[c] = t;
      setSpan(T.epFirstSpan, c, s.spanId);
    }
    f = T.flags[slot]!;
    if (!(t < T.epLast[c]!)) {
      T.epLast[c] = t;
      T.epLastStream[c] = h;
      setSpan(T.epLastSpan, c, s.spanId);
      setTrace(T.epLastTrace, c, s.traceId);
      f = evicts ? f | F_EVICT_LAST : f & ~F_EVICT_LAST;
      if (f & F_ENDED && !evicts) {
        // A later attempt: the storm did not end where it seemed to.
        f &= ~F_ENDED;
        T.stEnd[c] = NaN;
        this.events?.stormStarted(service);
      }
      T.flags[slot] = f;
    }
    const n = this.table.ringSize;
    const base = c * n;
    const ring = T.ring;
    if (!(ring[base]! >= t)) {
      ring[base] = t;
      for (let i = base; i + 1 < base + n && !(ring[i + 1]! >= t); i++) {
        ring[i] = ring[i + 1]!;
        ring[i + 1] = t;
      }
    }
    if (!(f & F_STORM) && ring[base + n - 1]! - ring[base]! <= w) {
      T.flags[slot] = f |= F_STORM;
      this.openStorms.add(slot);
      this.events?.stormStarted(service);
      this.emit(slot, FindingKind.RECONNECT_STORM, s.traceId, ring[base]!, ring[base + n - 1]!, uniq([spanHex(T.epFirstSpan, c), s.spanId]), {
        attempts: T.epAttempts[c]!,
      });
      // Duplicates were delivered before the storm was complete: the pattern is complete now.
      this.signature(slot, s.traceId, t);
    }
    if (f & F_STORM && f & F_EVICT_LAST && !(f & F_ENDED)) this.endStorm(slot, T.epLast[c]!, true);
  }

  private markEvicting(slot: number): void {
    const T = this.table;
    const c = T.cold[slot]!;
    const f = T.flags[slot]! | F_EVICT_LAST;
    T.flags[slot] = f;
    if (f & F_STORM && !(f & F_ENDED)) this.endStorm(slot, T.epLast[c]!, true);
  }

  private endStorm(slot: number, at: number, byEviction: boolean): void {
    const T = this.table;
    const c = T.ensureCold(slot);
    T.flags[slot]! |= F_ENDED;
    T.stEnd[c] = at;
    this.events?.stormEnded(this.serviceOf(slot));
    if (byEviction && this.options.settleMs <= 0) this.finalize(slot);
  }

  /** Ends an open storm now; `endFlag` says why (0: the window passed quietly). */
  private forceFinalize(slot: number, endFlag: number): void {
    const T = this.table;
    const c = T.cold[slot]!;
    if (!(T.flags[slot]! & F_ENDED)) {
      T.flags[slot]! |= endFlag;
      this.endStorm(slot, T.epLast[c]! + this.options.stormWindowMs, false);
    }
    if (this.openStorms.has(slot)) this.finalize(slot);
  }

  /** Starts a new episode after a quiet gap, reporting the end of the storm the old one was, if any. */
  private closeEpisode(slot: number): void {
    if (this.table.flags[slot]! & F_STORM) this.forceFinalize(slot, 0);
    else this.resetEpisode(slot);
  }

  /** A reported storm has ended (and settled): one storm_ended record, never a second signature. */
  private finalize(slot: number): void {
    const T = this.table;
    const c = T.ensureCold(slot);
    const attempts = T.epAttempts[c]!;
    const f = T.flags[slot]!;
    const endedBy =
      f & F_EVICT_LAST ? StormEnd.EVICTED : f & F_END_SHUTDOWN ? StormEnd.SHUTDOWN : f & F_END_DROPPED ? StormEnd.DROPPED : StormEnd.QUIET;
    const service = this.serviceOf(slot);
    this.events?.stormFinalized(service, attempts, endedBy);
    const first = T.epFirst[c]!;
    const last = T.epLast[c]!;
    this.resetEpisode(slot);
    T.stEnd[c] = last;
    T.stFirst[c] = first;
    T.stAttempts[c] = attempts;
    T.flags[slot] = (T.flags[slot]! & ~(F_END_SHUTDOWN | F_END_DROPPED)) | F_STORMED;
    this.openStorms.delete(slot);
    this.emit(
      slot,
      FindingKind.RECONNECT_STORM,
      traceHex(T.epLastTrace, c),
      first,
      last,
      uniq([spanHex(T.epFirstSpan, c), spanHex(T.epLastSpan, c)]),
      // The whole storm's counts: duplicates too, so a reader sees one count per request at its end.
      { attempts, duplicates: this.duplicates(slot) || undefined, ended_by: endedBy, ended_by_eviction: endedBy === StormEnd.EVICTED },
      FindingRecord.STORM_ENDED,
    );
  }

  /**
   * Reports the seed pattern once, as soon as both halves are known (a duplicate terminal on a distinct
   * stream, and a reported storm, current or ended), in whichever order they were learnt.
   */
  private signature(slot: number, traceId: string, t: number): void {
    const T = this.table;
    const c = T.cold[slot]!;
    const f = T.flags[slot]!;
    if (f & F_SIG || !(f & (F_STORM | F_STORMED))) return;
    const dups = this.duplicates(slot);
    if (dups < 1) return;
    T.flags[slot] = f | F_SIG;
    const current = (f & F_STORM) !== 0;
    const stormFirst = current ? T.epFirst[c]! : T.stFirst[c]!;
    const stormLast = current ? T.epLast[c]! : T.stEnd[c]!;
    const first = T.termTotal[slot]! > 0 ? Math.min(T.termT[slot]!, stormFirst) : stormFirst;
    const ids = [spanHex(T.epFirstSpan, c), spanHex(T.epLastSpan, c)];
    if (hasSpan(T.dupSpan, c)) ids.unshift(spanHex(T.dupSpan, c));
    if (T.termTotal[slot]! > 0) ids.unshift(spanHex(T.termSpan, slot));
    this.emit(slot, FindingKind.SIGNATURE, traceId, first, Math.max(stormLast, t), uniq(ids), {
      duplicates: dups,
      attempts: current ? T.epAttempts[c]! : T.stAttempts[c]!,
    });
  }

  private resetEpisode(slot: number): void {
    const T = this.table;
    const c = T.ensureCold(slot);
    T.epAttempts[c] = 0;
    T.epFirst[c] = NaN;
    T.epLast[c] = NaN;
    T.flags[slot]! &= ~(F_STORM | F_ENDED | F_EVICT_LAST);
    T.ring.fill(NaN, c * T.ringSize, (c + 1) * T.ringSize);
  }

  /** Stores the id of the span being ingested at `row` of a two-word span-id column. */
  private setCurrentSpan(a: Uint32Array, row: number): void {
    a[row * 2] = this.spanHi;
    a[row * 2 + 1] = this.spanLo;
  }

  private serviceOf(slot: number): string {
    return this.serviceNames[this.table.svc[slot]!]!;
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

function setSpan(a: Uint32Array, slot: number, hex: string): void {
  a[slot * 2] = hexWord(hex, 0);
  a[slot * 2 + 1] = hexWord(hex, 8);
}
function hasSpan(a: Uint32Array, slot: number): boolean {
  return a[slot * 2] !== 0 || a[slot * 2 + 1] !== 0;
}
function copySpan(to: Uint32Array, toRow: number, from: Uint32Array, fromRow: number): void {
  to[toRow * 2] = from[fromRow * 2]!;
  to[toRow * 2 + 1] = from[fromRow * 2 + 1]!;
}
function spanHex(a: Uint32Array, slot: number): string {
  return wordHex(a[slot * 2]!) + wordHex(a[slot * 2 + 1]!);
}
function setTrace(a: Uint32Array, slot: number, hex: string): void {
  for (let i = 0; i < 4; i++) a[slot * 4 + i] = hexWord(hex, i * 8);
}
function traceHex(a: Uint32Array, slot: number): string {
  let out = '';
  for (let i = 0; i < 4; i++) out += wordHex(a[slot * 4 + i]!);
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
function terminalMarks(a: SpanRecord['attributes']): number {
  if (Object.getPrototypeOf(a) === null) return HAS_ALL;
  let marks = 0;
  for (const key in a) {
    if (key === ATTR_MCP_TERMINAL_FOREIGN) marks |= HAS_FOREIGN;
    else if (key === ATTR_MCP_TERMINAL_CONFLICT) marks |= HAS_CONFLICT;
    else if (key === ATTR_MCP_TERMINAL_DUPLICATE) marks |= HAS_DUPLICATE;
  }
  return marks;
}

/**
 * The guard refused this resume in the client: it never left the process. What the guard stopped
 * (this, and a duplicate terminal it dropped before the application saw it) shows in the metrics,
 * not in findings, so a protected client pages no one.
 */
function droppedByGuard(a: SpanRecord['attributes']): boolean {
  return a[ATTR_MCP_GUARD_ACTION] === GuardAction.DUPLICATE_TERMINAL_DROPPED;
}

function refusedByGuard(a: SpanRecord['attributes']): boolean {
  return a[ATTR_MCP_GUARD_ACTION] === GuardAction.RESUME_REFUSED;
}
