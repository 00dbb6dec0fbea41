import { StormEnd } from '@resumewatch/semconv';
import { wordHex, hexWord } from './ids.js';
import { RequestSlots, growF, growU } from './slots.js';

/**
 * Findings reported at most once per request, whatever the order in which its spans arrive: one bit
 * each of the request's flags. A retraction is reported once too.
 */
export const Reported = {
  DUPLICATE_TERMINAL: 1,
  RESUME_AFTER_TERMINAL: 2,
  SIGNATURE: 32,
  EMPTY_REPLAY: 64,
  CURSOR_LOST: 128,
  EMPTY_REPLAY_RETRACTION: 512,
  CURSOR_LOST_RETRACTION: 1024,
  /** The metrics count every occurrence of a server defect; its finding is once per request. */
  FOREIGN_REPLAY: 2048,
  CONFLICTING_TERMINAL: 4096,
} as const;
export type Reported = (typeof Reported)[keyof typeof Reported];

// The storm state of a request's current episode of attempts, the other bits of its flags.
/** The episode reached the storm threshold and reconnect_storm was reported. */
const IN_STORM = 4;
/** The current storm has ended (quiet window, eviction or forced end); its storm_ended record waits for settleMs. */
const STORM_ENDED = 8;
/** The episode's latest attempt was answered 400/404/409: the server evicted the session, so a storm ends there. */
const LAST_ATTEMPT_EVICTED = 16;
/** A storm of this request was reported and has ended (its numbers: pastStormFirstAt, stormEndAt, pastStormAttempts). */
const PAST_STORM = 256;
/** Why an open storm was ended by force: the detector's input ended, or the request's state was dropped. */
const ENDED_BY_SHUTDOWN = 8192;
const ENDED_BY_DROP = 16384;

/** The reasons a storm can be ended by force rather than by its own attempts or quiet window. */
export type ForcedStormEnd = typeof StormEnd.SHUTDOWN | typeof StormEnd.DROPPED;

/**
 * What the detector knows of each tracked request, read and changed through named methods, one per fact.
 *
 * Stored as columns of typed arrays indexed by the request's slot (see slots.ts), so that a tracked
 * request costs a fixed number of bytes plus references to its session and request id strings: no
 * object, no Map entry and no composite key string per request.
 *
 * The columns are split in two by how often a request needs them. Every request has a hot row (its
 * terminal, its flags). Only a request that was resumed, reattached, or delivered a duplicate or foreign
 * terminal gets a cold row (episode, storm, failed-resumption and duplicate state): most requests never
 * do, and a cold row is most of a request's bytes. `coldRows[slot]` is the request's cold row, or 0:
 * row 0 is never handed out and keeps the values of a fresh row (NaN times, zero counters and ids), so
 * reading a cold fact of any request is always right; a method that writes one takes the row first.
 *
 * Times are Unix ms, NaN when unknown; span ids are kept as two 32-bit words, trace ids as four.
 */
export class RequestTable extends RequestSlots {
  // Hot columns, indexed by slot.
  private lastSeenTimes = new Float64Array(0);
  /** Reported findings (Reported) and the storm state, one bit each. */
  private flags = new Uint32Array(0);
  private firstTerminalTimes = new Float64Array(0);
  private firstTerminalStreams = new Uint32Array(0);
  private firstTerminalSpans = new Uint32Array(0);
  private terminalDeliveries = new Uint32Array(0);
  /** Deliveries on the stream of the first terminal (a replay to the same stream is no duplicate by itself). */
  private firstStreamDeliveries = new Uint32Array(0);
  /** Terminals the instrumentation marked duplicate. */
  private markedDuplicates = new Uint32Array(0);
  private coldRows = new Uint32Array(0);

