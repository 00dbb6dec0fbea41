import type { CappedLabels } from '@resumewatch/bounded';
import { SpanReceivedResult, TASK_STATUSES, TaskLostReason } from '@resumewatch/semconv';
import type { IdSet } from './id-set.js';
import type { DetectorOptions } from './options.js';
import {
  COLD_FIELDS,
  FLAGS,
  FIELD_TYPES,
  HOT_FIELDS,
  REQUEST_FIELDS,
  wordsOf,
  type ColdField,
  type HotField,
} from './request-schema.js';
import { Fate, Reissues, emptyReissue, type Reissue } from './reissues.js';
import { NO_SLOT } from './slots.js';
import type { RequestTable } from './table.js';
import { N, NUMBER_FIELDS, STATUS_CHANGES, TICKS, TaskRecord, type PendingReissue } from './task-record.js';
import type { TaskFamily } from './tasks.js';

/**
 * Bumped whenever what a DetectorState holds changes meaning; a state of another format is not loaded.
 * 4: fields by the names of request-schema.ts, requests in LRU order, dedupe sets as their ids.
 * 5: the re-issued first attempts of the 2026-07-28 era (`reissues`); later, optionally, the live tasks
 *    (`tasks`, and the tasks family's options): a state written before them loads, with no task.
 */
export const STATE_FORMAT = 5;

/** The detector's counters since it started (or since the state it was loaded from started). */
export interface DetectorCounts {
  evictions: number;
  released: number;
  /** Spans received, by result. */
  spans: Record<SpanReceivedResult, number>;
}
const COUNT_NAMES = ['evictions', 'released', 'spans'] as const;
const SPAN_RESULTS: readonly SpanReceivedResult[] = Object.values(SpanReceivedResult);

/** A dedupe set's identities as pairs of 32-bit words, its older generation first. */
export interface IdGenerations {
  older: Uint32Array;
  newer: Uint32Array;
}

/**
 * The tracked requests, least recently touched first: loading them in this order rebuilds the LRU
 * order, and the hash index is rebuilt from their identities.
 */
export interface RequestRows {
  sessionIds: string[];
  requestIds: string[];
  /** Index of each request's service in DetectorState.services. */
  services: Uint32Array;
  /** Each request's incarnation, which the keys of its attempt and quiet streams hold. */
  incarnations: Uint32Array;
  /** The last incarnation given out, so that a restored detector gives out no key twice. */
  incarnationsGiven: number;
  /** The flag names, bit by bit: the flags field's bit i is flag flagNames[i]. */
  flagNames: string[];
  /** Every persisted hot field of request-schema.ts, by name: one value per request and word. */
  hot: Record<string, Float64Array | Uint32Array>;
  /** The requests (ascending indices into the lists above) that have cold state. */
  coldRequests: Uint32Array;
  /** Every persisted cold field, by name: one value per request of coldRequests and word. */
  cold: Record<string, Float64Array | Uint32Array>;
}

/** In ReissueRows.services: an entry whose re-issue is not known yet, only its first attempt's fate. */
const NO_REISSUE = 0xffffffff;

/**
 * The 2026-07-28 era's first attempts (reissues.ts), least recently touched first, one value per entry
 * in each field: the first attempt's fate and the span that told it, and the client request that
 * re-issued it.
 */
