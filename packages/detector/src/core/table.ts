import { StormEnd, type FindingKind } from '@resumewatch/semconv';
import { wordHex, hexWord } from './ids.js';
import {
  COLD_FIELDS,
  HOT_FIELDS,
  REPORTED_FLAG,
  REQUEST_FIELDS,
  RETRACTED_FLAG,
  StormFlag,
  newColumn,
  resetOf,
  wordsOf,
  type ColdField,
  type Columns,
  type HotField,
  type RequestField,
  type SpanField,
  type WordField,
} from './request-schema.js';
import { RequestSlots } from './slots.js';

/** The reasons a storm can be ended by force rather than by its own attempts or quiet window. */
export type ForcedStormEnd = typeof StormEnd.SHUTDOWN | typeof StormEnd.DROPPED;

/**
 * A field's column with what its reset and growth need, precomputed from the schema. `column` is the
 * same array as the field's property of the columns object (both set by growth, in one place): the
 * reset of a new request runs through these, without looking each column up by name.
 */
interface Layout<F extends RequestField> {
  readonly field: F;
  readonly words: number;
  readonly reset: number;
  column: Float64Array | Uint32Array;
}

/**
 * What the detector knows of each tracked request, read and changed through named methods, one per fact
 * that spans several fields or more than a write, and through read / write / readSpan / writeSpan by
 * the field's name for a fact that is one field (a new rule's state is a line of REQUEST_FIELDS only).
 *
 * Stored as columns of typed arrays indexed by the request's slot (see slots.ts), so that a tracked
 * request costs a fixed number of bytes plus references to its session and request id strings: no
 * object, no Map entry and no composite key string per request. The columns, their reset and their
 * growth come from the fields of request-schema.ts; this class only says what each fact means.
 *
 * Every request has a hot row (its terminal, its flags). Only a request that was resumed, reattached,
 * or delivered a duplicate or foreign terminal gets a cold row (episode, storm, failed-resumption and
 * duplicate state). `coldRow[slot]` is the request's cold row, or 0: row 0 is never handed out and
 * keeps the values of a fresh row (NaN times, zero counters and ids), so reading a cold fact of any
 * request is always right; a method that writes one takes the row first.
 *
 * Times are Unix ms, NaN when unknown; span ids are kept as two 32-bit words, trace ids as four.
 */
export class RequestTable extends RequestSlots {
  /** Hot columns, indexed by slot. */
  private readonly hot = makeColumns(HOT_FIELDS);
  /** Cold columns, indexed by cold row. */
  private readonly cold = makeColumns(COLD_FIELDS);
  private readonly hotLayout: readonly Layout<HotField>[];
  private readonly coldLayout: readonly Layout<ColdField>[];
  /** The same layouts by column type, for the reset of a new row (RowReset). */
  private readonly hotReset: RowReset;
  private readonly coldReset: RowReset;
  private coldCapacity = 0;
  private coldUsed = 1;
  private coldFree: number[] = [];

  constructor(
    maxRequests: number,
    readonly ringSize: number,
  ) {
    super(maxRequests);
    this.hotLayout = HOT_FIELDS.map((field) => layout(field, ringSize, this.hot[field]));
    this.coldLayout = COLD_FIELDS.map((field) => layout(field, ringSize, this.cold[field]));
    this.hotReset = rowReset(this.hotLayout);
    this.coldReset = rowReset(this.coldLayout);
    this.growCold();
    this.resetCold(0);
  }

  /** Whether the request has a cold row: was resumed, reattached, or delivered a duplicate or foreign terminal. */
  hasColdRow(slot: number): boolean {
    return this.hot.coldRow[slot] !== 0;
  }

  /** Takes the request's cold row (reset) if it has none: the handlers of resumes and attempts write there. */
  ensureCold(slot: number): number {
    const current = this.hot.coldRow[slot]!;
    if (current !== 0) return current;
    let row = this.coldFree.pop();
    if (row === undefined) {
      row = this.coldUsed++;
      if (row >= this.coldCapacity) this.growCold();
    }
    this.resetCold(row);
    this.hot.coldRow[slot] = row;
    return row;
  }

  // --- Any field, by name -----------------------------------------------------------------------
  // A rule's own state needs no method here: its line in REQUEST_FIELDS, read and written by its name.
  // The named methods below are for facts that take more than one field or more than a write.