  // Cold columns, indexed by cold row.
  private coldCapacity = 0;
  private coldUsed = 1;
  private coldFree: number[] = [];
  private latestResumeTimes = new Float64Array(0);
  private latestResumeSpans = new Uint32Array(0);
  /** The first duplicate delivery's span. */
  private duplicateSpans = new Uint32Array(0);
  /** Replays that delivered the terminal after one had been delivered. */
  private replayedDuplicates = new Uint32Array(0);
  /** Replays that delivered the terminal to a stream that had not delivered it before. */
  private replayedFirsts = new Uint32Array(0);
  /** Stream (hash) of a foreign terminal of the request: a later duplicate of it is the server's doing. */
  private foreignStreams = new Uint32Array(0);
  // The current episode of attempts.
  private episodeAttempts = new Uint32Array(0);
  private firstAttemptTimes = new Float64Array(0);
  private firstAttemptSpans = new Uint32Array(0);
  private lastAttemptTimes = new Float64Array(0);
  private lastAttemptStreams = new Uint32Array(0);
  private lastAttemptSpans = new Uint32Array(0);
  /** For findings completed by the clock, which have no span of their own to name. */
  private lastAttemptTraces = new Uint32Array(0);
  /** The `ringSize` latest attempt times of the episode, ascending, NaN-padded at the front. */
  private attemptRing = new Float64Array(0);
  // The storm: the end of the current one, or the numbers of the last one reported.
  private stormEndTimes = new Float64Array(0);
  private pastStormFirstTimes = new Float64Array(0);
  private pastStormAttempts = new Uint32Array(0);
  // Failed resumptions and what contradicts them.
  /** Resume times of the reported ambiguous_empty_replay and cursor_lost findings. */
  private emptyReplayTimes = new Float64Array(0);
  private cursorLostTimes = new Float64Array(0);
  /** Latest continuation (a message on a resumed stream) of the request. */
  private continuationTimes = new Float64Array(0);
  /** The first resume answered 400/409. */
  private firstRejectionTimes = new Float64Array(0);
  private firstRejectionSpans = new Uint32Array(0);

  constructor(
    maxRequests: number,
    readonly ringSize: number,
  ) {
    super(maxRequests);
    this.growCold();
    this.resetCold(0);
  }

  /** Whether the request has a cold row: was resumed, reattached, or delivered a duplicate or foreign terminal. */
  hasColdRow(slot: number): boolean {
    return this.coldRows[slot] !== 0;
  }

  /** Takes the request's cold row (reset) if it has none: the handlers of resumes and attempts write there. */
  ensureCold(slot: number): number {
    const current = this.coldRows[slot]!;
    if (current !== 0) return current;
    let row = this.coldFree.pop();
    if (row === undefined) {
      row = this.coldUsed++;
      if (row >= this.coldCapacity) this.growCold();
    }
    this.resetCold(row);
    this.coldRows[slot] = row;
    return row;
  }

  // --- Seen -------------------------------------------------------------------------------------

  /** Latest time the request was seen (a span's end, or the detector's time then), for retention. */
  lastSeenAt(slot: number): number {
    return this.lastSeenTimes[slot]!;
  }

  /** The request was seen at `time`: most recently touched, and kept at least until `time` plus retention. */
  seenAt(slot: number, time: number): void {
    if (!(this.lastSeenTimes[slot]! >= time)) this.lastSeenTimes[slot] = time;
    this.touch(slot);
  }

  // --- Reported findings ------------------------------------------------------------------------

  wasReported(slot: number, finding: Reported): boolean {
    return (this.flags[slot]! & finding) !== 0;
  }

  markReported(slot: number, finding: Reported): void {
    this.flags[slot]! |= finding;
  }

  // --- Terminals --------------------------------------------------------------------------------

  /** Whether a terminal of the request was delivered (then firstTerminalAt is the earliest). */
  hasTerminal(slot: number): boolean {
    return this.terminalDeliveries[slot]! > 0;
  }

  firstTerminalAt(slot: number): number {
    return this.firstTerminalTimes[slot]!;
  }

  firstTerminalStream(slot: number): number {
    return this.firstTerminalStreams[slot]!;
  }