export interface ReissueRows {
  /** The first attempts' trace ids: the entries' keys. */
  firstTraceIds: string[];
  /** Each first attempt's fate: 0 unknown, 1 stopped, 2 completed. */
  fates: Uint32Array;
  fateSpanIds: string[];
  fateStarts: Float64Array;
  fateEnds: Float64Array;
  /** Index of the re-issue's service in DetectorState.services, NO_REISSUE when none is known. */
  services: Uint32Array;
  sessionIds: string[];
  requestIds: string[];
  traceIds: string[];
  spanIds: string[];
  /** The first attempt's request span as the re-issue named it ('' when none). */
  firstSpanIds: string[];
  starts: Float64Array;
  ends: Float64Array;
  settleTimes: Float64Array;
  /** Bit 1: reported; bit 2: the window has passed; bit 4: its lost_result reported; bit 8: that retracted. */
  flags: Uint32Array;
  /** The first attempt's own span when its stream broke (lost_result): its service (as `services`), request, span, times. */
  lostServices: Uint32Array;
  lostRequestIds: string[];
  lostSpanIds: string[];
  lostStarts: Float64Array;
  lostEnds: Float64Array;
  touchedAt: Float64Array;
}
const REISSUE_FIELDS: readonly (keyof ReissueRows)[] = [
  'firstTraceIds',
  'fates',
  'fateSpanIds',
  'fateStarts',
  'fateEnds',
  'services',
  'sessionIds',
  'requestIds',
  'traceIds',
  'spanIds',
  'firstSpanIds',
  'starts',
  'ends',
  'settleTimes',
  'flags',
  'lostServices',
  'lostRequestIds',
  'lostSpanIds',
  'lostStarts',
  'lostEnds',
  'touchedAt',
];
/** Each field of ReissueRows: the entry's property it holds, and its type in the file. */
const REISSUE_COLUMNS = {
  fates: ['fate', Uint32Array],
  fateSpanIds: ['fateSpanId', Array],
  fateStarts: ['fateStart', Float64Array],
  fateEnds: ['fateEnd', Float64Array],
  sessionIds: ['sessionId', Array],
  requestIds: ['requestId', Array],
  traceIds: ['traceId', Array],
  spanIds: ['spanId', Array],
  firstSpanIds: ['firstSpanId', Array],
  starts: ['start', Float64Array],
  ends: ['end', Float64Array],
  settleTimes: ['settlesAt', Float64Array],
  flags: ['flags', Uint32Array],
  lostRequestIds: ['lostRequestId', Array],
  lostSpanIds: ['lostSpanId', Array],
  lostStarts: ['lostStart', Float64Array],
  lostEnds: ['lostEnd', Float64Array],
  touchedAt: ['touchedAt', Float64Array],
} as const satisfies Partial<Record<keyof ReissueRows, readonly [keyof Reissue, unknown]>>;
type ReissueColumn = keyof typeof REISSUE_COLUMNS;
const REISSUE_COLUMN_NAMES = Object.keys(REISSUE_COLUMNS) as ReissueColumn[];

/** Everything a Detector knows, as plain data: named fields, typed arrays and lists, no object layout. */
export interface DetectorState {
  format: number;
  options: DetectorOptions;
  now: number;
  counts: DetectorCounts;
  services: string[];
  requests: RequestRows;
  /** The requests (indices into requests) with a storm not yet finalized, in the order they were reported. */
  openStorms: number[];
  /** The re-issued first attempts of the 2026-07-28 era, and the first attempts whose fate a server told. */
  reissues: ReissueRows;
  spanIds: IdGenerations;
  attemptStreams: IdGenerations;
  /** Streams of polls and continuations: their reattach span is no attempt, before a restart or after it. */
  quietStreams: IdGenerations;
  /** The live tasks (tasks.ts); absent from a state written before the tasks family. */
  tasks?: TaskRows;
}

/**
 * The live task records, each service's least recently touched first, one value per task in each field
 * (the numbers and strings of task-record.ts by name), their kept poll times and status changes
 * concatenated, and the re-issues still waiting for their first attempt's task.
 */
export interface TaskRows {
  /** Index of each task's service in DetectorState.services. */
  services: Uint32Array;
  taskIds: string[];
  numbers: Record<string, Float64Array>;
  strings: Record<string, string[]>;
  /** Poll times kept per task (min(polls, TICKS)), and all of them, each task's oldest first. */
  tickCounts: Uint32Array;
  ticks: Float64Array;
  /** Status changes kept per task, and all of them as [time, status index + 1] pairs. */
  changeCounts: Uint32Array;
  changes: Float64Array;
  pending: PendingRows;
  /** Records evicted by the cap so far, and gone answers for tasks never seen created. */
  evictions: number;
  unknownGone: number;
}

