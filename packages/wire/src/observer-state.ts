import { GuardProof, StreamKind } from '@resumewatch/semconv';
import { CursorRing, MAX_KEPT_ID_BYTES } from './cursor-ring.js';
import { hashOfId } from './id-hash.js';
import { MAX_KEPT_CHARS } from './kept-text.js';
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
export const OBSERVER_STATE_VERSION = 1;

/** Longest session id taken back (the observer keeps none longer: MAX_SESSION_ID_BYTES of observer.ts). */
const MAX_SESSION_ID = 1024;
/** Longest other text taken back: the observer keeps ids, methods and targets through keptText (a digest past MAX_KEPT_CHARS). */
const MAX_TEXT = MAX_KEPT_CHARS + 128;

const PROOFS = new Set<string>(Object.values(GuardProof));
const KINDS = new Set<string>(Object.values(StreamKind));
const ENDS = new Set<string>(['clean', 'error', 'abort']);

/** One request record. Stream references are indexes into `streams`, -1 for none. */
interface RecordRow {
  s: string;
  id: string;
  str: boolean;
  m: string;
  t: string | null;
  inr: boolean;
  at: number;
  rel: boolean;
  n: number;
  fin: boolean;
  p: string | null;
  fs: number;
  fe: string | null;
  fd: number | null;
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

interface SessionRow {
  id: string;
  pv: string | null;
  init: boolean;
  st: number[];
  ls: number;
  ring: DeliveryRow[];
}

/** The observer's section of the state file (version 1). */
export interface ObserverState {
  v: typeof OBSERVER_STATE_VERSION;
  records: RecordRow[];
  streams: StreamRow[];
  sessions: SessionRow[];
  /** Indexes of the records in flight or remembered whole (the request map), oldest first. */
  live: number[];
  /** Released requests' terminals: key, digest, finished, proof. */
  released: [string, number, boolean, string | null][];
  /** Terminals awaiting the client's proof: stream index, record indexes, the position of each one's event. */
  awaiting: [number, number[], number[]][];
}

/** A snapshot, and the index of each record it holds (for a listener's part that names records). */
export interface ObserverSnapshot {
  readonly state: ObserverState;
  /** The record's index in `state.records`, -1 when it is not kept. */
  indexOf(record: RequestRecord): number;
}

/** What a restore put back, and the restored record at each index of the section. */
export interface ObserverRestore {
  readonly sessions: number;
  readonly requests: number;
  recordAt(index: number): RequestRecord | undefined;
}

/** Walks the observer's records now (snapshot time only): its section of the state file. */
export function snapshotObserver(observer: WireObserver): ObserverSnapshot {
  const maps = observer.stateAccess();
  const records: RecordRow[] = [];
  const recordIndex = new Map<RequestRecord, number>();
  const streams: StreamRow[] = [];
  const streamIndex = new Map<StreamRecord, number>();
  const sessions: SessionRow[] = [];
  // Streams first (a record names its first terminal's stream), then their records.
  const kept: StreamRecord[] = [];
  for (const session of maps.sessions.values()) {
    for (const stream of session.streams) {
      streamIndex.set(stream, kept.length);
      kept.push(stream);
    }
  }
  const indexOfRecord = (record: RequestRecord): number => {
    let i = recordIndex.get(record);
    if (i !== undefined) return i;
    // Session-less exchanges are kept apart per exchange: a restart ends them (see the header).
    if (record.sessionId === '') return -1;
    i = records.length;
    recordIndex.set(record, i);
    records.push({
      s: record.sessionId,
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
      fs: record.firstTerminalStream ? (streamIndex.get(record.firstTerminalStream) ?? -1) : -1,
      fe: keptId(record.firstTerminalEventId),
      fd: record.firstTerminalDigest ?? null,
    });
    return i;
  };
  for (const stream of kept) {
    streams.push({
      m: stream.httpMethod,
      f: stream.format,
      k: stream.kind ?? null,
      r: stream.requests.map(indexOfRecord).filter((i) => i >= 0),
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
    });
  }
  for (const session of maps.sessions.values()) {
    const ring: DeliveryRow[] = [];
    (session.cursors as CursorRing).forEachDelivery((hash, id, stream, position, repeats) => {
      const at = streamIndex.get(stream);
      // A delivery on a stream no longer among the session's recent ones places nothing: kept as its hash alone.
      ring.push([hash, at === undefined ? null : (id ?? null), at ?? -1, position, repeats]);
    });
    sessions.push({
      id: session.id,
      pv: session.protocolVersion ?? null,
      init: session.initializedHere,
      st: session.streams.map((s) => streamIndex.get(s)!),
      ls: session.lastStandalone ? (streamIndex.get(session.lastStandalone) ?? -1) : -1,
      ring,
    });
  }
  const live: number[] = [];
  for (const record of maps.requests.values()) {
    const i = indexOfRecord(record);
    if (i >= 0) live.push(i);
  }
  const released: ObserverState['released'] = [];
  for (const [key, terminal] of maps.released.entries()) {
    if (key.startsWith('\n')) continue;
    released.push([key, terminal.digest, terminal.finished, terminal.proof ?? null]);
  }
  const awaiting: ObserverState['awaiting'] = [];
  if (maps.awaitingDelivery) {
    for (const [stream, proof] of maps.awaitingDelivery.entries()) {
      const at = streamIndex.get(stream);
      if (at === undefined) continue;
      const rows: number[] = [];
      const positions: number[] = [];
      for (let i = 0; i < proof.records.length; i++) {
        const row = indexOfRecord(proof.records[i]!);
        if (row < 0) continue;
        rows.push(row);
        positions.push(proof.positions[i]!);
      }
      if (rows.length > 0) awaiting.push([at, rows, positions]);
    }
  }
  const state: ObserverState = { v: OBSERVER_STATE_VERSION, records, streams, sessions, live, released, awaiting };
  return { state, indexOf: (record) => recordIndex.get(record) ?? -1 };
}

/**
 * Puts a snapshot back into a fresh observer (one that has seen no exchange). Everything is read and
 * checked before anything is put back: a section of another version, or with a missing, mistyped or
 * out-of-bound field, throws (one line saying why) and leaves the observer empty.
 */
export function restoreObserver(observer: WireObserver, section: unknown): ObserverRestore {
  const maps = observer.stateAccess();
  if (maps.sessions.size > 0 || maps.requests.size > 0) throw new Error('the observer has seen exchanges already');
  const state = object(section, 'section');
  if (state.v !== OBSERVER_STATE_VERSION)
    throw new Error(`version ${String(state.v)}, this observer reads ${OBSERVER_STATE_VERSION}`);
  const recordRows = array(state.records, 'records');
  const streamRows = array(state.streams, 'streams');
  const sessionRows = array(state.sessions, 'session list');

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
      num(row.at, 'record start'),
    );
    if (!isString && String(Number(id)) !== id) throw new Error('a numeric record id that is no number');
    (record as { released: boolean }).released = bool(row.rel, 'record released');
    record.terminalCount = count(row.n, 'record terminals');
    record.finished = bool(row.fin, 'record finished');
    record.proof = optOneOf(row.p, PROOFS, 'record proof') as GuardProof | undefined;
    record.firstTerminalEventId = optText(row.fe, 'record first event id', MAX_KEPT_ID_BYTES);
    record.firstTerminalDigest = row.fd === null ? undefined : num(row.fd, 'record digest');
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
    // The latest streamsPerSession, as in memory.
    const own = (row.st as number[]).map((i) => streams[i]!);
    session.streams.push(...own.slice(-maps.streamsPerSession));
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
      {
        digest: num(digest, 'released digest'),
        finished: bool(finished, 'released finished'),
        proof: optOneOf(proof, PROOFS, 'released proof') as GuardProof | undefined,
      },
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
    recordAt: (i) => (Number.isInteger(i) && i >= 0 && i < records.length ? records[i] : undefined),
  };
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
