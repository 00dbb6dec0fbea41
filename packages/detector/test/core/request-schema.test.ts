import { FINDING_KINDS, FindingKind, RETRACTABLE_KINDS, TASK_FINDING_KINDS } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import {
  COLD_FIELDS,
  FIELD_TYPES,
  FLAGS,
  HOT_FIELDS,
  REPORTED_FLAG,
  REQUEST_FIELDS,
  RETRACTED_FLAG,
  StormFlag,
  newColumn,
  resetOf,
  wordsOf,
  type RequestField,
} from '../../src/core/request-schema.js';

const ALL = Object.keys(REQUEST_FIELDS) as RequestField[];

describe('request schema: fields', () => {
  it('places every field hot or cold, once', () => {
    expect([...HOT_FIELDS, ...COLD_FIELDS].sort()).toEqual([...ALL].sort());
    expect(HOT_FIELDS.filter((f) => (COLD_FIELDS as readonly string[]).includes(f))).toEqual([]);
  });

  it('stores each type in its array, with its words and the value of a fresh row', () => {
    expect(newColumn('lastSeenAt', 3)).toBeInstanceOf(Float64Array);
    expect(newColumn('firstTerminalSpan', 3)).toBeInstanceOf(Uint32Array);
    expect(wordsOf('firstTerminalSpan', 3)).toBe(2);
    expect(wordsOf('lastAttemptTrace', 3)).toBe(4);
    // The ring is as long as the storm threshold of the table.
    expect(wordsOf('attemptRing', 5)).toBe(5);
    expect(resetOf('lastSeenAt')).toBeNaN();
    expect(resetOf('attemptRing')).toBeNaN();
    expect(resetOf('terminalDeliveries')).toBe(0);
    for (const field of ALL) {
      const type = FIELD_TYPES[REQUEST_FIELDS[field].type];
      // A time is NaN when unknown, and only a Float64Array holds NaN.
      expect(Number.isNaN(resetOf(field))).toBe(type.array === Float64Array);
    }
  });

  it('persists every fact, and nothing a load rebuilds: the cold-row link is storage', () => {
    expect(ALL.filter((f) => !REQUEST_FIELDS[f].persisted)).toEqual(['coldRow']);
  });
});

describe('request schema: flags', () => {
  const bits = (xs: Record<string, number>) => Object.values(xs).filter((b) => b !== 0);

  it('gives every flag its own bit, within 32', () => {
    const all = [...bits(StormFlag), ...bits(REPORTED_FLAG), ...bits(RETRACTED_FLAG)];
    expect(all).toHaveLength(FLAGS.length);
    expect(FLAGS.length).toBeLessThanOrEqual(32);
    expect(new Set(all).size).toBe(all.length);
    for (const b of all) expect(Math.log2(b >>> 0) % 1).toBe(0);
  });

  it('derives a reported-once bit for every request finding kind but reconnect_storm, which the storm flags follow', () => {
    // A task's findings are kept by task (core/tasks.ts): they take no flag of the request table.
    for (const kind of FINDING_KINDS)
      expect(REPORTED_FLAG[kind] !== 0, kind).toBe(
        kind !== FindingKind.RECONNECT_STORM && !TASK_FINDING_KINDS.includes(kind),
      );
    expect(FLAGS).toContain(`reported:${FindingKind.SIGNATURE}`);
  });

  it('derives a retracted-once bit for the retractable kinds, and only for them', () => {
    for (const kind of FINDING_KINDS)
      expect(RETRACTED_FLAG[kind] !== 0, kind).toBe(
        RETRACTABLE_KINDS.includes(kind) && !TASK_FINDING_KINDS.includes(kind),
      );
  });

  it('names each flag once', () => {
    expect(new Set(FLAGS).size).toBe(FLAGS.length);
  });
});
