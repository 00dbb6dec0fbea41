import { GuardProof, StreamKind } from '@resumewatch/semconv';
import { CursorRing, MAX_KEPT_ID_BYTES } from './cursor-ring.js';
import { hashOfId } from './id-hash.js';
import { MAX_KEPT_CHARS } from './kept-text.js';
import { keptTerminal, releasedTerminal } from './kept-terminal.js';
import { newRequestRecord, newSession, newStreamRecord, requestKey } from './observer.js';
import type { AwaitingProof, WireObserver } from './observer.js';
import type { RequestRecord, SessionRecord, StreamEnd, StreamRecord } from './types.js';

/*
 * The wire observer's state across a restart (the gateway's --state-file), as plain JSON: what the wire
 * showed and a later decision rests on, nothing else.
 *   - the sessions the server accepted, oldest first: their recent streams (ids, positions, counts, the
 *     requests each carried) and their cursor rings (each delivery's hash, its id's text while the ring
 *     still held it, its stream and position);
 *   - the request records: in flight, or finished, with their first terminal's digest and event id,
 *     whether the client proved it holds it and how (ids, method and target as kept; nothing of the
 *     request's arguments, not even their digest);
 *   - the digests of released requests' terminals, and the terminals awaiting the client's proof (by
 *     the position of their event).
 * Written in steps (snapshotObserverSteps): each session whole, with its own rows, at one step; the
 * request and released lists after the sessions, by reference to the rows written.
 * Bounded as in memory: the maps' caps apply as the records are put back (the oldest go first), a
 * session keeps at most streamsPerSession streams and cursorsPerSession deliveries, and texts are taken
 * back only up to the bounds the observer keeps them at (longer ones are refused: a foreign file).
 *
 * Not kept, because it is not a fact that survives a restart: a stream open at the snapshot (the restart
 * cuts it: it is restored as ended on error), requests in flight (none is), the connections (a proof
 * by the next request on one can no longer come: its terminals wait for the client's cursor), the
 * sessions not yet accepted, and session-less exchanges (kept apart per exchange, which the restart ends).
 * What is uncertain after a restart fails safe: a stream restored is taken to have forgotten deliveries
 * (a cursor on a stream that repeats ids is not placed), an unproven terminal stays unproven, and a
 * record the snapshot could not place (its stream not kept) is not finished by it: forwarded, reported.
 */

/** The version of the observer's section; another one is refused whole (the observer starts empty). */
export const OBSERVER_STATE_VERSION = 2;

/** Longest session id taken back (the observer keeps none longer: MAX_SESSION_ID_BYTES of observer.ts). */
const MAX_SESSION_ID = 1024;
/** Longest other text taken back: the observer keeps ids, methods and targets through keptText (a digest past MAX_KEPT_CHARS). */
const MAX_TEXT = MAX_KEPT_CHARS + 128;

const PROOFS = new Set<string>(Object.values(GuardProof));
const KINDS = new Set<string>(Object.values(StreamKind));
const ENDS = new Set<string>(['clean', 'error', 'abort']);

/**
 * One request record. Stream references are indexes into the snapshot's streams (numbered in the order
 * they are written, session after session), -1 for none; records are numbered the same way (the
 * sessions' records, then those the request list writes).
 */
interface RecordRow {
  /** Its session's id: only on a row of the request list (a session's rows take the session's). */
  s?: string;
  id: string;
  str: boolean;
  m: string;
  t: string | null;
  inr: boolean;
  /** It asked for a task (written only when true: a file of an older version has none). */
  tr?: true;
  at: number;
  rel: boolean;
  n: number;
  fin: boolean;
  p: string | null;
  fs: number;
  fe: string | null;
  fd: number | null;
  /** What the snapshot's `extra` wrote beside it (the gateway: its open request span). */
  x?: unknown;
}

interface StreamRow {
  m: string;
  f: 'sse' | 'json';
  k: string | null;
  r: number[];
  res: boolean;
  le: string | null;
  de: string | null;
  n: number;
  da: number;
  me: number;
  te: number;
  fte: number;
  poll: boolean;
  end: StreamEnd;
}

/** A delivery of a session's cursor ring: hash, id text (null: gone), stream index, position, the stream repeats ids. */
type DeliveryRow = [number, string | null, number, number, boolean];

/** Terminals awaiting the client's proof: stream index, record indexes, the position of each one's event. */
type AwaitingRow = [number, number[], number[]];