  /** A field of one word (a time, a count, a stream hash), by name: its reset value until written. */
  read(slot: number, field: WordField): number {
    return this.columnOf(field)[this.readRow(slot, field)]!;
  }

  /** Writes a field of one word; a cold one takes the request's cold row first. */
  write(slot: number, field: WordField, value: number): void {
    this.columnOf(field)[this.writeRow(slot, field)] = value;
  }

  /** A span-id field, by name, as 16 hex digits; undefined until written. */
  readSpan(slot: number, field: SpanField): string | undefined {
    const column = this.columnOf(field) as Uint32Array;
    const row = this.readRow(slot, field);
    return hasSpan(column, row) ? spanHex(column, row) : undefined;
  }

  /** Writes a span-id field, given as the two words `ingest` parsed. */
  writeSpan(slot: number, field: SpanField, spanHi: number, spanLo: number): void {
    setSpan(this.columnOf(field) as Uint32Array, this.writeRow(slot, field), spanHi, spanLo);
  }

  // --- Seen -------------------------------------------------------------------------------------

  /** Latest time the request was seen (a span's end, or the detector's time then), for retention. */
  lastSeenAt(slot: number): number {
    return this.hot.lastSeenAt[slot]!;
  }

  /** The request was seen at `time`: most recently touched, and kept at least until `time` plus retention. */
  seenAt(slot: number, time: number): void {
    if (!(this.hot.lastSeenAt[slot]! >= time)) this.hot.lastSeenAt[slot] = time;
    this.touch(slot);
  }

  // --- Reported findings ------------------------------------------------------------------------

  /** Whether the finding of this kind was reported for the request (every kind but reconnect_storm: once per request). */
  wasReported(slot: number, kind: FindingKind): boolean {
    return (this.hot.flags[slot]! & REPORTED_FLAG[kind]) !== 0;
  }

  markReported(slot: number, kind: FindingKind): void {
    this.hot.flags[slot]! |= REPORTED_FLAG[kind];
  }

  /** Whether the finding of this (retractable) kind was retracted for the request. */
  wasRetracted(slot: number, kind: FindingKind): boolean {
    return (this.hot.flags[slot]! & RETRACTED_FLAG[kind]) !== 0;
  }

  markRetracted(slot: number, kind: FindingKind): void {
    this.hot.flags[slot]! |= RETRACTED_FLAG[kind];
  }

  // --- Terminals --------------------------------------------------------------------------------

  /** Whether a terminal of the request was delivered (then firstTerminalAt is the earliest). */
  hasTerminal(slot: number): boolean {
    return this.hot.terminalDeliveries[slot]! > 0;
  }

  firstTerminalAt(slot: number): number {
    return this.hot.firstTerminalAt[slot]!;
  }

  firstTerminalStream(slot: number): number {
    return this.hot.firstTerminalStream[slot]!;
  }

  firstTerminalSpanId(slot: number): string {
    return spanHex(this.hot.firstTerminalSpan, slot);
  }

  /** Counts one delivered terminal; `markedDuplicate`: the instrumentation marked it a duplicate. */
  countTerminal(slot: number, markedDuplicate: boolean): void {
    this.hot.terminalDeliveries[slot]!++;
    if (markedDuplicate) this.hot.markedDuplicates[slot]!++;
  }

  /** The terminal (span `spanHi`/`spanLo`) on stream `stream` at `time` is taken as the request's first. */
  setFirstTerminal(slot: number, time: number, stream: number, spanHi: number, spanLo: number): void {
    this.hot.firstTerminalAt[slot] = time;
    this.hot.firstTerminalStream[slot] = stream;
    this.hot.firstStreamDeliveries[slot] = 1;
    setSpan(this.hot.firstTerminalSpan, slot, spanHi, spanLo);
  }

  /** The first terminal's stream delivered it again; if earlier than the first seen, this one is the first. */
  countFirstStreamDelivery(slot: number, time: number, spanHi: number, spanLo: number): void {
    this.hot.firstStreamDeliveries[slot]!++;
    if (time < this.hot.firstTerminalAt[slot]!) {
      this.hot.firstTerminalAt[slot] = time;
      setSpan(this.hot.firstTerminalSpan, slot, spanHi, spanLo);
    }
  }