  firstTerminalSpanId(slot: number): string {
    return spanHex(this.firstTerminalSpans, slot);
  }

  /** Counts one delivered terminal; `markedDuplicate`: the instrumentation marked it a duplicate. */
  countTerminal(slot: number, markedDuplicate: boolean): void {
    this.terminalDeliveries[slot]!++;
    if (markedDuplicate) this.markedDuplicates[slot]!++;
  }

  /** The terminal (span `spanHi`/`spanLo`) on stream `stream` at `time` is taken as the request's first. */
  setFirstTerminal(slot: number, time: number, stream: number, spanHi: number, spanLo: number): void {
    this.firstTerminalTimes[slot] = time;
    this.firstTerminalStreams[slot] = stream;
    this.firstStreamDeliveries[slot] = 1;
    setSpan(this.firstTerminalSpans, slot, spanHi, spanLo);
  }

  /** The first terminal's stream delivered it again; if earlier than the first seen, this one is the first. */
  countFirstStreamDelivery(slot: number, time: number, spanHi: number, spanLo: number): void {
    this.firstStreamDeliveries[slot]!++;
    if (time < this.firstTerminalTimes[slot]!) {
      this.firstTerminalTimes[slot] = time;
      setSpan(this.firstTerminalSpans, slot, spanHi, spanLo);
    }
  }

  /** A delivery earlier than the first terminal arrived: the one taken as first becomes a duplicate. */
  demoteFirstTerminal(slot: number): void {
    const row = this.ensureCold(slot);
    if (!hasSpan(this.duplicateSpans, row)) copySpan(this.duplicateSpans, row, this.firstTerminalSpans, slot);
  }

  /** A duplicate delivery: its span is kept if it is the first duplicate. */
  noteDuplicateSpan(slot: number, spanHi: number, spanLo: number): void {
    const row = this.ensureCold(slot);
    if (!hasSpan(this.duplicateSpans, row)) setSpan(this.duplicateSpans, row, spanHi, spanLo);
  }

  /** The first duplicate delivery's span id, if one was kept. */
  duplicateSpanId(slot: number): string | undefined {
    const row = this.coldRows[slot]!;
    return hasSpan(this.duplicateSpans, row) ? spanHex(this.duplicateSpans, row) : undefined;
  }

  /** A resume replayed the terminal; `observed`: one had been delivered before (else it is a first delivery). */
  countReplayedTerminal(slot: number, observed: boolean): void {
    const row = this.ensureCold(slot);
    if (observed) this.replayedDuplicates[row]!++;
    else this.replayedFirsts[row]!++;
  }

  /**
   * Terminals beyond the first, by whichever of the three evidences counts most: deliveries on other
   * streams than the first's, terminals marked duplicate, and replays after a delivery (or beyond the
   * first replay that delivered it).
   */
  duplicateDeliveries(slot: number): number {
    const row = this.coldRows[slot]!;
    const replays = this.replayedDuplicates[row]! + Math.max(0, this.replayedFirsts[row]! - 1);
    return Math.max(
      this.terminalDeliveries[slot]! - this.firstStreamDeliveries[slot]!,
      this.markedDuplicates[slot]!,
      replays,
    );
  }

  /** Stream hash of a foreign terminal of the request, 0 for none. */
  foreignStream(slot: number): number {
    return this.foreignStreams[this.coldRows[slot]!]!;
  }

  setForeignStream(slot: number, stream: number): void {
    this.foreignStreams[this.ensureCold(slot)] = stream;
  }

  // --- Resumes ----------------------------------------------------------------------------------

  latestResumeAt(slot: number): number {
    return this.latestResumeTimes[this.coldRows[slot]!]!;
  }

  latestResumeSpanId(slot: number): string {
    return spanHex(this.latestResumeSpans, this.coldRows[slot]!);
  }

