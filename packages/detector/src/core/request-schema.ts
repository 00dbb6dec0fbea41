import { FINDING_KINDS, FindingKind, RETRACTABLE_KINDS, TASK_FINDING_KINDS } from '@resumewatch/semconv';

/**
 * Every fact the detector keeps per tracked request, declared once. The request table (table.ts) makes
 * its typed-array columns, their reset and their growth from this list, and the state codec
 * (state-codec.ts) writes and reads the persisted ones by these names: a new field is one line here.
 */

/** The ring of latest attempt times is as long as the storm threshold, an option: its width is known per table. */
const RING = 'ringSize';

/** How a field is stored: its array type, its words per request, and the value of a fresh row. */
export const FIELD_TYPES = {
  /** Unix ms; NaN when unknown. */
  time: { array: Float64Array, words: 1, reset: NaN },
  /** A count of spans or deliveries. */
  count: { array: Uint32Array, words: 1, reset: 0 },
  /** A 32-bit hash of a stream id; 0 for none. */
  hash: { array: Uint32Array, words: 1, reset: 0 },
  /** A span id, as two 32-bit words; 0:0 for none. */
  span: { array: Uint32Array, words: 2, reset: 0 },
  /** A trace id, as four 32-bit words. */
  trace: { array: Uint32Array, words: 4, reset: 0 },
  /** One bit per entry of FLAGS. */
  flags: { array: Uint32Array, words: 1, reset: 0 },
  /** The request's cold row in the cold columns; 0 for none (row 0 holds a fresh row's values). */
  row: { array: Uint32Array, words: 1, reset: 0 },
  /** The `ringSize` latest attempt times of the episode, ascending, NaN-padded at the front. */
  ring: { array: Float64Array, words: RING, reset: NaN },
} as const;
type FieldType = keyof typeof FIELD_TYPES;

/**
 * hot: every tracked request has it, indexed by slot. cold: only a request that was resumed, reattached,
 * or delivered a duplicate or foreign terminal has it, indexed by its cold row: most requests never are,
 * and the cold fields are most of a request's bytes.
 */
type Placement = 'hot' | 'cold';

export interface FieldSpec {
  readonly type: FieldType;
  readonly place: Placement;
  /** Written to a state file; false only for what a load rebuilds. */
  readonly persisted: boolean;
}