/** A session, whole: its recent streams, the records they carry, its cursor ring and its terminals awaiting proof. */
interface SessionRow {
  id: string;
  pv: string | null;
  init: boolean;
  /** Its last standalone stream, -1 for none. */
  ls: number;
  streams: StreamRow[];
  records: RecordRow[];
  ring: DeliveryRow[];
  awaiting: AwaitingRow[];
}

/** The observer's section of the state file (version 2), as snapshotObserverSteps writes it. */
export interface ObserverState {
  v: typeof OBSERVER_STATE_VERSION;
  /** The sessions, oldest first. */
  sessions: SessionRow[];
  /**
   * The request map (in flight or remembered whole), oldest first: the index of a record a session
   * wrote, or the row of one met here first.
   */
  live: (number | RecordRow)[];
  /** Released requests' terminals: key, digest, finished, proof. */
  released: [string, number, boolean, string | null][];
}

/** What a restore put back. */
export interface ObserverRestore {
  readonly sessions: number;
  readonly requests: number;
  /** The records written with an `extra` (restoreObserver's `extra` accepted each), and that extra. */
  readonly extras: readonly (readonly [RequestRecord, unknown])[];
}

/** What a snapshot writes beside a record (the gateway: its open request span), or undefined for nothing. */
type RecordExtra = (record: RequestRecord) => unknown;

/**
 * The text a step of a snapshot writes before it yields, in UTF-8 bytes: a step goes on to its next
 * session (or row of the lists) only while it wrote less. One session is written whole in one step, so a
 * step writes at most this plus one session (about 33 KiB for a full one: 32 streams, 256 deliveries).
 */
export const SNAPSHOT_STEP_BYTES = 64 * 1024;

/** How a snapshot is taken in steps. */
export interface SnapshotOptions {
  /** Written as the record row's `x`, read back by restoreObserver's `extra`. */
  extra?: RecordExtra;
  /** A step's text, in bytes, before it yields (SNAPSHOT_STEP_BYTES). */
  stepBytes?: number;
}

/**
 * The observer's section of the state file as JSON text, in steps: each `next()` walks the next
 * sessions (or rows of the request and released lists) until it wrote `stepBytes`, and returns that
 * text; the caller writes it out and lets the event loop run before the next step, so no step blocks
 * the loop longer than one step's work, whatever the number of sessions. What one snapshot holds:
 *   - each session whole as it stood at its step (its streams, the records they carry, its cursor ring,
 *     the terminals awaiting proof on its streams): one step, so consistent within itself;
 *   - sessions taken at different steps may differ in time, and none refers to another's rows;
 *   - a record is written once, at the first step that meets it, and every later row refers to that
 *     one: its state is one true state it had (a later proof is not in the file: restored unproven);
 *   - the list of sessions is copied (references, at most --max-sessions) when the walk starts; a
 *     session that left it before its step is left out, one that came after is not in the file (as
 *     anything after a snapshot is not);
 *   - the request and released lists are walked as they stand at each step (keysAsWalked): what left
 *     them before its step is left out, what came since may be in.
 * Memory: one step's text; the copied list of sessions; the index of each record of the request map
 * written (at most --max-requests entries); and one session's rows at a time. Never the section whole,
 * never a row per session kept.
 * Fail safe: nothing in the file says more than the wire showed at some instant before it was written,
 * and what happened between two steps is at worst missing, so a restored record is at worst less proven
 * than it was: its result forwarded and reported, never withheld.
 */