  /** A resume at `time`: kept if it is the latest. */
  noteResume(slot: number, time: number, spanHi: number, spanLo: number): void {
    const row = this.ensureCold(slot);
    if (time <= this.latestResumeTimes[row]!) return;
    this.latestResumeTimes[row] = time;
    setSpan(this.latestResumeSpans, row, spanHi, spanLo);
  }

  /** Latest continuation (a message on a resumed stream before the terminal), NaN if none. */
  continuationAt(slot: number): number {
    return this.continuationTimes[this.coldRows[slot]!]!;
  }

  noteContinuation(slot: number, time: number): void {
    const row = this.ensureCold(slot);
    if (!(this.continuationTimes[row]! >= time)) this.continuationTimes[row] = time;
  }

  emptyReplayAt(slot: number): number {
    return this.emptyReplayTimes[this.coldRows[slot]!]!;
  }

  setEmptyReplayAt(slot: number, time: number): void {
    this.emptyReplayTimes[this.ensureCold(slot)] = time;
  }

  cursorLostAt(slot: number): number {
    return this.cursorLostTimes[this.coldRows[slot]!]!;
  }

  setCursorLostAt(slot: number, time: number): void {
    this.cursorLostTimes[this.ensureCold(slot)] = time;
  }

  /** Whether a resume of the request was answered 400/409 before. */
  hasRejection(slot: number): boolean {
    return !Number.isNaN(this.firstRejectionTimes[this.coldRows[slot]!]!);
  }

  firstRejectionAt(slot: number): number {
    return this.firstRejectionTimes[this.coldRows[slot]!]!;
  }

  firstRejectionSpanId(slot: number): string {
    return spanHex(this.firstRejectionSpans, this.coldRows[slot]!);
  }

  setFirstRejection(slot: number, time: number, spanHi: number, spanLo: number): void {
    const row = this.ensureCold(slot);
    this.firstRejectionTimes[row] = time;
    setSpan(this.firstRejectionSpans, row, spanHi, spanLo);
  }

  // --- The current episode of attempts ----------------------------------------------------------

  episodeAttemptCount(slot: number): number {
    return this.episodeAttempts[this.coldRows[slot]!]!;
  }

  firstAttemptAt(slot: number): number {
    return this.firstAttemptTimes[this.coldRows[slot]!]!;
  }

  lastAttemptAt(slot: number): number {
    return this.lastAttemptTimes[this.coldRows[slot]!]!;
  }

  lastAttemptStream(slot: number): number {
    return this.lastAttemptStreams[this.coldRows[slot]!]!;
  }

  firstAttemptSpanId(slot: number): string {
    return spanHex(this.firstAttemptSpans, this.coldRows[slot]!);
  }

  lastAttemptSpanId(slot: number): string {
    return spanHex(this.lastAttemptSpans, this.coldRows[slot]!);
  }

  lastAttemptTraceId(slot: number): string {
    const row = this.coldRows[slot]!;
    let out = '';
    for (let i = 0; i < 4; i++) out += wordHex(this.lastAttemptTraces[row * 4 + i]!);
    return out;
  }

  /** Counts an attempt at `time` into the episode: its count, its first attempt, its ring of latest times. */
  countAttempt(slot: number, time: number, spanHi: number, spanLo: number): void {
    const row = this.ensureCold(slot);
    this.episodeAttempts[row]!++;
    if (!(time >= this.firstAttemptTimes[row]!)) {
      this.firstAttemptTimes[row] = time;
      setSpan(this.firstAttemptSpans, row, spanHi, spanLo);
    }
    this.addAttemptTime(row, time);
  }