/** Re-issues waiting for their first attempt's task, oldest first. */
export interface PendingRows {
  firstTraceIds: string[];
  services: Uint32Array;
  sessionIds: string[];
  requestIds: string[];
  traceIds: string[];
  spanIds: string[];
  taskIds: string[];
  starts: Float64Array;
  ends: Float64Array;
  /** 1: the re-issue carried its first attempt's idempotency key. */
  sameKeys: Uint32Array;
}
/** The string fields of a TaskRecord the state keeps, by name. */
const TASK_STRINGS = [
  'createTrace',
  'createSpan',
  'sessionId',
  'requestId',
  'deliverSpan',
  'goneSpan',
  'goneTrace',
  'lastPollSpan',
  'duplicateTaskId',
  'duplicateTrace',
] as const satisfies readonly (keyof TaskRecord)[];
const TASK_FIELDS: readonly (keyof TaskRows)[] = [
  'services',
  'taskIds',
  'numbers',
  'strings',
  'tickCounts',
  'ticks',
  'changeCounts',
  'changes',
  'pending',
  'evictions',
  'unknownGone',
];
const PENDING_STRINGS = ['firstTraceIds', 'sessionIds', 'requestIds', 'traceIds', 'spanIds', 'taskIds'] as const;
const PENDING_FIELDS: readonly (keyof PendingRows)[] = [...PENDING_STRINGS, 'services', 'starts', 'ends', 'sameKeys'];
/** The options of the tasks family: a state written before it has none of them. */
const TASK_OPTIONS: readonly (keyof DetectorOptions)[] = [
  'maxTasksPerService',
  'taskPollStormThreshold',
  'taskPollStormWindowMs',
  'taskPollsAfterGone',
];
/** The options of the loops family (its records are not kept: lost on restart): a state written before it has none of them. */
const LOOP_OPTIONS: readonly (keyof DetectorOptions)[] = [
  'sessionLoopThreshold',
  'sessionLoopWindowMs',
  'listeningLoopThreshold',
  'listeningLoopWindowMs',
];

/** A state that does not fit the detector it is loaded into (other format, other options, a missing, unknown or mistyped field). */
export class StateMismatchError extends Error {
  override readonly name = 'StateMismatchError';
}

/** The parts of a Detector that its state is made of. */
export interface DetectorParts {
  options: DetectorOptions;
  now: number;
  counts: DetectorCounts;
  services: CappedLabels<string>;
  /** Slots of the storms not yet finalized, in the order they were reported. */
  openStorms: Iterable<number>;
  table: RequestTable;
  reissues: Reissues;
  spanIds: IdSet;
  attemptStreams: IdSet;
  quietStreams: IdSet;
  tasks: TaskFamily;
}

const PERSISTED_HOT = HOT_FIELDS.filter((f) => REQUEST_FIELDS[f].persisted);
const PERSISTED_COLD = COLD_FIELDS.filter((f) => REQUEST_FIELDS[f].persisted);

/** The detector's state, copied: the detector may go on changing while it is written. */
export function writeState(parts: DetectorParts): DetectorState {
  const { table } = parts;
  const slots: number[] = [];
  for (let slot = table.oldest; slot !== NO_SLOT; slot = table.newer(slot)) slots.push(slot);
  const indexOf = new Map(slots.map((slot, i) => [slot, i]));
  const n = slots.length;
  const services = new Uint32Array(n);
  const incarnations = new Uint32Array(n);
  const coldIndices: number[] = [];
  const coldRows: number[] = [];
  slots.forEach((slot, i) => {
    services[i] = table.serviceId(slot);
    incarnations[i] = table.incarnation(slot);
    if (table.hasColdRow(slot)) {
      coldIndices.push(i);
      coldRows.push(table.coldRowOf(slot));
    }
  });
  const hot: Record<string, Float64Array | Uint32Array> = {};
  for (const field of PERSISTED_HOT) hot[field] = gather(table.hotColumn(field), slots, wordsOf(field, table.ringSize));
  const cold: Record<string, Float64Array | Uint32Array> = {};
  for (const field of PERSISTED_COLD)
    cold[field] = gather(table.coldColumn(field), coldRows, wordsOf(field, table.ringSize));
  return {
    format: STATE_FORMAT,
    options: { ...parts.options },
    now: parts.now,
    counts: { ...parts.counts },
    services: [...parts.services.keys()],
    requests: {
      sessionIds: slots.map((slot) => table.sessionId(slot)),
      requestIds: slots.map((slot) => table.requestId(slot)),
      services,
      incarnations,
      incarnationsGiven: table.incarnationsGiven,
      flagNames: [...FLAGS],
      hot,
      coldRequests: Uint32Array.from(coldIndices),
      cold,
    },
    openStorms: [...parts.openStorms].map((slot) => indexOf.get(slot)!),
    reissues: reissueRows(parts.reissues),
    spanIds: parts.spanIds.generations(),
    attemptStreams: parts.attemptStreams.generations(),
    quietStreams: parts.quietStreams.generations(),
    tasks: taskRows(parts.tasks),
  };
}