export function* snapshotObserverSteps(observer: WireObserver, options: SnapshotOptions = {}): Generator<string> {
  const maps = observer.stateAccess();
  const stepBytes = options.stepBytes ?? SNAPSHOT_STEP_BYTES;
  const extra = options.extra;
  // The index of each record of the request map written with its session, for the request list's
  // reference to it (a record enters that map when it is made, never later): at most --max-requests.
  const liveIndex = new Map<RequestRecord, number>();
  let records = 0;
  let streams = 0;
  let text = `{"v":${OBSERVER_STATE_VERSION},"sessions":[`;
  let bytes = text.length;
  let rows = 0;
  /** Appends one row's JSON; true when the step has written its share. */
  const put = (json: string): boolean => {
    const piece = rows++ === 0 ? json : `,${json}`;
    text += piece;
    bytes += Buffer.byteLength(piece);
    return bytes >= stepBytes;
  };
  const take = (): string => {
    const out = text;
    text = '';
    bytes = 0;
    return out;
  };
  const recordRow = (record: RequestRecord, streamAt: Map<StreamRecord, number> | undefined): RecordRow => {
    const row: RecordRow = {
      id: record.id,
      str: record.idIsString,
      m: record.method,
      t: record.target ?? null,
      inr: record.inputRound,
      at: record.startedAt,
      rel: record.released,
      n: record.terminalCount,
      fin: record.finished,
      p: record.proof ?? null,
      // Its first terminal's stream among its session's, as written (-1, not placed: fail safe).
      fs: record.firstTerminalStream ? (streamAt?.get(record.firstTerminalStream) ?? -1) : -1,
      fe: keptId(record.firstTerminalEventId),
      fd: record.firstTerminalDigest ?? null,
    };
    if (record.taskRequested) row.tr = true;
    // A session's records take its id; a record of the request list alone says its own.
    if (streamAt === undefined) row.s = record.sessionId;
    const x = extra?.(record);
    if (x !== undefined) row.x = x;
    return row;
  };

  for (const session of maps.sessions.values()) {
    // Left (or replaced) since the list was copied: not kept, as it is not in the observer any more.
    if (maps.sessions.get(session.id) !== session) continue;
    // The session's streams and records, by their index in the file: its own maps, at most 32 streams
    // and the records they carry, dropped after its step.
    const streamAt = new Map<StreamRecord, number>();
    for (const stream of session.streams) streamAt.set(stream, streams++);
    const recordAt = new Map<RequestRecord, number>();
    const own: RecordRow[] = [];
    // A record is written once, with its session.
    const ref = (record: RequestRecord): number => {
      let i = recordAt.get(record);
      if (i !== undefined) return i;
      // Session-less exchanges are kept apart per exchange: a restart ends them (see the header).
      if (record.sessionId !== session.id) return -1;
      i = records++;
      recordAt.set(record, i);
      if (maps.requests.get(record.key) === record) liveIndex.set(record, i);
      own.push(recordRow(record, streamAt));
      return i;
    };
    const streamRows: StreamRow[] = session.streams.map((stream) => ({
      m: stream.httpMethod,
      f: stream.format,
      k: stream.kind ?? null,
      r: stream.requests.map(ref).filter((i) => i >= 0),
      res: stream.isResume,
      le: keptId(stream.lastEventId),
      de: keptId(stream.deliveredEventId),
      n: stream.deliveredEvents,
      da: stream.deliveredEventAt,
      me: stream.messageEvents,
      te: stream.terminalEvents,
      fte: stream.foreignTerminalEvents,
      poll: stream.pollingAnnounced,
      // Open at the snapshot: the restart cuts it.
      end: stream.ended ?? 'error',
    }));
    const awaiting: AwaitingRow[] = [];
    for (const stream of session.streams) {
      const proof = maps.awaitingDelivery?.get(stream);
      if (proof === undefined) continue;
      const at: number[] = [];
      const positions: number[] = [];
      for (let i = 0; i < proof.records.length; i++) {
        const row = ref(proof.records[i]!);
        if (row < 0) continue;
        at.push(row);
        positions.push(proof.positions[i]!);
      }
      if (at.length > 0) awaiting.push([streamAt.get(stream)!, at, positions]);
    }
    const ring: DeliveryRow[] = [];
    (session.cursors as CursorRing).forEachDelivery((hash, id, stream, position, repeats) => {
      const at = streamAt.get(stream);
      // A delivery on a stream no longer among the session's recent ones places nothing: kept as its hash alone.
      ring.push([hash, at === undefined ? null : (id ?? null), at ?? -1, position, repeats]);
    });
    const row: SessionRow = {
      id: session.id,
      pv: session.protocolVersion ?? null,
      init: session.initializedHere,
      ls: session.lastStandalone ? (streamAt.get(session.lastStandalone) ?? -1) : -1,
      streams: streamRows,
      records: own,
      ring,
      awaiting,
    };
    if (put(JSON.stringify(row))) yield take();
  }

  text += '],"live":[';
  rows = 0;
  // Walked as it stands at each step (no copy of up to --max-requests entries in one step): a record
  // made since is met too, one written again is met twice (its index then, a duplicate the restore
  // sets twice).
  for (const key of maps.requests.keysAsWalked()) {
    const record = maps.requests.get(key);
    if (record === undefined) continue;
    let i = liveIndex.get(record);
    let json: string;
    if (i !== undefined) json = String(i);
    else {
      if (record.sessionId === '') continue;
      // Met here first (its session not kept, or its streams came after the session's step): written
      // here, its streams not placed.
      i = records++;
      liveIndex.set(record, i);
      json = JSON.stringify(recordRow(record, undefined));
    }
    if (put(json)) yield take();
  }

  text += '],"released":[';
  rows = 0;
  // Walked as it stands at each step, as the request list: a key met twice is written twice, the later
  // state last (the restore keeps the last).
  for (const key of maps.released.keysAsWalked()) {
    const kept = key.startsWith('\n') ? undefined : maps.released.get(key);
    if (kept === undefined) continue;
    const terminal = releasedTerminal(kept);
    if (put(JSON.stringify([key, terminal.digest, terminal.finished, terminal.proof ?? null]))) yield take();
  }
  text += ']}';
  yield take();
}