  /** The attempt at `time` is the episode's latest; `evicted`: the server answered it 400/404/409. */
  setLastAttempt(
    slot: number,
    time: number,
    stream: number,
    traceId: string,
    spanHi: number,
    spanLo: number,
    evicted: boolean,
  ): void {
    const row = this.ensureCold(slot);
    this.lastAttemptTimes[row] = time;
    this.lastAttemptStreams[row] = stream;
    setSpan(this.lastAttemptSpans, row, spanHi, spanLo);
    for (let i = 0; i < 4; i++) this.lastAttemptTraces[row * 4 + i] = hexWord(traceId, i * 8);
    if (evicted) this.flags[slot]! |= LAST_ATTEMPT_EVICTED;
    else this.flags[slot]! &= ~LAST_ATTEMPT_EVICTED;
  }

  lastAttemptEvicted(slot: number): boolean {
    return (this.flags[slot]! & LAST_ATTEMPT_EVICTED) !== 0;
  }

  /** The server evicted the session on the episode's latest attempt (learnt from the attempt's second span). */
  markLastAttemptEvicted(slot: number): void {
    this.flags[slot]! |= LAST_ATTEMPT_EVICTED;
  }

  /** Removes one counted attempt, the one nearest `time`, from the episode (a poll or continuation, not an attempt). */
  withdrawAttempt(slot: number, time: number): void {
    const row = this.ensureCold(slot);
    this.episodeAttempts[row]!--;
    const n = this.ringSize;
    const base = row * n;
    const ring = this.attemptRing;
    let best = -1;
    let distance = Infinity;
    for (let i = base; i < base + n; i++) {
      const d = Math.abs(ring[i]! - time);
      if (d < distance) {
        distance = d;
        best = i;
      }
    }
    if (best < 0) return;
    for (let i = best; i > base; i--) ring[i] = ring[i - 1]!;
    ring[base] = NaN;
  }

  /** Earliest of the `ringSize` latest attempt times of the episode (NaN while fewer attempts were counted). */
  oldestRingTime(slot: number): number {
    return this.attemptRing[this.coldRows[slot]! * this.ringSize]!;
  }

  /** Latest attempt time of the episode by the ring. */
  newestRingTime(slot: number): number {
    return this.attemptRing[this.coldRows[slot]! * this.ringSize + this.ringSize - 1]!;
  }

  /** Starts a new episode: no attempt counted, the storm state of the old one cleared. */
  resetEpisode(slot: number): void {
    const row = this.ensureCold(slot);
    this.episodeAttempts[row] = 0;
    this.firstAttemptTimes[row] = NaN;
    this.lastAttemptTimes[row] = NaN;
    this.flags[slot]! &= ~(IN_STORM | STORM_ENDED | LAST_ATTEMPT_EVICTED);
    this.attemptRing.fill(NaN, row * this.ringSize, (row + 1) * this.ringSize);
  }

  // --- Storms -----------------------------------------------------------------------------------

  /** Whether the current episode is a reported storm (ended or not, until it is retired). */
  inStorm(slot: number): boolean {
    return (this.flags[slot]! & IN_STORM) !== 0;
  }

  startStorm(slot: number): void {
    this.flags[slot]! |= IN_STORM;
  }

  /** Whether the current storm has ended (its storm_ended record then waits for settleMs). */
  stormEnded(slot: number): boolean {
    return (this.flags[slot]! & STORM_ENDED) !== 0;
  }

  /** The current storm's end, or the last attempt of the last storm retired; NaN if none. */
  stormEndAt(slot: number): number {
    return this.stormEndTimes[this.coldRows[slot]!]!;
  }

  endStorm(slot: number, at: number): void {
    this.flags[slot]! |= STORM_ENDED;
    this.stormEndTimes[this.ensureCold(slot)] = at;
  }

  /** A later attempt arrived: the storm did not end where it seemed to. */
  reopenStorm(slot: number): void {
    this.flags[slot]! &= ~STORM_ENDED;
    this.stormEndTimes[this.ensureCold(slot)] = NaN;
  }

  /** The storm is being ended by force, for `reason`. */
  forceStormEnd(slot: number, reason: ForcedStormEnd): void {
    this.flags[slot]! |= reason === StormEnd.SHUTDOWN ? ENDED_BY_SHUTDOWN : ENDED_BY_DROP;
  }