export const REQUEST_FIELDS = {
  // Hot.
  /** Latest time the request was seen (a span's end, or the detector's time then), for retention. */
  lastSeenAt: { type: 'time', place: 'hot', persisted: true },
  /** Findings reported once, retractions, and the storm state: FLAGS. */
  flags: { type: 'flags', place: 'hot', persisted: true },
  firstTerminalAt: { type: 'time', place: 'hot', persisted: true },
  firstTerminalStream: { type: 'hash', place: 'hot', persisted: true },
  firstTerminalSpan: { type: 'span', place: 'hot', persisted: true },
  terminalDeliveries: { type: 'count', place: 'hot', persisted: true },
  /** Deliveries on the stream of the first terminal (a replay to the same stream is no duplicate by itself). */
  firstStreamDeliveries: { type: 'count', place: 'hot', persisted: true },
  /** Terminals the instrumentation marked duplicate. */
  markedDuplicates: { type: 'count', place: 'hot', persisted: true },
  /** Storage, not a fact: a load gives the requests that had one a cold row again. */
  coldRow: { type: 'row', place: 'hot', persisted: false },

  // Cold: resumes and duplicates.
  latestResumeAt: { type: 'time', place: 'cold', persisted: true },
  latestResumeSpan: { type: 'span', place: 'cold', persisted: true },
  /** The first duplicate delivery's span. */
  duplicateSpan: { type: 'span', place: 'cold', persisted: true },
  /** Replays that delivered the terminal after one had been delivered. */
  replayedDuplicates: { type: 'count', place: 'cold', persisted: true },
  /** Replays that delivered the terminal to a stream that had not delivered it before. */
  replayedFirsts: { type: 'count', place: 'cold', persisted: true },
  /** A foreign terminal's stream: a later duplicate of it is the server's doing. */
  foreignStream: { type: 'hash', place: 'cold', persisted: true },
  // Cold: the current episode of attempts.
  episodeAttempts: { type: 'count', place: 'cold', persisted: true },
  firstAttemptAt: { type: 'time', place: 'cold', persisted: true },
  firstAttemptSpan: { type: 'span', place: 'cold', persisted: true },
  lastAttemptAt: { type: 'time', place: 'cold', persisted: true },
  lastAttemptStream: { type: 'hash', place: 'cold', persisted: true },
  lastAttemptSpan: { type: 'span', place: 'cold', persisted: true },
  /** For findings completed by the clock, which have no span of their own to name. */
  lastAttemptTrace: { type: 'trace', place: 'cold', persisted: true },
  attemptRing: { type: 'ring', place: 'cold', persisted: true },
  // Cold: the storm, the end of the current one or the numbers of the last one reported.
  stormEndAt: { type: 'time', place: 'cold', persisted: true },
  pastStormFirstAt: { type: 'time', place: 'cold', persisted: true },
  pastStormAttempts: { type: 'count', place: 'cold', persisted: true },
  // Cold: failed resumptions and what contradicts them.
  /** Resume time of the reported ambiguous_empty_replay. */
  emptyReplayAt: { type: 'time', place: 'cold', persisted: true },
  /** Time of the reported cursor_lost. */
  cursorLostAt: { type: 'time', place: 'cold', persisted: true },
  /** Latest continuation (a message on a resumed stream) of the request. */
  continuationAt: { type: 'time', place: 'cold', persisted: true },
  /** The first resume answered 400/409. */
  firstRejectionAt: { type: 'time', place: 'cold', persisted: true },
  firstRejectionSpan: { type: 'span', place: 'cold', persisted: true },
  // Cold: the client's cancellation, and a terminal that came after it.
  /** The client cancelled the request (the end of its request span, ended ErrorType.CANCELLED), and that span. */
  cancelledAt: { type: 'time', place: 'cold', persisted: true },
  cancelledSpan: { type: 'span', place: 'cold', persisted: true },
  // Cold: a result lost, and a resume that had been counted as a continuation of it.
  /** The request's end without its result: the last time of the reported lost_result. */
  lostAt: { type: 'time', place: 'cold', persisted: true },
  /** The latest resume of the request counted as `continuation` (not a partial replay), and its span. */
  countedContinuationAt: { type: 'time', place: 'cold', persisted: true },
  countedContinuationSpan: { type: 'span', place: 'cold', persisted: true },
  /** When that continuation was reported corrected (an outcome_corrected record, once per request). */
  correctedAt: { type: 'time', place: 'cold', persisted: true },
} as const satisfies Record<string, FieldSpec>;

type Fields = typeof REQUEST_FIELDS;
export type RequestField = keyof Fields;
export type HotField = { [K in RequestField]: Fields[K]['place'] extends 'hot' ? K : never }[RequestField];
export type ColdField = { [K in RequestField]: Fields[K]['place'] extends 'cold' ? K : never }[RequestField];
/** The fields of one word a rule reads and writes by name (RequestTable.read / write): a time, a count, a hash. */
export type WordField = {
  [K in RequestField]: Fields[K]['type'] extends 'time' | 'count' | 'hash' ? K : never;
}[RequestField];
/** The span-id fields, read and written by name (RequestTable.readSpan / writeSpan). */
export type SpanField = { [K in RequestField]: Fields[K]['type'] extends 'span' ? K : never }[RequestField];

/** The typed array a field's type is stored in. */
type ArrayOf<T extends FieldType> = (typeof FIELD_TYPES)[T]['array'] extends Float64ArrayConstructor
  ? Float64Array<ArrayBuffer>
  : Uint32Array<ArrayBuffer>;
/** One typed array per field, by name. */
export type Columns<K extends RequestField> = { [F in K]: ArrayOf<Fields[F]['type']> };