/** The whole section at once (the gateway's shutdown, tests): every step of snapshotObserverSteps in one pass. */
export function snapshotObserverText(observer: WireObserver, options: SnapshotOptions = {}): string {
  let text = '';
  for (const step of snapshotObserverSteps(observer, options)) text += step;
  return text;
}

/**
 * Puts a snapshot back into a fresh observer (one that has seen no exchange). Everything is read and
 * checked before anything is put back: a section of another version, or with a missing, mistyped or
 * out-of-bound field, throws (one line saying why) and leaves the observer empty.
 */
export function restoreObserver(
  observer: WireObserver,
  section: unknown,
  /** Checks a record's `x` (what the snapshot's `extra` wrote); false refuses the section whole. */
  extra: (x: unknown) => boolean = () => false,
): ObserverRestore {
  const maps = observer.stateAccess();
  if (maps.sessions.size > 0 || maps.requests.size > 0) throw new Error('the observer has seen exchanges already');
  const state = flatten(object(section, 'section'));
  const recordRows = state.records;
  const streamRows = state.streams;
  const sessionRows = state.sessions;

  // Which session owns each stream (a stream belongs to one).
  const owner: (string | undefined)[] = new Array<string | undefined>(streamRows.length);
  for (const raw of sessionRows) {
    const row = object(raw, 'session');
    const id = text(row.id, 'session id', MAX_SESSION_ID);
    for (const i of array(row.st, 'session streams')) {
      const at = index(i, streamRows.length, 'session stream');
      if (owner[at] !== undefined) throw new Error('a stream of two sessions');
      owner[at] = id;
    }
  }

  const extras: [RequestRecord, unknown][] = [];
  const records: RequestRecord[] = recordRows.map((raw) => {
    const row = object(raw, 'record');
    const sessionId = text(row.s, 'record session', MAX_SESSION_ID);
    if (sessionId === '') throw new Error('a session-less record');
    const id = text(row.id, 'record id', MAX_TEXT);
    const isString = bool(row.str, 'record id type');
    const record = newRequestRecord(
      requestKey(sessionId, isString ? id : Number(id)),
      sessionId,
      id,
      isString,
      text(row.m, 'record method', MAX_TEXT),
      optText(row.t, 'record target', MAX_TEXT),
      // Neither the digest of its arguments nor its idempotency key: they serve the 2026-07-28 era's
      // re-issues, which no restored (session) record has, and the file keeps nothing of a request's body.
      undefined,
      bool(row.inr, 'record input round'),
      undefined,
      row.tr === undefined ? false : bool(row.tr, 'record task requested'),
      num(row.at, 'record start'),
    );
    if (!isString && String(Number(id)) !== id) throw new Error('a numeric record id that is no number');
    (record as { released: boolean }).released = bool(row.rel, 'record released');
    record.terminalCount = count(row.n, 'record terminals');
    record.finished = bool(row.fin, 'record finished');
    record.proof = optOneOf(row.p, PROOFS, 'record proof') as GuardProof | undefined;
    record.firstTerminalEventId = optText(row.fe, 'record first event id', MAX_KEPT_ID_BYTES);
    record.firstTerminalDigest = row.fd === null ? undefined : num(row.fd, 'record digest');
    if (row.x !== undefined) {
      if (!extra(row.x)) throw new Error('a malformed extra of a record');
      extras.push([record, row.x]);
    }
    return record;
  });
  const recordOf = (i: unknown): RequestRecord => records[index(i, records.length, 'record')]!;

  const streams: StreamRecord[] = streamRows.map((raw, i) => {
    const row = object(raw, 'stream');
    const sessionId = owner[i];
    if (sessionId === undefined) throw new Error('a stream of no session');
    const format = oneOf(row.f, new Set(['sse', 'json']), 'stream format') as 'sse' | 'json';
    const stream = newStreamRecord(
      maps.nextStreamId(),
      sessionId,
      text(row.m, 'stream method', 16),
      format,
      optOneOf(row.k, KINDS, 'stream kind') as StreamKind | undefined,
      array(row.r, 'stream requests').map(recordOf),
      bool(row.res, 'stream resume'),
      optText(row.de, 'stream delivered id', MAX_KEPT_ID_BYTES),
      bool(row.poll, 'stream polling'),
    );
    stream.lastEventId = optText(row.le, 'stream last id', MAX_KEPT_ID_BYTES);
    stream.deliveredEvents = count(row.n, 'stream events');
    stream.deliveredEventAt = count(row.da, 'stream delivered position');
    stream.messageEvents = count(row.me, 'stream message events');
    stream.terminalEvents = count(row.te, 'stream terminal events');
    stream.foreignTerminalEvents = count(row.fte, 'stream foreign terminals');
    stream.ended = oneOf(row.end, ENDS, 'stream end') as StreamEnd;
    return stream;
  });
  recordRows.forEach((raw, i) => {
    const fs = (raw as RecordRow).fs;
    records[i]!.firstTerminalStream = fs === -1 ? undefined : streams[index(fs, streams.length, 'first stream')];
  });

  const sessions: SessionRecord[] = sessionRows.map((raw) => {
    const row = raw as Record<string, unknown>;
    const session = newSession(row.id as string, optText(row.pv, 'session version', MAX_TEXT), maps.cursorsPerSession);
    session.accepted = true;
    session.used = true;
    session.initializedHere = bool(row.init, 'session initialized here');
    // The latest streamsPerSession, as in memory (an array of exact size, as the observer keeps it).
    const own = (row.st as number[]).map((i) => streams[i]!);
    session.streams = own.slice(-maps.streamsPerSession);
    session.lastStandalone =
      row.ls === -1
        ? undefined
        : session.streams.find((s) => s === streams[index(row.ls, streams.length, 'standalone')]);
    const ring = session.cursors as CursorRing;
    for (const delivery of array(row.ring, 'ring')) {
      const [hash, id, at, position, repeats] = array(delivery, 'delivery');
      const stream = at === -1 ? undefined : streams[index(at, streams.length, 'delivery stream')];
      if (stream !== undefined && !own.includes(stream)) throw new Error('a delivery on another session’s stream');
      // A delivery on a stream not kept is its hash alone: it may make a cursor ambiguous, never place one.
      const idText = stream === undefined ? undefined : optText(id, 'delivery id', MAX_KEPT_ID_BYTES);
      ring.restore(
        // A kept id's hash is its own, whatever the file says (a cursor is matched by hash, then by text).
        idText === undefined ? int(hash, 'delivery hash') : hashOfId(idText),
        idText,
        stream ?? UNKEPT_STREAM,
        count(position, 'delivery position'),
        bool(repeats, 'delivery repeats'),
      );
    }
    return session;
  });

  const live = array(state.live, 'list of records in flight').map(recordOf);
  const released = array(state.released, 'released').map((raw) => {
    const [key, digest, finished, proof] = array(raw, 'released terminal');
    const k = text(key, 'released key', MAX_SESSION_ID + MAX_TEXT + 2);
    if (k.startsWith('\n')) throw new Error('a session-less released terminal');
    return [
      k,
      keptTerminal(
        num(digest, 'released digest'),
        bool(finished, 'released finished'),
        optOneOf(proof, PROOFS, 'released proof') as GuardProof | undefined,
      ),
    ] as const;
  });
  const awaiting = array(state.awaiting, 'awaiting').map((raw) => {
    const [at, rows, positions] = array(raw, 'awaiting proof');
    const stream = streams[index(at, streams.length, 'awaiting stream')]!;
    const proof: AwaitingProof = {
      records: array(rows, 'awaiting records').map(recordOf),
      positions: array(positions, 'awaiting positions').map((p) => count(p, 'awaiting position')),
    };
    if (proof.records.length !== proof.positions.length) throw new Error('awaiting records and positions differ');
    return [stream, proof] as const;
  });

  // Checked whole: now put back, oldest first, under the maps' caps.
  for (const session of sessions) maps.sessions.set(session.id, session);
  for (const record of live) maps.requests.set(record.key, record);
  for (const [key, terminal] of released) maps.released.set(key, terminal);
  // Without confirmDelivery the observer awaits no proof: those terminals stay unfinished (fail safe).
  if (maps.awaitingDelivery) for (const [stream, proof] of awaiting) maps.awaitingDelivery.set(stream, proof);
  return {
    sessions: maps.sessions.size,
    requests: maps.requests.size,
    extras,
  };
}