  /** How the current storm ended. */
  stormEndedBy(slot: number): StormEnd {
    const flags = this.flags[slot]!;
    if (flags & LAST_ATTEMPT_EVICTED) return StormEnd.EVICTED;
    if (flags & ENDED_BY_SHUTDOWN) return StormEnd.SHUTDOWN;
    if (flags & ENDED_BY_DROP) return StormEnd.DROPPED;
    return StormEnd.QUIET;
  }

  /**
   * The ended storm is reported: a new episode starts, and the storm's first and last attempts and its
   * count are kept, so that a later duplicate still completes the signature with it.
   */
  retireStorm(slot: number): void {
    const row = this.ensureCold(slot);
    const attempts = this.episodeAttempts[row]!;
    const first = this.firstAttemptTimes[row]!;
    const last = this.lastAttemptTimes[row]!;
    this.resetEpisode(slot);
    this.stormEndTimes[row] = last;
    this.pastStormFirstTimes[row] = first;
    this.pastStormAttempts[row] = attempts;
    this.flags[slot] = (this.flags[slot]! & ~(ENDED_BY_SHUTDOWN | ENDED_BY_DROP)) | PAST_STORM;
  }

  /** Whether a storm of the request was reported and retired. */
  hasPastStorm(slot: number): boolean {
    return (this.flags[slot]! & PAST_STORM) !== 0;
  }

  pastStormFirstAt(slot: number): number {
    return this.pastStormFirstTimes[this.coldRows[slot]!]!;
  }

  pastStormAttemptCount(slot: number): number {
    return this.pastStormAttempts[this.coldRows[slot]!]!;
  }

  // --- Storage ----------------------------------------------------------------------------------

  /**
   * Inserts an attempt time into the ascending, NaN-padded ring of cold row `row`, dropping the oldest
   * when it is full: the ring holds the `ringSize` latest attempts of the episode, which is all the storm
   * rule needs (threshold attempts within the window), whatever the number of attempts.
   */
  private addAttemptTime(row: number, time: number): void {
    const n = this.ringSize;
    const base = row * n;
    const ring = this.attemptRing;
    if (ring[base]! >= time) return;
    ring[base] = time;
    for (let i = base; i + 1 < base + n && !(ring[i + 1]! >= time); i++) {
      ring[i] = ring[i + 1]!;
      ring[i + 1] = time;
    }
  }

  protected resetRow(slot: number): void {
    this.lastSeenTimes[slot] = NaN;
    this.firstTerminalTimes[slot] = NaN;
    this.flags[slot] = 0;
    this.firstTerminalStreams[slot] = 0;
    this.terminalDeliveries[slot] = 0;
    this.firstStreamDeliveries[slot] = 0;
    this.markedDuplicates[slot] = 0;
    this.firstTerminalSpans[slot * 2] = this.firstTerminalSpans[slot * 2 + 1] = 0;
    this.coldRows[slot] = 0;
  }

  protected releaseRow(slot: number): void {
    if (this.coldRows[slot] === 0) return;
    this.coldFree.push(this.coldRows[slot]!);
    this.coldRows[slot] = 0;
  }

  protected growRows(cap: number): void {
    this.lastSeenTimes = growF(this.lastSeenTimes, cap);
    this.flags = growU(this.flags, cap);
    this.firstTerminalTimes = growF(this.firstTerminalTimes, cap);
    this.firstTerminalStreams = growU(this.firstTerminalStreams, cap);
    this.firstTerminalSpans = growU(this.firstTerminalSpans, cap * 2);
    this.terminalDeliveries = growU(this.terminalDeliveries, cap);
    this.firstStreamDeliveries = growU(this.firstStreamDeliveries, cap);
    this.markedDuplicates = growU(this.markedDuplicates, cap);
    this.coldRows = growU(this.coldRows, cap);
  }