/** What a loaded state gives back that the detector holds itself. */
export interface LoadedState {
  now: number;
  counts: DetectorCounts;
  /** Slots of the open storms, in their order. */
  openStorms: number[];
}

/**
 * Loads writeState() of a detector with the same options into the parts of a fresh one. Everything is
 * checked before anything is loaded: a state that does not fit (StateMismatchError, one line saying
 * why) leaves the parts as they were.
 */
export function readState(
  state: DetectorState,
  into: Omit<DetectorParts, 'now' | 'counts' | 'openStorms'>,
): LoadedState {
  const s = checked(state, into);
  const { table } = into;
  const rows = s.requests;
  for (const name of s.services) into.services.idOf(name);
  const slots = rows.sessionIds.map((session, i) =>
    table.restore(rows.services[i]!, session, rows.requestIds[i]!, rows.incarnations[i]!, rows.incarnationsGiven),
  );
  const coldRows = Array.from(rows.coldRequests, (i) => table.ensureCold(slots[i]!));
  for (const field of PERSISTED_HOT)
    scatter(rows.hot[field]!, table.hotColumn(field), slots, wordsOf(field, table.ringSize));
  for (const field of PERSISTED_COLD)
    scatter(rows.cold[field]!, table.coldColumn(field), coldRows, wordsOf(field, table.ringSize));
  remapFlags(table.hotColumn('flags'), slots, rows.flagNames);
  loadReissues(s.reissues, into.reissues);
  into.spanIds.load(s.spanIds.older, s.spanIds.newer);
  into.attemptStreams.load(s.attemptStreams.older, s.attemptStreams.newer);
  into.quietStreams.load(s.quietStreams.older, s.quietStreams.newer);
  if (s.tasks !== undefined) loadTasks(s.tasks, into.tasks);
  return { now: s.now, counts: { ...s.counts }, openStorms: s.openStorms.map((i) => slots[i]!) };
}

/** The entries as columns by field, least recently touched first. */
function reissueRows(reissues: Reissues): ReissueRows {
  const entries = [...reissues.entries()];
  const columns: Record<string, unknown> = {
    firstTraceIds: entries.map(([trace]) => trace),
    services: Uint32Array.from(entries, ([, e]) => (e.service < 0 ? NO_REISSUE : e.service)),
    lostServices: Uint32Array.from(entries, ([, e]) => (e.lostService < 0 ? NO_REISSUE : e.lostService)),
  };
  for (const name of REISSUE_COLUMN_NAMES) {
    const [property, type] = REISSUE_COLUMNS[name];
    const values = entries.map(([, e]) => e[property]);
    columns[name] = type === Array ? values : new (type as Float64ArrayConstructor)(values as number[]);
  }
  return columns as unknown as ReissueRows;
}

/** The inverse of reissueRows, into an empty Reissues, the oldest first so that its order comes back. */
function loadReissues(rows: ReissueRows, into: Reissues): void {
  rows.firstTraceIds.forEach((trace, i) => {
    const entry = emptyReissue();
    const service = rows.services[i]!;
    entry.service = service === NO_REISSUE ? -1 : service;
    const lostService = rows.lostServices[i]!;
    entry.lostService = lostService === NO_REISSUE ? -1 : lostService;
    for (const name of REISSUE_COLUMN_NAMES) {
      const [property] = REISSUE_COLUMNS[name];
      (entry as unknown as Record<string, unknown>)[property] = (rows[name] as ArrayLike<unknown>)[i];
    }
    into.restore(trace, entry);
  });
}