  /** A delivery earlier than the first terminal arrived: the one taken as first becomes a duplicate. */
  demoteFirstTerminal(slot: number): void {
    const row = this.ensureCold(slot);
    if (!hasSpan(this.cold.duplicateSpan, row))
      copySpan(this.cold.duplicateSpan, row, this.hot.firstTerminalSpan, slot);
  }

  /** A duplicate delivery: its span is kept if it is the first duplicate. */
  noteDuplicateSpan(slot: number, spanHi: number, spanLo: number): void {
    const row = this.ensureCold(slot);
    if (!hasSpan(this.cold.duplicateSpan, row)) setSpan(this.cold.duplicateSpan, row, spanHi, spanLo);
  }

  /** The first duplicate delivery's span id, if one was kept. */
  duplicateSpanId(slot: number): string | undefined {
    const row = this.hot.coldRow[slot]!;
    return hasSpan(this.cold.duplicateSpan, row) ? spanHex(this.cold.duplicateSpan, row) : undefined;
  }

  /** A resume replayed the terminal; `observed`: one had been delivered before (else it is a first delivery). */
  countReplayedTerminal(slot: number, observed: boolean): void {
    const row = this.ensureCold(slot);
    if (observed) this.cold.replayedDuplicates[row]!++;
    else this.cold.replayedFirsts[row]!++;
  }

  /**
   * Terminals beyond the first, by whichever of the three evidences counts most: deliveries on other
   * streams than the first's, terminals marked duplicate, and replays after a delivery (or beyond the
   * first replay that delivered it).
   */
  duplicateDeliveries(slot: number): number {
    const row = this.hot.coldRow[slot]!;
    const replays = this.cold.replayedDuplicates[row]! + Math.max(0, this.cold.replayedFirsts[row]! - 1);
    return Math.max(
      this.hot.terminalDeliveries[slot]! - this.hot.firstStreamDeliveries[slot]!,
      this.hot.markedDuplicates[slot]!,
      replays,
    );
  }

  /** Stream hash of a foreign terminal of the request, 0 for none. */
  foreignStream(slot: number): number {
    return this.cold.foreignStream[this.hot.coldRow[slot]!]!;
  }

  setForeignStream(slot: number, stream: number): void {
    this.cold.foreignStream[this.ensureCold(slot)] = stream;
  }

  // --- Resumes ----------------------------------------------------------------------------------

  latestResumeAt(slot: number): number {
    return this.cold.latestResumeAt[this.hot.coldRow[slot]!]!;
  }

  latestResumeSpanId(slot: number): string {
    return spanHex(this.cold.latestResumeSpan, this.hot.coldRow[slot]!);
  }

  /** A resume at `time`: kept if it is the latest. */
  noteResume(slot: number, time: number, spanHi: number, spanLo: number): void {
    const row = this.ensureCold(slot);
    if (time <= this.cold.latestResumeAt[row]!) return;
    this.cold.latestResumeAt[row] = time;
    setSpan(this.cold.latestResumeSpan, row, spanHi, spanLo);
  }

  /** Latest continuation (a message on a resumed stream before the terminal), NaN if none. */
  continuationAt(slot: number): number {
    return this.cold.continuationAt[this.hot.coldRow[slot]!]!;
  }

  noteContinuation(slot: number, time: number): void {
    const row = this.ensureCold(slot);
    if (!(this.cold.continuationAt[row]! >= time)) this.cold.continuationAt[row] = time;
  }

  emptyReplayAt(slot: number): number {
    return this.cold.emptyReplayAt[this.hot.coldRow[slot]!]!;
  }

  setEmptyReplayAt(slot: number, time: number): void {
    this.cold.emptyReplayAt[this.ensureCold(slot)] = time;
  }

  cursorLostAt(slot: number): number {
    return this.cold.cursorLostAt[this.hot.coldRow[slot]!]!;
  }

  setCursorLostAt(slot: number, time: number): void {
    this.cold.cursorLostAt[this.ensureCold(slot)] = time;
  }

  /** Whether a resume of the request was answered 400/409 before. */
  hasRejection(slot: number): boolean {
    return !Number.isNaN(this.cold.firstRejectionAt[this.hot.coldRow[slot]!]!);
  }

  firstRejectionAt(slot: number): number {
    return this.cold.firstRejectionAt[this.hot.coldRow[slot]!]!;
  }

  firstRejectionSpanId(slot: number): string {
    return spanHex(this.cold.firstRejectionSpan, this.hot.coldRow[slot]!);
  }