  private resetCold(row: number): void {
    this.latestResumeTimes[row] = NaN;
    this.replayedDuplicates[row] = 0;
    this.replayedFirsts[row] = 0;
    this.foreignStreams[row] = 0;
    this.episodeAttempts[row] = 0;
    this.firstAttemptTimes[row] = NaN;
    this.lastAttemptTimes[row] = NaN;
    this.lastAttemptStreams[row] = 0;
    this.attemptRing.fill(NaN, row * this.ringSize, (row + 1) * this.ringSize);
    this.stormEndTimes[row] = NaN;
    this.pastStormFirstTimes[row] = NaN;
    this.pastStormAttempts[row] = 0;
    this.emptyReplayTimes[row] = NaN;
    this.cursorLostTimes[row] = NaN;
    this.continuationTimes[row] = NaN;
    this.firstRejectionTimes[row] = NaN;
    setSpan(this.latestResumeSpans, row, 0, 0);
    setSpan(this.duplicateSpans, row, 0, 0);
    setSpan(this.firstAttemptSpans, row, 0, 0);
    setSpan(this.lastAttemptSpans, row, 0, 0);
    setSpan(this.firstRejectionSpans, row, 0, 0);
    this.lastAttemptTraces.fill(0, row * 4, row * 4 + 4);
  }

  /** Cold rows grow on their own, by doubling, up to one per slot plus row 0. */
  private growCold(): void {
    const cap = Math.min(Math.max(64, this.coldCapacity * 2), Math.max(this.maxRequests, 1) + 1);
    this.latestResumeTimes = growF(this.latestResumeTimes, cap);
    this.latestResumeSpans = growU(this.latestResumeSpans, cap * 2);
    this.duplicateSpans = growU(this.duplicateSpans, cap * 2);
    this.replayedDuplicates = growU(this.replayedDuplicates, cap);
    this.replayedFirsts = growU(this.replayedFirsts, cap);
    this.foreignStreams = growU(this.foreignStreams, cap);
    this.episodeAttempts = growU(this.episodeAttempts, cap);
    this.firstAttemptTimes = growF(this.firstAttemptTimes, cap);
    this.firstAttemptSpans = growU(this.firstAttemptSpans, cap * 2);
    this.lastAttemptTimes = growF(this.lastAttemptTimes, cap);
    this.lastAttemptStreams = growU(this.lastAttemptStreams, cap);
    this.lastAttemptSpans = growU(this.lastAttemptSpans, cap * 2);
    this.lastAttemptTraces = growU(this.lastAttemptTraces, cap * 4);
    this.attemptRing = growF(this.attemptRing, cap * this.ringSize);
    this.stormEndTimes = growF(this.stormEndTimes, cap);
    this.pastStormFirstTimes = growF(this.pastStormFirstTimes, cap);
    this.pastStormAttempts = growU(this.pastStormAttempts, cap);
    this.emptyReplayTimes = growF(this.emptyReplayTimes, cap);
    this.cursorLostTimes = growF(this.cursorLostTimes, cap);
    this.continuationTimes = growF(this.continuationTimes, cap);
    this.firstRejectionTimes = growF(this.firstRejectionTimes, cap);
    this.firstRejectionSpans = growU(this.firstRejectionSpans, cap * 2);
    this.coldCapacity = cap;
  }
}

function setSpan(column: Uint32Array, row: number, hi: number, lo: number): void {
  column[row * 2] = hi;
  column[row * 2 + 1] = lo;
}
function hasSpan(column: Uint32Array, row: number): boolean {
  return column[row * 2] !== 0 || column[row * 2 + 1] !== 0;
}
function copySpan(to: Uint32Array, toRow: number, from: Uint32Array, fromRow: number): void {
  to[toRow * 2] = from[fromRow * 2]!;
  to[toRow * 2 + 1] = from[fromRow * 2 + 1]!;
}
function spanHex(column: Uint32Array, row: number): string {
  return wordHex(column[row * 2]!) + wordHex(column[row * 2 + 1]!);
}
