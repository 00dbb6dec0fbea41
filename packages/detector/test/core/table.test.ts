import { FINDING_KINDS, FindingKind, RETRACTABLE_KINDS, StormEnd } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import {
  COLD_FIELDS,
  HOT_FIELDS,
  REQUEST_FIELDS,
  resetOf,
  wordsOf,
  type RequestField,
  type SpanField,
  type WordField,
} from '../../src/core/request-schema.js';
import { RequestTable } from '../../src/core/table.js';

const RING = 3;

function add(t: RequestTable, session: string): number {
  return t.create(RequestTable.hash(0, session, '1'), 0, session, '1');
}

/** Every word of every field of the request, by field name, as read from the table's columns. */
function rowOf(t: RequestTable, slot: number): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const field of HOT_FIELDS) {
    const w = wordsOf(field, RING);
    out[field] = [...t.hotColumn(field).subarray(slot * w, (slot + 1) * w)];
  }
  const row = t.coldRowOf(slot);
  for (const field of COLD_FIELDS) {
    const w = wordsOf(field, RING);
    out[field] = [...t.coldColumn(field).subarray(row * w, (row + 1) * w)];
  }
  return out;
}

/** A fresh row; `coldRow` as the table gave it (the link to the cold row is storage, not a fact). */
function fresh(t: RequestTable, slot: number): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const field of [...HOT_FIELDS, ...COLD_FIELDS])
    out[field] = Array.from({ length: wordsOf(field, RING) }, () => resetOf(field));
  out.coldRow = [t.coldRowOf(slot)];
  return out;
}

const FIELD_NAMES = Object.keys(REQUEST_FIELDS) as RequestField[];
/** The fields a rule reads and writes by name, by their type. */
const WORD_FIELDS = FIELD_NAMES.filter((f) =>
  ['time', 'count', 'hash'].includes(REQUEST_FIELDS[f].type),
) as WordField[];
const SPAN_FIELDS = FIELD_NAMES.filter((f) => REQUEST_FIELDS[f].type === 'span') as SpanField[];

/**
 * Writes something into every fact of the request: through the table's named methods, then, by name,
 * into every field of one word or one span id they left alone (a rule's own state has no method).
 */
function scribble(t: RequestTable, slot: number, time: number): void {
  named(t, slot, time);
  for (const field of WORD_FIELDS) if (Object.is(t.read(slot, field), resetOf(field))) t.write(slot, field, time);
  for (const field of SPAN_FIELDS) if (t.readSpan(slot, field) === undefined) t.writeSpan(slot, field, 16, 17);
}

function named(t: RequestTable, slot: number, time: number): void {
  t.seenAt(slot, time);
  for (const kind of FINDING_KINDS) t.markReported(slot, kind);
  for (const kind of RETRACTABLE_KINDS) t.markRetracted(slot, kind);
  t.countTerminal(slot, true);
  t.setFirstTerminal(slot, time, 11, 1, 2);
  t.noteDuplicateSpan(slot, 3, 4);
  t.countReplayedTerminal(slot, true);
  t.countReplayedTerminal(slot, false);
  t.setForeignStream(slot, 12);
  t.noteResume(slot, time, 5, 6);
  t.noteContinuation(slot, time);
  t.setEmptyReplayAt(slot, time);
  t.setCursorLostAt(slot, time);
  t.setFirstRejection(slot, time, 7, 8);
  for (let i = 0; i < 4; i++) {
    t.countAttempt(slot, time + i, 9, 10);
    t.setLastAttempt(slot, time + i, 13, 'abcdef0123456789abcdef0123456789', 14, 15, false);
  }
  t.startStorm(slot);
  t.endStorm(slot, time + 10);
  t.forceStormEnd(slot, StormEnd.DROPPED);
  t.retireStorm(slot);
  t.countAttempt(slot, time + 20, 9, 10);
  t.setLastAttempt(slot, time + 20, 13, 'abcdef0123456789abcdef0123456789', 14, 15, false);
}