/** The task records and pending re-issues as columns (see TaskRows). */
function taskRows(tasks: TaskFamily): TaskRows {
  const records = tasks.records();
  const numbers: Record<string, Float64Array> = {};
  NUMBER_FIELDS.forEach((name, i) => (numbers[name] = Float64Array.from(records, (r) => r.n[i]!)));
  const strings: Record<string, string[]> = {};
  for (const name of TASK_STRINGS) strings[name] = records.map((r) => r[name]);
  strings.lostReason = records.map((r) => r.lostReason ?? '');
  const ticks = records.map((r) => r.tickTimes());
  const changes = records.map((r) => r.changes ?? []);
  const pending = tasks.pendingReissues();
  return {
    services: Uint32Array.from(records, (r) => r.service),
    taskIds: records.map((r) => r.taskId),
    numbers,
    strings,
    tickCounts: Uint32Array.from(ticks, (t) => t.length),
    ticks: Float64Array.from(ticks.flat()),
    changeCounts: Uint32Array.from(changes, (c) => c.length / 2),
    changes: Float64Array.from(changes.flat()),
    pending: {
      firstTraceIds: pending.map(([trace]) => trace),
      services: Uint32Array.from(pending, ([, p]) => p.service),
      sessionIds: pending.map(([, p]) => p.sessionId),
      requestIds: pending.map(([, p]) => p.requestId),
      traceIds: pending.map(([, p]) => p.traceId),
      spanIds: pending.map(([, p]) => p.spanId),
      taskIds: pending.map(([, p]) => p.taskId),
      starts: Float64Array.from(pending, ([, p]) => p.start),
      ends: Float64Array.from(pending, ([, p]) => p.end),
      sameKeys: Uint32Array.from(pending, ([, p]) => (p.sameKey ? 1 : 0)),
    },
    evictions: tasks.evictions,
    unknownGone: tasks.unknownGone,
  };
}

/** The inverse of taskRows, into an empty family. */
function loadTasks(rows: TaskRows, into: TaskFamily): void {
  let tick = 0;
  let change = 0;
  const records = rows.taskIds.map((taskId, i) => {
    const record = new TaskRecord(rows.services[i]!, taskId);
    NUMBER_FIELDS.forEach((name, f) => (record.n[f] = rows.numbers[name]![i]!));
    for (const name of TASK_STRINGS) record[name] = rows.strings[name]![i]!;
    const reason = rows.strings.lostReason![i]!;
    record.lostReason = reason === '' ? undefined : (reason as TaskLostReason);
    // The kept poll times go back to the ring positions they had (the total count is n.polls).
    const polls = record.n[N.polls]!;
    const kept = rows.tickCounts[i]!;
    if (kept > 0) record.ticks = new Float64Array(TICKS);
    for (let k = 0; k < kept; k++) record.ticks![(polls - kept + k) % TICKS] = rows.ticks[tick++]!;
    const pairs = rows.changeCounts[i]!;
    if (pairs > 0) record.changes = Array.from(rows.changes.subarray(change, change + pairs * 2));
    change += pairs * 2;
    return record;
  });
  const p = rows.pending;
  const pending = p.firstTraceIds.map((trace, i): [string, PendingReissue] => [
    trace,
    {
      service: p.services[i]!,
      sessionId: p.sessionIds[i]!,
      requestId: p.requestIds[i]!,
      traceId: p.traceIds[i]!,
      spanId: p.spanIds[i]!,
      taskId: p.taskIds[i]!,
      start: p.starts[i]!,
      end: p.ends[i]!,
      sameKey: p.sameKeys[i] === 1,
    },
  ]);
  into.restore(records, pending, rows.evictions, rows.unknownGone);
}

/** Copies each of `rows` (`words` values each) of the column into a dense array, in order. */
function gather<A extends Float64Array | Uint32Array>(column: A, rows: readonly number[], words: number): A {
  const out = new (column.constructor as new (n: number) => A)(rows.length * words);
  for (let i = 0, o = 0; i < rows.length; i++)
    for (let w = 0, at = rows[i]! * words; w < words; w++) out[o++] = column[at + w]!;
  return out;
}

/** The inverse of gather: each value of row i goes to row rows[i] of the column. */
function scatter(
  values: Float64Array | Uint32Array,
  column: Float64Array | Uint32Array,
  rows: number[],
  words: number,
) {
  for (let i = 0, v = 0; i < rows.length; i++)
    for (let w = 0, at = rows[i]! * words; w < words; w++) column[at + w] = values[v++]!;
}

/** The file names its flags bit by bit: bits move to this version's positions of the same names. */
function remapFlags(column: Uint32Array, slots: number[], names: string[]): void {
  if (names.every((name, i) => FLAGS[i] === name)) return;
  const to = names.map((name) => 1 << FLAGS.indexOf(name));
  for (const slot of slots) {
    const from = column[slot]!;
    let flags = 0;
    for (let bit = 0; bit < to.length; bit++) if (from & (1 << bit)) flags |= to[bit]!;
    column[slot] = flags;
  }
}

// ---------------------------------------------------------------------------------------------------
// Checks: a state read from a file is untrusted data until each field is known to be what it says.
// ---------------------------------------------------------------------------------------------------