/** The section's rows, numbered as the snapshot wrote them: its sessions' streams and records, then the request list's records. */
interface FlatState {
  records: unknown[];
  streams: unknown[];
  sessions: Record<string, unknown>[];
  live: unknown[];
  released: unknown[];
  awaiting: unknown[];
}

/** Reads version 2's nesting (sessions hold their rows) into flat lists with the indexes the rows use. */
function flatten(state: Record<string, unknown>): FlatState {
  if (state.v !== OBSERVER_STATE_VERSION)
    throw new Error(`version ${String(state.v)}, this observer reads ${OBSERVER_STATE_VERSION}`);
  const flat: FlatState = { records: [], streams: [], sessions: [], live: [], released: [], awaiting: [] };
  for (const raw of array(state.sessions, 'session list')) {
    const row = object(raw, 'session');
    const id = text(row.id, 'session id', MAX_SESSION_ID);
    const base = flat.streams.length;
    const streams = array(row.streams, 'session streams');
    for (const stream of streams) flat.streams.push(stream);
    // A session's records are its own: they take its id.
    for (const record of array(row.records, 'session records'))
      flat.records.push({ ...object(record, 'record'), s: id });
    for (const awaiting of array(row.awaiting, 'awaiting')) flat.awaiting.push(awaiting);
    flat.sessions.push({ ...row, st: streams.map((_, k) => base + k) });
  }
  for (const entry of array(state.live, 'list of records in flight')) {
    if (typeof entry === 'number') flat.live.push(entry);
    else {
      flat.live.push(flat.records.length);
      flat.records.push(object(entry, 'record'));
    }
  }
  flat.released = array(state.released, 'released');
  return flat;
}