function fieldsIn(place: Placement): RequestField[] {
  return (Object.keys(REQUEST_FIELDS) as RequestField[]).filter((f) => REQUEST_FIELDS[f].place === place);
}
export const HOT_FIELDS = fieldsIn('hot') as readonly HotField[];
export const COLD_FIELDS = fieldsIn('cold') as readonly ColdField[];

/** Words a request holds of the field, given the table's ring size. */
export function wordsOf(field: RequestField, ringSize: number): number {
  const words = FIELD_TYPES[REQUEST_FIELDS[field].type].words;
  return words === RING ? ringSize : words;
}

export function resetOf(field: RequestField): number {
  return FIELD_TYPES[REQUEST_FIELDS[field].type].reset;
}

export function newColumn<F extends RequestField>(field: F, length: number): Columns<F>[F] {
  return new FIELD_TYPES[REQUEST_FIELDS[field].type].array(length) as Columns<F>[F];
}

// ---------------------------------------------------------------------------------------------------
// The flags: one bit each, by name. Their bits follow this list's order; a state file names them.
// ---------------------------------------------------------------------------------------------------

/** The storm state of the request's current episode of attempts. */
const STORM_FLAGS = [
  /** The episode reached the storm threshold and reconnect_storm was reported. */
  'inStorm',
  /** The current storm has ended (quiet window, eviction or forced end); its storm_ended record waits for settleMs. */
  'stormEnded',
  /** The episode's latest attempt was answered 400/404/409: the server evicted the session, so a storm ends there. */
  'lastAttemptEvicted',
  /** A storm of this request was reported and retired (its numbers: pastStormFirstAt, stormEndAt, pastStormAttempts). */
  'pastStorm',
  /** Why an open storm was ended by force: the detector's input ended, or the request's state was dropped. */
  'endedByShutdown',
  'endedByDrop',
] as const;

/**
 * The findings reported at most once per request, whatever the order in which its spans arrive: every
 * finding kind but reconnect_storm, which is reported once per episode (its state is the storm flags).
 * A new finding kind gets its bit here without a line of its own. A task's findings are kept by task
 * (core/tasks.ts), not by request: they take no bit, so the flags (and state files) stay as they were.
 */
const REQUEST_KINDS = FINDING_KINDS.filter((k) => !TASK_FINDING_KINDS.includes(k));
const REPORTED_ONCE = REQUEST_KINDS.filter((k) => k !== FindingKind.RECONNECT_STORM);
const REQUEST_RETRACTABLE = RETRACTABLE_KINDS.filter((k) => !TASK_FINDING_KINDS.includes(k));

/** Every flag, by name: the bit of flag FLAGS[i] is 1 << i. */
export const FLAGS: readonly string[] = [
  ...STORM_FLAGS,
  ...REPORTED_ONCE.map((k) => `reported:${k}`),
  // A retraction is reported once too.
  ...REQUEST_RETRACTABLE.map((k) => `retracted:${k}`),
];
if (FLAGS.length > 32) throw new Error(`${FLAGS.length} request flags do not fit the 32 bits of the flags field`);

function bit(name: string): number {
  return 1 << FLAGS.indexOf(name);
}

export const StormFlag = {
  IN_STORM: bit('inStorm'),
  STORM_ENDED: bit('stormEnded'),
  LAST_ATTEMPT_EVICTED: bit('lastAttemptEvicted'),
  PAST_STORM: bit('pastStorm'),
  ENDED_BY_SHUTDOWN: bit('endedByShutdown'),
  ENDED_BY_DROP: bit('endedByDrop'),
} as const;

function bitsBy(kinds: readonly FindingKind[], prefix: string): Readonly<Record<FindingKind, number>> {
  const out = {} as Record<FindingKind, number>;
  for (const kind of FINDING_KINDS) out[kind] = kinds.includes(kind) ? bit(`${prefix}${kind}`) : 0;
  return out;
}
/** The flag of each finding kind reported once per request; 0 for reconnect_storm. */
export const REPORTED_FLAG = bitsBy(REPORTED_ONCE, 'reported:');
/** The flag of each retractable kind's retraction; 0 for the others. */
export const RETRACTED_FLAG = bitsBy(REQUEST_RETRACTABLE, 'retracted:');