describe('request table: rows from the schema', () => {
  it('a new request reads the reset value of every field, hot and cold', () => {
    const t = new RequestTable(10, RING);
    const slot = add(t, 'a');
    expect(t.hasColdRow(slot)).toBe(false);
    expect(rowOf(t, slot)).toEqual(fresh(t, slot));
    t.ensureCold(slot);
    expect(rowOf(t, slot)).toEqual(fresh(t, slot));
  });

  it('a slot and a cold row used before are reset whole when handed out again', () => {
    const t = new RequestTable(10, RING);
    const slot = add(t, 'a');
    scribble(t, slot, 1000);
    const written = rowOf(t, slot);
    // Every field was written: a field the scribble misses would make this test prove less.
    for (const [field, words] of Object.entries(fresh(t, slot))) {
      if (field === 'coldRow') continue;
      expect(written[field], field).not.toEqual(words);
    }
    t.release(slot);
    const again = add(t, 'b');
    expect(again).toBe(slot);
    expect(rowOf(t, again)).toEqual(fresh(t, again));
    t.ensureCold(again);
    expect(rowOf(t, again)).toEqual(fresh(t, again));
  });

  it('keeps every value when its columns grow, hot past 1024 slots and cold past 64 rows', () => {
    const t = new RequestTable(3000, RING);
    const slots = Array.from({ length: 3000 }, (_, i) => add(t, `s${i}`));
    // Every third request is resumed: its cold row is taken as the cold columns grow.
    slots.forEach((slot, i) => {
      t.countTerminal(slot, false);
      t.setFirstTerminal(slot, i, i, i, i + 1);
      if (i % 3 === 0) t.noteResume(slot, i, i, 1);
    });
    slots.forEach((slot, i) => {
      expect(t.firstTerminalAt(slot)).toBe(i);
      expect(t.firstTerminalSpanId(slot)).toBe(hex(i) + hex(i + 1));
      expect(t.latestResumeAt(slot)).toBe(i % 3 === 0 ? i : NaN);
    });
  });
});

describe('request table: any field by name', () => {
  it('reads a fresh value until written, hot or cold, and writes a cold field into the cold row it takes', () => {
    const t = new RequestTable(10, RING);
    const slot = add(t, 'a');
    expect(t.read(slot, 'firstTerminalAt')).toBeNaN();
    expect(t.read(slot, 'continuationAt')).toBeNaN();
    expect(t.readSpan(slot, 'duplicateSpan')).toBeUndefined();
    expect(t.hasColdRow(slot)).toBe(false);
    t.write(slot, 'terminalDeliveries', 2);
    expect(t.hasColdRow(slot)).toBe(false);
    t.write(slot, 'continuationAt', 1234);
    t.writeSpan(slot, 'duplicateSpan', 0xabc, 0xdef);
    expect(t.hasColdRow(slot)).toBe(true);
    expect([t.read(slot, 'terminalDeliveries'), t.read(slot, 'continuationAt')]).toEqual([2, 1234]);
    expect(t.readSpan(slot, 'duplicateSpan')).toBe(hex(0xabc) + hex(0xdef));
    expect([t.continuationAt(slot), t.duplicateSpanId(slot)]).toEqual([1234, hex(0xabc) + hex(0xdef)]);
    // The named methods and the names read the same columns.
    t.setFirstRejection(slot, 99, 1, 2);
    expect([t.read(slot, 'firstRejectionAt'), t.readSpan(slot, 'firstRejectionSpan')]).toEqual([99, hex(1) + hex(2)]);
    // Another request's row is its own.
    const other = add(t, 'b');
    expect(t.read(other, 'continuationAt')).toBeNaN();
  });
});