  setFirstRejection(slot: number, time: number, spanHi: number, spanLo: number): void {
    const row = this.ensureCold(slot);
    this.cold.firstRejectionAt[row] = time;
    setSpan(this.cold.firstRejectionSpan, row, spanHi, spanLo);
  }

  // --- The current episode of attempts ----------------------------------------------------------

  episodeAttemptCount(slot: number): number {
    return this.cold.episodeAttempts[this.hot.coldRow[slot]!]!;
  }

  firstAttemptAt(slot: number): number {
    return this.cold.firstAttemptAt[this.hot.coldRow[slot]!]!;
  }

  lastAttemptAt(slot: number): number {
    return this.cold.lastAttemptAt[this.hot.coldRow[slot]!]!;
  }

  lastAttemptStream(slot: number): number {
    return this.cold.lastAttemptStream[this.hot.coldRow[slot]!]!;
  }

  firstAttemptSpanId(slot: number): string {
    return spanHex(this.cold.firstAttemptSpan, this.hot.coldRow[slot]!);
  }

  lastAttemptSpanId(slot: number): string {
    return spanHex(this.cold.lastAttemptSpan, this.hot.coldRow[slot]!);
  }

  lastAttemptTraceId(slot: number): string {
    const row = this.hot.coldRow[slot]!;
    let out = '';
    for (let i = 0; i < 4; i++) out += wordHex(this.cold.lastAttemptTrace[row * 4 + i]!);
    return out;
  }

