import { FindingKind, TASK_FINDING_KINDS, TaskGone, TaskShape, TaskStatus } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { Detector, StateMismatchError, type DetectorState, type Finding, type SpanRecord } from '../../src/index.js';
import { T0 } from '../helpers/spans.js';
import { createTask, getTask, newTrace, reissueCall, statusNotification, taskResult } from '../helpers/task-spans.js';

const TTL = 60_000;

/**
 * A sequence that exercises every part of a task record: a task lost by its ttl, one whose "not found"
 * waits for its ttl, a poll storm, a retraction, and a re-issue that waits for its first attempt's
 * task. Each span is followed by advance() to its end, as a receiver's clock would.
 */
function sequence(): SpanRecord[] {
  const trace = newTrace();
  // The first attempt's client span (never fed: its reply was lost); the re-issue names it.
  const firstClient = createTask(T0, 'x', { trace });
  const spans: SpanRecord[] = [
    createTask(T0, 'ttl', { ttl: TTL }),
    statusNotification(T0 + 1_000, 'ttl', TaskStatus.COMPLETED),
    createTask(T0 + 100, 'wait', { ttl: TTL, shape: TaskShape.EXTENSION }),
    getTask(T0 + 2_000, 'wait', { gone: TaskGone.NOT_FOUND }),
    createTask(T0 + 200, 'storm', { interval: 1_000, ttl: null }),
    ...Array.from({ length: 12 }, (_, i) => getTask(T0 + 3_000 + 20 * i, 'storm', { status: TaskStatus.WORKING })),
    reissueCall(T0 + 4_000, firstClient, { sameKey: true }),
    createTask(T0 + 4_500, 'first', { service: 'srv', kind: 2, trace }),
    createTask(T0 + 5_000, 'late', { ttl: 10_000 }),
    getTask(T0 + 6_000, 'late', { status: TaskStatus.FAILED }),
    // The clock passes the late task's ttl before its result is fetched: reported, then retracted.
    getTask(T0 + 16_000, 'storm', { status: TaskStatus.WORKING }),
    taskResult(T0 + 20_000, 'late'),
    getTask(T0 + TTL + 1_000, 'storm', { status: TaskStatus.COMPLETED }),
  ];
  return spans.sort((a, b) => a.endTimeUnixMs - b.endTimeUnixMs);
}

function feed(detector: Detector, spans: SpanRecord[]): void {
  for (const s of spans) {
    detector.ingest(s);
    detector.advance(s.endTimeUnixMs);
  }
}

function taskFindings(out: Finding[]): (f: Finding) => void {
  return (f) => void (TASK_FINDING_KINDS.includes(f.kind) && out.push(f));
}

/** JSON of a state, typed arrays as plain lists: to compare two states' content. */
function comparable(state: DetectorState): unknown {
  return JSON.parse(
    JSON.stringify(state, (_k, v: unknown) => (ArrayBuffer.isView(v) ? Array.from(v as Float64Array) : v)),
  );
}

describe('the tasks section of the detector state', () => {
  it('a detector restored at any point reports what one uninterrupted detector reports', () => {
    const spans = sequence();
    const whole: Finding[] = [];
    const one = new Detector({ onFinding: taskFindings(whole) });
    feed(one, spans);
    one.advance(T0 + 10 * TTL);
    // The sequence proves something: each task rule reports (a retraction among them).
    expect(new Set(whole.map((f) => `${f.kind}:${f.record ?? ''}:${f.reason ?? ''}`))).toEqual(
      new Set([
        `${FindingKind.LOST_TASK_RESULT}::ttl_passed`,
        `${FindingKind.LOST_TASK_RESULT}:retraction:ttl_passed`,
        `${FindingKind.LOST_TASK_RESULT}::gone`,
        `${FindingKind.TASK_POLL_STORM}::faster_than_interval`,
        `${FindingKind.DUPLICATE_TASK}::`,
      ]),
    );
    for (let cut = 0; cut <= spans.length; cut++) {
      const findings: Finding[] = [];
      const before = new Detector({ onFinding: taskFindings(findings) });
      feed(before, spans.slice(0, cut));
      const state = before.exportState();
      const after = new Detector({ onFinding: taskFindings(findings) });
      after.importState(state);
      expect(after.stats(), `cut ${cut}`).toEqual(before.stats());
      expect(comparable(after.exportState()), `cut ${cut}`).toEqual(comparable(state));
      feed(after, spans.slice(cut));
      after.advance(T0 + 10 * TTL);
      expect(findings, `cut ${cut}`).toEqual(whole);
    }
  });

  it('keeps the timeline and the counts across a restart', () => {
    const spans = sequence();
    const before = new Detector({ maxTasksPerService: 2 });
    feed(before, spans.slice(0, 12));
    const after = new Detector({ maxTasksPerService: 2 });
    after.importState(before.exportState());
    expect(before.stats().taskEvictions).toBeGreaterThan(0);
    expect(after.stats()).toEqual(before.stats());
    for (const id of ['ttl', 'wait', 'storm'])
      expect(after.taskTimeline('app', id), id).toEqual(before.taskTimeline('app', id));
    expect(after.taskTimeline('app', 'storm')!.polls.times.length).toBeGreaterThan(0);
  });

  it('a state written before the tasks family (no tasks, none of its options) still loads', () => {
    const before = new Detector();
    feed(before, [getTask(T0, 'nothing'), { ...getTask(T0, 'x'), attributes: {} }]);
    const state = before.exportState() as unknown as Record<string, unknown>;
    delete state.tasks;
    const options = state.options as Record<string, unknown>;
    for (const name of ['maxTasksPerService', 'taskPollStormThreshold', 'taskPollStormWindowMs', 'taskPollsAfterGone'])
      delete options[name];
    const findings: Finding[] = [];
    const after = new Detector({ onFinding: taskFindings(findings), maxTasksPerService: 5 });
    after.importState(state as unknown as DetectorState);
    expect(after.stats()).toMatchObject({ tasks: 0, taskEvictions: 0 });
    feed(after, [createTask(T0 + 10, 'new'), statusNotification(T0 + 20, 'new', TaskStatus.COMPLETED)]);
    after.advance(T0 + 2 * TTL);
    expect(findings.map((f) => f.task_id)).toEqual(['new']);
  });

  it('refuses a tasks section that does not fit, and leaves the detector empty', () => {
    const before = new Detector();
    feed(before, sequence().slice(0, 10));
    const good = before.exportState();
    const broken: [string, (s: DetectorState) => void][] = [
      ['unknown field', (s) => Object.assign(s.tasks!, { extra: 1 })],
      ['ticks of another count', (s) => (s.tasks!.tickCounts = new Uint32Array(s.tasks!.tickCounts.length))],
      ['a service out of range', (s) => s.tasks!.services.fill(99)],
      ['a status not known', (s) => s.tasks!.numbers.latestStatus!.fill(9)],
      ['a task twice', (s) => s.tasks!.taskIds.fill('same')],
      ['a task option changed', (s) => (s.options.taskPollsAfterGone = 4)],
    ];
    for (const [what, change] of broken) {
      const state = before.exportState();
      change(state);
      const after = new Detector();
      expect(() => after.importState(state), what).toThrow(StateMismatchError);
      expect(after.stats().tasks, what).toBe(0);
    }
    const untouched = new Detector();
    untouched.importState(good);
    expect(untouched.stats()).toEqual(before.stats());
  });
});