function fail(message: string): never {
  throw new StateMismatchError(message);
}

type Fields = Record<string, unknown>;

function fieldsOf(value: unknown, what: string): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || ArrayBuffer.isView(value))
    fail(`state field ${what} is not a record`);
  return value as Fields;
}

/** The record has exactly these fields. */
function exactly(value: unknown, names: readonly string[], what: string): Fields {
  const fields = fieldsOf(value, what);
  const prefix = what === '' ? '' : `${what}.`;
  for (const name of names) if (!(name in fields)) fail(`state has no field ${prefix}${name}`);
  for (const name of Object.keys(fields))
    if (!names.includes(name)) fail(`state has an unknown field ${prefix}${name}`);
  return fields;
}

function number(value: unknown, what: string): number {
  if (typeof value !== 'number' || Number.isNaN(value)) fail(`state field ${what} is not a number`);
  return value;
}

function index(value: unknown, below: number, what: string): number {
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) >= below)
    fail(`state field ${what} is not an index below ${below}`);
  return value as number;
}

function strings(value: unknown, what: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
    fail(`state field ${what} is not a list of strings`);
  return value as string[];
}

function column<T extends Float64ArrayConstructor | Uint32ArrayConstructor>(
  value: unknown,
  type: T,
  length: number | undefined,
  what: string,
): InstanceType<T> {
  if (!(value instanceof type) || (length !== undefined && value.length !== length))
    fail(`state field ${what} is not a ${type.name}${length === undefined ? '' : ` of ${length} values`}`);
  return value as InstanceType<T>;
}

function idGenerations(value: unknown, what: string): IdGenerations {
  const f = exactly(value, ['older', 'newer'], what);
  return {
    older: column(f.older, Uint32Array, undefined, `${what}.older`),
    newer: column(f.newer, Uint32Array, undefined, `${what}.newer`),
  };
}

const STATE_FIELDS: readonly (keyof DetectorState)[] = [
  'format',
  'options',
  'now',
  'counts',
  'services',
  'requests',
  'openStorms',
  'reissues',
  'spanIds',
  'attemptStreams',
  'quietStreams',
  'tasks',
];
const ROW_FIELDS: readonly (keyof RequestRows)[] = [
  'sessionIds',
  'requestIds',
  'services',
  'incarnations',
  'incarnationsGiven',
  'flagNames',
  'hot',
  'coldRequests',
  'cold',
];