  /** Counts an attempt at `time` into the episode: its count, its first attempt, its ring of latest times. */
  countAttempt(slot: number, time: number, spanHi: number, spanLo: number): void {
    const row = this.ensureCold(slot);
    this.cold.episodeAttempts[row]!++;
    if (!(time >= this.cold.firstAttemptAt[row]!)) {
      this.cold.firstAttemptAt[row] = time;
      setSpan(this.cold.firstAttemptSpan, row, spanHi, spanLo);
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
    this.cold.lastAttemptAt[row] = time;
    this.cold.lastAttemptStream[row] = stream;
    setSpan(this.cold.lastAttemptSpan, row, spanHi, spanLo);
    for (let i = 0; i < 4; i++) this.cold.lastAttemptTrace[row * 4 + i] = hexWord(traceId, i * 8);
    if (evicted) this.hot.flags[slot]! |= StormFlag.LAST_ATTEMPT_EVICTED;
    else this.hot.flags[slot]! &= ~StormFlag.LAST_ATTEMPT_EVICTED;
  }

  lastAttemptEvicted(slot: number): boolean {
    return (this.hot.flags[slot]! & StormFlag.LAST_ATTEMPT_EVICTED) !== 0;
  }

  /** The server evicted the session on the episode's latest attempt (learnt from the attempt's second span). */
  markLastAttemptEvicted(slot: number): void {
    this.hot.flags[slot]! |= StormFlag.LAST_ATTEMPT_EVICTED;
  }

  /** Removes one counted attempt, the one nearest `time`, from the episode (a poll or continuation, not an attempt). */
  withdrawAttempt(slot: number, time: number): void {
    const row = this.ensureCold(slot);
    this.cold.episodeAttempts[row]!--;
    const n = this.ringSize;
    const base = row * n;
    const ring = this.cold.attemptRing;
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
    return this.cold.attemptRing[this.hot.coldRow[slot]! * this.ringSize]!;
  }

  /** Latest attempt time of the episode by the ring. */
  newestRingTime(slot: number): number {
    return this.cold.attemptRing[this.hot.coldRow[slot]! * this.ringSize + this.ringSize - 1]!;
  }

  /** Starts a new episode: no attempt counted, the storm state of the old one cleared. */
  resetEpisode(slot: number): void {
    const row = this.ensureCold(slot);
    this.cold.episodeAttempts[row] = 0;
    this.cold.firstAttemptAt[row] = NaN;
    this.cold.lastAttemptAt[row] = NaN;
    this.hot.flags[slot]! &= ~(StormFlag.IN_STORM | StormFlag.STORM_ENDED | StormFlag.LAST_ATTEMPT_EVICTED);
    this.cold.attemptRing.fill(NaN, row * this.ringSize, (row + 1) * this.ringSize);
  }

  // --- Storms -----------------------------------------------------------------------------------

  /** Whether the current episode is a reported storm (ended or not, until it is retired). */
  inStorm(slot: number): boolean {
    return (this.hot.flags[slot]! & StormFlag.IN_STORM) !== 0;
  }

  startStorm(slot: number): void {
    this.hot.flags[slot]! |= StormFlag.IN_STORM;
  }

  /** Whether the current storm has ended (its storm_ended record then waits for settleMs). */
  stormEnded(slot: number): boolean {
    return (this.hot.flags[slot]! & StormFlag.STORM_ENDED) !== 0;
  }

  /** The current storm's end, or the last attempt of the last storm retired; NaN if none. */
  stormEndAt(slot: number): number {
    return this.cold.stormEndAt[this.hot.coldRow[slot]!]!;
  }

  endStorm(slot: number, at: number): void {
    this.hot.flags[slot]! |= StormFlag.STORM_ENDED;
    this.cold.stormEndAt[this.ensureCold(slot)] = at;
  }

  /** A later attempt arrived: the storm did not end where it seemed to. */
  reopenStorm(slot: number): void {
    this.hot.flags[slot]! &= ~StormFlag.STORM_ENDED;
    this.cold.stormEndAt[this.ensureCold(slot)] = NaN;
  }

  /** The storm is being ended by force, for `reason`. */
  forceStormEnd(slot: number, reason: ForcedStormEnd): void {
    this.hot.flags[slot]! |= reason === StormEnd.SHUTDOWN ? StormFlag.ENDED_BY_SHUTDOWN : StormFlag.ENDED_BY_DROP;
  }

  /** How the current storm ended. */
  stormEndedBy(slot: number): StormEnd {
    const flags = this.hot.flags[slot]!;
    if (flags & StormFlag.LAST_ATTEMPT_EVICTED) return StormEnd.EVICTED;
    if (flags & StormFlag.ENDED_BY_SHUTDOWN) return StormEnd.SHUTDOWN;
    if (flags & StormFlag.ENDED_BY_DROP) return StormEnd.DROPPED;
    return StormEnd.QUIET;
  }

  /**
   * The ended storm is reported: a new episode starts, and the storm's first and last attempts and its
   * count are kept, so that a later duplicate still completes the signature with it.
   */
  retireStorm(slot: number): void {
    const row = this.ensureCold(slot);
    const attempts = this.cold.episodeAttempts[row]!;
    const first = this.cold.firstAttemptAt[row]!;
    const last = this.cold.lastAttemptAt[row]!;
    this.resetEpisode(slot);
    this.cold.stormEndAt[row] = last;
    this.cold.pastStormFirstAt[row] = first;
    this.cold.pastStormAttempts[row] = attempts;
    this.hot.flags[slot] =
      (this.hot.flags[slot]! & ~(StormFlag.ENDED_BY_SHUTDOWN | StormFlag.ENDED_BY_DROP)) | StormFlag.PAST_STORM;
  }

  /** Whether a storm of the request was reported and retired. */
  hasPastStorm(slot: number): boolean {
    return (this.hot.flags[slot]! & StormFlag.PAST_STORM) !== 0;
  }

  pastStormFirstAt(slot: number): number {
    return this.cold.pastStormFirstAt[this.hot.coldRow[slot]!]!;
  }

  pastStormAttemptCount(slot: number): number {
    return this.cold.pastStormAttempts[this.hot.coldRow[slot]!]!;
  }

  // --- Storage ----------------------------------------------------------------------------------

  /** For the state codec (state-codec.ts): a hot field's column, indexed by slot times the field's words. */
  hotColumn<F extends HotField>(field: F): Columns<HotField>[F] {
    return this.hot[field];
  }

  /** For the state codec: a cold field's column, indexed by cold row (coldRowOf) times the field's words. */
  coldColumn<F extends ColdField>(field: F): Columns<ColdField>[F] {
    return this.cold[field];
  }

  coldRowOf(slot: number): number {
    return this.hot.coldRow[slot]!;
  }

  /** The field's current column (growth replaces columns, so it is looked up at each use). */
  private columnOf(field: RequestField): Float64Array | Uint32Array {
    return REQUEST_FIELDS[field].place === 'hot' ? this.hot[field as HotField] : this.cold[field as ColdField];
  }

  /** Where a field of the request is read: its slot, or its cold row (row 0, a fresh row's values, if none). */
  private readRow(slot: number, field: RequestField): number {
    return REQUEST_FIELDS[field].place === 'hot' ? slot : this.hot.coldRow[slot]!;
  }

  /** Where a field of the request is written: its slot, or its cold row, taken if it has none. */
  private writeRow(slot: number, field: RequestField): number {
    return REQUEST_FIELDS[field].place === 'hot' ? slot : this.ensureCold(slot);
  }

  /**
   * Inserts an attempt time into the ascending, NaN-padded ring of cold row `row`, dropping the oldest
   * when it is full: the ring holds the `ringSize` latest attempts of the episode, which is all the storm
   * rule needs (threshold attempts within the window), whatever the number of attempts.
   */
  private addAttemptTime(row: number, time: number): void {
    const n = this.ringSize;
    const base = row * n;
    const ring = this.cold.attemptRing;
    if (ring[base]! >= time) return;
    ring[base] = time;
    for (let i = base; i + 1 < base + n && !(ring[i + 1]! >= time); i++) {
      ring[i] = ring[i + 1]!;
      ring[i + 1] = time;
    }
  }

  protected resetRow(slot: number): void {
    resetRow(this.hotReset, slot);
  }

  protected releaseRow(slot: number): void {
    const row = this.hot.coldRow[slot]!;
    if (row === 0) return;
    this.coldFree.push(row);
    this.hot.coldRow[slot] = 0;
  }

  protected growRows(capacity: number): void {
    const hot = this.hot as Record<HotField, Float64Array | Uint32Array>;
    for (const l of this.hotLayout) hot[l.field] = l.column = grown(l.column, capacity * l.words);
  }

  private resetCold(row: number): void {
    resetRow(this.coldReset, row);
  }

  /** Cold rows grow on their own, by doubling, up to one per slot plus row 0. */
  private growCold(): void {
    const capacity = Math.min(Math.max(64, this.coldCapacity * 2), Math.max(this.maxRequests, 1) + 1);
    const cold = this.cold as Record<ColdField, Float64Array | Uint32Array>;
    for (const l of this.coldLayout) cold[l.field] = l.column = grown(l.column, capacity * l.words);
    this.coldCapacity = capacity;
  }
}

function layout<F extends RequestField>(field: F, ringSize: number, column: Float64Array | Uint32Array): Layout<F> {
  return { field, words: wordsOf(field, ringSize), reset: resetOf(field), column };
}

/**
 * Layouts split by the type of their column, so that each loop of resetRow stores into one kind of typed
 * array only (a store site that sees both is polymorphic, and slower), and those of one word apart.
 */
interface RowReset {
  readonly floats: readonly Layout<RequestField>[];
  readonly words: readonly Layout<RequestField>[];
  /** Fields of more than one word (span ids, trace ids, the attempt ring), of either type. */
  readonly wide: readonly Layout<RequestField>[];
}

function rowReset(layouts: readonly Layout<RequestField>[]): RowReset {
  const narrow = layouts.filter((l) => l.words === 1);
  return {
    floats: narrow.filter((l) => l.column instanceof Float64Array),
    words: narrow.filter((l) => !(l.column instanceof Float64Array)),
    wide: layouts.filter((l) => l.words !== 1),
  };
}

/** Writes each field's reset value into row `row` of its column: run for every new request, so no call per field. */
function resetRow(reset: RowReset, row: number): void {
  const floats = reset.floats;
  for (let f = 0; f < floats.length; f++) {
    const l = floats[f]!;
    (l.column as Float64Array)[row] = l.reset;
  }
  const words = reset.words;
  for (let f = 0; f < words.length; f++) {
    const l = words[f]!;
    (l.column as Uint32Array)[row] = l.reset;
  }
  const wide = reset.wide;
  for (let f = 0; f < wide.length; f++) {
    const { column, words: n, reset: value } = wide[f]!;
    const at = row * n;
    for (let i = 0; i < n; i++) column[at + i] = value;
  }
}

/** Empty columns of the fields, one property each, made at once so that the object keeps one shape. */
function makeColumns<F extends RequestField>(fields: readonly F[]): Columns<F> {
  return Object.fromEntries(fields.map((f) => [f, newColumn(f, 0)])) as Columns<F>;
}

/** A copy of the column, longer. */
function grown<A extends Float64Array | Uint32Array>(column: A, length: number): A {
  const out = new (column.constructor as new (n: number) => A)(length);
  out.set(column);
  return out;
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