/** The stream a delivery on a stream not kept stands on: no cursor is ever placed on it. */
const UNKEPT_STREAM: StreamRecord = newStreamRecord('', '', 'GET', 'sse', undefined, [], false, undefined, false);

/** An event id as kept: undefined past MAX_KEPT_ID_BYTES (such a cursor is never placed). */
function keptId(id: string | undefined): string | null {
  return id !== undefined && Buffer.byteLength(id) <= MAX_KEPT_ID_BYTES ? id : null;
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${what} is not an object`);
  return value as Record<string, unknown>;
}
function array(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new Error(`${what} is not an array`);
  return value;
}
function text(value: unknown, what: string, max: number): string {
  if (typeof value !== 'string' || value.length > max)
    throw new Error(`${what} is not a string of ${max} chars at most`);
  return value;
}
function optText(value: unknown, what: string, max: number): string | undefined {
  return value === null ? undefined : text(value, what, max);
}
function bool(value: unknown, what: string): boolean {
  if (typeof value !== 'boolean') throw new Error(`${what} is not a boolean`);
  return value;
}
function num(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error(`${what} is not a number`);
  return value;
}
function int(value: unknown, what: string): number {
  if (!Number.isSafeInteger(value)) throw new Error(`${what} is not an integer`);
  return value as number;
}
function count(value: unknown, what: string): number {
  const n = int(value, what);
  if (n < 0) throw new Error(`${what} is negative`);
  return n;
}
function index(value: unknown, length: number, what: string): number {
  const n = int(value, what);
  if (n < 0 || n >= length) throw new Error(`${what} ${n} is out of range`);
  return n;
}
function oneOf(value: unknown, values: ReadonlySet<string>, what: string): string {
  if (typeof value !== 'string' || !values.has(value)) throw new Error(`${what} is not one of its values`);
  return value;
}
function optOneOf(value: unknown, values: ReadonlySet<string>, what: string): string | undefined {
  return value === null ? undefined : oneOf(value, values, what);
}