/** The state, each field checked against the detector it is to be loaded into. */
function checked(state: unknown, into: Omit<DetectorParts, 'now' | 'counts' | 'openStorms'>): DetectorState {
  const s = fieldsOf(state, 'state');
  if (s.format !== STATE_FORMAT) fail(`state format ${String(s.format)}, expected ${STATE_FORMAT}`);
  // A state written before the tasks family has no `tasks` and none of its options: it loads, with no task.
  exactly(s, 'tasks' in s ? STATE_FIELDS : STATE_FIELDS.filter((f) => f !== 'tasks'), '');
  const before = fieldsOf(s.options, 'options');
  // A family's options are in a state written since it came, all of them, or none.
  const absent = [TASK_OPTIONS, LOOP_OPTIONS].filter((group) => !group.some((k) => k in before)).flat();
  const optionNames = Object.keys(into.options).filter((k) => !absent.includes(k as keyof DetectorOptions));
  const options = exactly(s.options, optionNames, 'options');
  for (const k of optionNames) {
    const v = into.options[k as keyof DetectorOptions];
    if (options[k] !== v) fail(`state was kept with ${k}=${String(options[k])}, this detector has ${v}`);
  }
  const { table } = into;
  if (table.size > 0 || into.services.size > 0 || into.reissues.size > 0 || into.tasks.size > 0)
    fail('importState needs a detector that has seen no span');
  number(s.now, 'now');
  const counts = exactly(s.counts, COUNT_NAMES, 'counts');
  number(counts.evictions, 'counts.evictions');
  number(counts.released, 'counts.released');
  const spans = exactly(counts.spans, SPAN_RESULTS, 'counts.spans');
  for (const result of SPAN_RESULTS) number(spans[result], `counts.spans.${result}`);

  const services = strings(s.services, 'services');
  const distinct = new Set(services).size;
  if (distinct !== services.length || services.length > into.services.cap)
    fail(`state holds ${services.length} services, ${Math.min(distinct, into.services.cap)} distinct within the cap`);

  const rows = exactly(s.requests, ROW_FIELDS, 'requests');
  const sessions = strings(rows.sessionIds, 'requests.sessionIds');
  const n = sessions.length;
  if (n > table.maxRequests) fail(`state holds ${n} requests, more than maxRequests ${table.maxRequests}`);
  if (strings(rows.requestIds, 'requests.requestIds').length !== n)
    fail(`state field requests.requestIds is not a list of ${n} strings`);
  const serviceIds = column(rows.services, Uint32Array, n, 'requests.services');
  for (const id of serviceIds) index(id, services.length, 'requests.services');
  const incarnations = column(rows.incarnations, Uint32Array, n, 'requests.incarnations');
  const given = number(rows.incarnationsGiven, 'requests.incarnationsGiven');
  for (const incarnation of incarnations)
    if (incarnation > given) fail('state field requests.incarnations holds one not yet given out');
  const identities = new Set<string>();
  for (let i = 0; i < n; i++) identities.add(`${serviceIds[i]}\n${sessions[i]}\n${(rows.requestIds as string[])[i]}`);
  if (identities.size !== n) fail('state field requests holds a request twice');

  const flagNames = strings(rows.flagNames, 'requests.flagNames');
  for (const name of flagNames) if (!FLAGS.includes(name)) fail(`state has an unknown flag ${name}`);
  for (const name of FLAGS) if (!flagNames.includes(name)) fail(`state has no flag ${name}`);
  if (new Set(flagNames).size !== flagNames.length) fail('state field requests.flagNames names a flag twice');

  const hot = exactly(rows.hot, PERSISTED_HOT, 'requests.hot');
  for (const field of PERSISTED_HOT) checkField(hot[field], field, n, table.ringSize, 'requests.hot');
  const coldRequests = column(rows.coldRequests, Uint32Array, undefined, 'requests.coldRequests');
  let previous = -1;
  for (const i of coldRequests) {
    if (i <= previous) fail('state field requests.coldRequests is not ascending');
    previous = index(i, n, 'requests.coldRequests');
  }
  const cold = exactly(rows.cold, PERSISTED_COLD, 'requests.cold');
  for (const field of PERSISTED_COLD)
    checkField(cold[field], field, coldRequests.length, table.ringSize, 'requests.cold');

  if (!Array.isArray(s.openStorms)) fail('state field openStorms is not a list');
  for (const i of s.openStorms as unknown[]) index(i, n, 'openStorms');
  if (new Set(s.openStorms).size !== s.openStorms.length) fail('state field openStorms names a request twice');

  checkReissues(s.reissues, services.length, into.reissues.cap);
  if ('tasks' in s) checkTasks(s.tasks, services.length, into.options.maxTasksPerService);

  for (const name of ['spanIds', 'attemptStreams', 'quietStreams'] as const) {
    const ids = idGenerations(s[name], name);
    if (!into[name].fits(ids.older) || !into[name].fits(ids.newer))
      fail(`state field ${name} does not fit a dedupe set of dedupeCapacity`);
  }
  return s as unknown as DetectorState;
}

function checkReissues(value: unknown, services: number, cap: number): void {
  const rows = exactly(value, REISSUE_FIELDS, 'reissues');
  const traces = strings(rows.firstTraceIds, 'reissues.firstTraceIds');
  const n = traces.length;
  if (n > cap) fail(`state holds ${n} re-issued first attempts, more than maxRequests ${cap}`);
  if (new Set(traces).size !== n) fail('state field reissues.firstTraceIds names a trace twice');
  for (const name of ['services', 'lostServices'] as const)
    for (const id of column(rows[name], Uint32Array, n, `reissues.${name}`))
      if (id !== NO_REISSUE) index(id, services, `reissues.${name}`);
  for (const name of REISSUE_COLUMN_NAMES) {
    const [, type] = REISSUE_COLUMNS[name];
    if (type === Array) {
      if (strings(rows[name], `reissues.${name}`).length !== n)
        fail(`state field reissues.${name} is not a list of ${n} strings`);
    } else {
      column(rows[name], type as Float64ArrayConstructor | Uint32ArrayConstructor, n, `reissues.${name}`);
    }
  }
  const fates = Object.values(Fate) as number[];
  for (const fate of rows.fates as Uint32Array)
    if (!fates.includes(fate)) fail(`state field reissues.fates holds an unknown fate ${fate}`);
}