describe('request table: facts', () => {
  it('reports each kind once, independently of the others and of its retraction', () => {
    const t = new RequestTable(10, RING);
    const slot = add(t, 'a');
    t.markReported(slot, FindingKind.CURSOR_LOST);
    expect(FINDING_KINDS.filter((k) => t.wasReported(slot, k))).toEqual([FindingKind.CURSOR_LOST]);
    expect(t.wasRetracted(slot, FindingKind.CURSOR_LOST)).toBe(false);
    t.markRetracted(slot, FindingKind.CURSOR_LOST);
    expect(t.wasRetracted(slot, FindingKind.CURSOR_LOST)).toBe(true);
    expect(t.wasRetracted(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY)).toBe(false);
    // Reported flags leave the storm state alone.
    expect([t.inStorm(slot), t.stormEnded(slot), t.hasPastStorm(slot)]).toEqual([false, false, false]);
  });

  it('counts a duplicate by the evidence that counts most', () => {
    const t = new RequestTable(10, RING);
    const slot = add(t, 'a');
    t.countTerminal(slot, false);
    t.setFirstTerminal(slot, 100, 1, 0, 1);
    expect(t.duplicateDeliveries(slot)).toBe(0);
    t.countTerminal(slot, false);
    expect(t.duplicateDeliveries(slot)).toBe(1);
    t.countReplayedTerminal(slot, true);
    t.countReplayedTerminal(slot, true);
    expect(t.duplicateDeliveries(slot)).toBe(2);
  });

  it('keeps the ring of the latest attempt times ascending, and withdraws the attempt nearest a time', () => {
    const t = new RequestTable(10, RING);
    const slot = add(t, 'a');
    for (const time of [50, 10, 30, 40]) t.countAttempt(slot, time, 0, 1);
    expect(t.episodeAttemptCount(slot)).toBe(4);
    expect(t.firstAttemptAt(slot)).toBe(10);
    expect([t.oldestRingTime(slot), t.newestRingTime(slot)]).toEqual([30, 50]);
    t.withdrawAttempt(slot, 41);
    expect(t.episodeAttemptCount(slot)).toBe(3);
    expect(t.oldestRingTime(slot)).toBeNaN();
    expect(t.newestRingTime(slot)).toBe(50);
  });

  it('follows a storm from its start to its retirement, and says how it ended', () => {
    const t = new RequestTable(10, RING);
    const slot = add(t, 'a');
    for (const time of [1, 2, 3]) {
      t.countAttempt(slot, time, 0, time);
      t.setLastAttempt(slot, time, 7, 'abcdef0123456789abcdef0123456789', 0, time, false);
    }
    t.startStorm(slot);
    t.endStorm(slot, 60_003);
    expect([t.inStorm(slot), t.stormEnded(slot), t.stormEndedBy(slot)]).toEqual([true, true, StormEnd.QUIET]);
    t.reopenStorm(slot);
    expect([t.stormEnded(slot), t.stormEndAt(slot)]).toEqual([false, NaN]);
    t.forceStormEnd(slot, StormEnd.SHUTDOWN);
    t.endStorm(slot, 60_003);
    expect(t.stormEndedBy(slot)).toBe(StormEnd.SHUTDOWN);
    t.markLastAttemptEvicted(slot);
    expect(t.stormEndedBy(slot)).toBe(StormEnd.EVICTED);
    expect(t.lastAttemptTraceId(slot)).toBe('abcdef0123456789abcdef0123456789');
    t.retireStorm(slot);
    expect([t.inStorm(slot), t.stormEnded(slot), t.hasPastStorm(slot)]).toEqual([false, false, true]);
    expect([t.pastStormFirstAt(slot), t.stormEndAt(slot), t.pastStormAttemptCount(slot)]).toEqual([1, 3, 3]);
    expect(t.episodeAttemptCount(slot)).toBe(0);
    expect(t.stormEndedBy(slot)).toBe(StormEnd.QUIET);
  });
});

function hex(n: number): string {
  return n.toString(16).padStart(8, '0');
}