function checkTasks(value: unknown, services: number, cap: number): void {
  const rows = exactly(value, TASK_FIELDS, 'tasks');
  const ids = strings(rows.taskIds, 'tasks.taskIds');
  const n = ids.length;
  const serviceIds = column(rows.services, Uint32Array, n, 'tasks.services');
  const perService = new Map<number, Set<string>>();
  serviceIds.forEach((id, i) => {
    index(id, services, 'tasks.services');
    const seen = perService.get(id) ?? new Set<string>();
    if (seen.has(ids[i]!)) fail('state field tasks holds a task twice');
    seen.add(ids[i]!);
    if (seen.size > Math.max(1, cap)) fail(`state holds more tasks of one service than maxTasksPerService ${cap}`);
    perService.set(id, seen);
  });
  const numbers = exactly(rows.numbers, NUMBER_FIELDS, 'tasks.numbers');
  for (const name of NUMBER_FIELDS) column(numbers[name], Float64Array, n, `tasks.numbers.${name}`);
  const texts = exactly(rows.strings, [...TASK_STRINGS, 'lostReason'], 'tasks.strings');
  for (const name of [...TASK_STRINGS, 'lostReason'])
    if (strings(texts[name], `tasks.strings.${name}`).length !== n)
      fail(`state field tasks.strings.${name} is not a list of ${n} strings`);
  const reasons: string[] = ['', ...Object.values(TaskLostReason)];
  for (const reason of texts.lostReason as string[])
    if (!reasons.includes(reason)) fail(`state field tasks.strings.lostReason holds an unknown reason ${reason}`);
  const polls = numbers.polls as Float64Array;
  const status = numbers.latestStatus as Float64Array;
  const tickCounts = column(rows.tickCounts, Uint32Array, n, 'tasks.tickCounts');
  let ticks = 0;
  tickCounts.forEach((kept, i) => {
    const total = polls[i]!;
    if (!Number.isInteger(total) || total < 0 || kept !== Math.min(total, TICKS))
      fail('state field tasks.tickCounts does not match tasks.numbers.polls');
    if (!(
      Number.isNaN(status[i]!) ||
      (Number.isInteger(status[i]!) && status[i]! >= 1 && status[i]! <= TASK_STATUSES.length)
    ))
      fail('state field tasks.numbers.latestStatus holds an unknown status');
    ticks += kept;
  });
  column(rows.ticks, Float64Array, ticks, 'tasks.ticks');
  const changeCounts = column(rows.changeCounts, Uint32Array, n, 'tasks.changeCounts');
  let pairs = 0;
  for (const count of changeCounts) {
    if (count > STATUS_CHANGES) fail(`state field tasks.changeCounts holds more than ${STATUS_CHANGES} changes`);
    pairs += count;
  }
  const changes = column(rows.changes, Float64Array, pairs * 2, 'tasks.changes');
  for (let i = 1; i < changes.length; i += 2)
    if (!Number.isInteger(changes[i]) || changes[i]! < 1 || changes[i]! > TASK_STATUSES.length)
      fail('state field tasks.changes holds an unknown status');
  const pending = exactly(rows.pending, PENDING_FIELDS, 'tasks.pending');
  const m = strings(pending.firstTraceIds, 'tasks.pending.firstTraceIds').length;
  if (m > Math.max(1, cap)) fail(`state holds ${m} pending re-issues, more than maxTasksPerService ${cap}`);
  for (const name of PENDING_STRINGS)
    if (strings(pending[name], `tasks.pending.${name}`).length !== m)
      fail(`state field tasks.pending.${name} is not a list of ${m} strings`);
  for (const id of column(pending.services, Uint32Array, m, 'tasks.pending.services'))
    index(id, services, 'tasks.pending.services');
  column(pending.starts, Float64Array, m, 'tasks.pending.starts');
  column(pending.ends, Float64Array, m, 'tasks.pending.ends');
  column(pending.sameKeys, Uint32Array, m, 'tasks.pending.sameKeys');
  number(rows.evictions, 'tasks.evictions');
  number(rows.unknownGone, 'tasks.unknownGone');
}

function checkField(value: unknown, field: HotField | ColdField, rows: number, ringSize: number, what: string): void {
  column(value, FIELD_TYPES[REQUEST_FIELDS[field].type].array, rows * wordsOf(field, ringSize), `${what}.${field}`);
}
