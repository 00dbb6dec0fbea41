import {
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_TASK_ID,
  FindingKind,
  SpanReceivedResult,
  FindingRecord,
  NOTIFICATION_TASK_STATUS,
  NOTIFICATION_TASKS,
  TASK_FINDING_KINDS,
  TaskGone,
  TaskLostReason,
  TaskShape,
  TaskStatus,
  TaskStormReason,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { Detector, type DetectorInit, type Finding, type SpanRecord } from '../../src/index.js';
import { T0 } from '../helpers/spans.js';
import {
  cancelTask,
  createTask,
  getTask,
  newTrace,
  reissueCall,
  statusNotification,
  taskResult,
} from '../helpers/task-spans.js';

const TTL = 60_000;

/** Feeds the spans in order, advancing the detector's clock to `until` (if given) at the end; the task findings. */
function run(
  spans: SpanRecord[],
  init: DetectorInit = {},
  until?: number,
): { findings: Finding[]; detector: Detector } {
  const findings: Finding[] = [];
  // Only the task findings (a first attempt's broken stream makes its own lost_result, for instance).
  const onFinding = (f: Finding) => void (TASK_FINDING_KINDS.includes(f.kind) && findings.push(f));
  const detector = new Detector({ ...init, onFinding });
  for (const s of spans) detector.ingest(s);
  if (until !== undefined) detector.advance(until);
  return { findings, detector };
}

/** One task's healthy 2025-11-25 life: created, polled at its interval until completed. */
function healthy(taskId: string, o: { shape?: TaskShape } = {}): SpanRecord[] {
  return [
    createTask(T0, taskId, o),
    getTask(T0 + 500, taskId, { status: TaskStatus.WORKING, ...o }),
    getTask(T0 + 1000, taskId, { status: TaskStatus.WORKING, ...o }),
    getTask(T0 + 1500, taskId, { status: TaskStatus.COMPLETED, ...o }),
  ];
}

describe('lost_task_result', () => {
  it('is reported when the result is asked for after expiry (the server said expired)', () => {
    const spans = [...healthy('t1'), taskResult(T0 + 70_000, 't1', { gone: TaskGone.EXPIRED })];
    const { findings } = run(spans);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      kind: FindingKind.LOST_TASK_RESULT,
      reason: TaskLostReason.GONE,
      task_id: 't1',
      service: 'app',
      trace_id: spans[4]!.traceId,
      first_time_unix_ms: T0 + 5,
      last_time_unix_ms: T0 + 70_005,
      span_ids: [spans[0]!.spanId, spans[4]!.spanId],
    });
    expect(findings[0]!.record).toBeUndefined();
  });

  it('is reported at once for a "not found" after created-at + ttl (an expiry by the evidence), 2026-07-28 shape', () => {
    const o = { shape: TaskShape.EXTENSION };
    const spans = [...healthy('e1', o), getTask(T0 + TTL + 10, 'e1', { gone: TaskGone.NOT_FOUND, ...o })];
    const { findings } = run(spans);
    expect(findings.map((f) => [f.kind, f.reason])).toEqual([[FindingKind.LOST_TASK_RESULT, TaskLostReason.GONE]]);
  });

  it('waits on a "not found" before the ttl (another replica?) and reports it once the ttl passed undelivered', () => {
    const spans = [createTask(T0, 't2'), getTask(T0 + 5_000, 't2', { gone: TaskGone.NOT_FOUND })];
    const findings: Finding[] = [];
    const detector = new Detector({ onFinding: (f) => findings.push(f) });
    for (const s of spans) detector.ingest(s);
    detector.advance(T0 + 30_000);
    detector.advance(T0 + TTL + 4);
    expect(findings).toEqual([]);
    detector.advance(T0 + TTL + 5);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      kind: FindingKind.LOST_TASK_RESULT,
      reason: TaskLostReason.GONE,
      last_time_unix_ms: T0 + 5 + TTL,
      span_ids: [spans[0]!.spanId, spans[1]!.spanId],
    });
  });

  it('is no finding when the same task was read through another replica (its result delivered there)', () => {
    const spans = [
      createTask(T0, 't3'),
      // A replica that never saw the task answers not found; the client's next request reaches the right one.
      getTask(T0 + 1_000, 't3', { gone: TaskGone.NOT_FOUND }),
      getTask(T0 + 2_000, 't3', { status: TaskStatus.COMPLETED }),
      taskResult(T0 + 2_500, 't3'),
    ];
    const { findings } = run(spans, {}, T0 + 10 * TTL);
    expect(findings).toEqual([]);
  });

  it('is reported when the task completed and its ttl passed with no result fetched (ttl_passed), by advance', () => {
    const spans = [createTask(T0, 't4'), statusNotification(T0 + 2_000, 't4', TaskStatus.COMPLETED)];
    const { findings, detector } = run(spans, {}, T0 + TTL);
    expect(findings).toEqual([]);
    detector.advance(T0 + TTL + 5);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      kind: FindingKind.LOST_TASK_RESULT,
      reason: TaskLostReason.TTL_PASSED,
      task_id: 't4',
      trace_id: spans[0]!.traceId,
      last_time_unix_ms: T0 + 5 + TTL,
    });
  });

  it('counts a failed task whose error never reached the application', () => {
    const spans = [createTask(T0, 'f1'), getTask(T0 + 600, 'f1', { status: TaskStatus.FAILED })];
    const { findings } = run(spans, {}, T0 + 2 * TTL);
    expect(findings.map((f) => f.reason)).toEqual([TaskLostReason.TTL_PASSED]);
  });

  it('is retracted when the outcome is delivered after all (a ttl computed late)', () => {
    const findings: Finding[] = [];
    const d = new Detector({ onFinding: (f) => findings.push(f) });
    for (const s of [createTask(T0, 't5'), getTask(T0 + 600, 't5', { status: TaskStatus.COMPLETED })]) d.ingest(s);
    d.advance(T0 + TTL + 100);
    const late = taskResult(T0 + TTL + 50, 't5');
    d.ingest(late);
    d.ingest(taskResult(T0 + TTL + 60, 't5'));
    expect(findings.map((f) => [f.kind, f.record])).toEqual([
      [FindingKind.LOST_TASK_RESULT, undefined],
      [FindingKind.LOST_TASK_RESULT, FindingRecord.RETRACTION],
    ]);
    expect(findings[1]).toMatchObject({ task_id: 't5', span_ids: [late.spanId], reason: TaskLostReason.TTL_PASSED });
  });

  it('is no finding for a result fetched within its ttl, nor for re-reads after completion (both shapes)', () => {
    const augmented = [
      ...healthy('r1'),
      taskResult(T0 + 1_600, 'r1'),
      taskResult(T0 + 1_700, 'r1'),
      getTask(T0 + 2_200, 'r1', { status: TaskStatus.COMPLETED }),
      taskResult(T0 + 30_000, 'r1'),
    ];
    const ext = { shape: TaskShape.EXTENSION };
    const extension = [
      createTask(T0, 'r2', ext),
      getTask(T0 + 500, 'r2', { status: TaskStatus.WORKING, ...ext }),
      getTask(T0 + 1_000, 'r2', { status: TaskStatus.COMPLETED, delivered: true, ...ext }),
      getTask(T0 + 1_500, 'r2', { status: TaskStatus.COMPLETED, delivered: true, ...ext }),
    ];
    expect(run([...augmented, ...extension], {}, T0 + 10 * TTL).findings).toEqual([]);
  });

  it('a 2025-11-25 tasks/get that says completed delivers nothing: without tasks/result the ttl passing is a loss', () => {
    const { findings } = run(healthy('r3'), {}, T0 + 2 * TTL);
    expect(findings.map((f) => f.reason)).toEqual([TaskLostReason.TTL_PASSED]);
  });

  it('is no finding for a task the client cancelled, whatever follows', () => {
    const acknowledged = [
      createTask(T0, 'c1'),
      cancelTask(T0 + 300, 'c1'),
      getTask(T0 + 800, 'c1', { status: TaskStatus.COMPLETED }),
      getTask(T0 + TTL + 500, 'c1', { gone: TaskGone.EXPIRED }),
    ];
    const byStatus = [
      createTask(T0, 'c2'),
      statusNotification(T0 + 300, 'c2', TaskStatus.CANCELLED),
      taskResult(T0 + TTL + 500, 'c2', { gone: TaskGone.NOT_FOUND }),
    ];
    expect(run([...acknowledged, ...byStatus], {}, T0 + 10 * TTL).findings).toEqual([]);
  });

  it('a refused tasks/cancel (the task had finished) is no cancellation', () => {
    const spans = [
      createTask(T0, 'c3'),
      getTask(T0 + 500, 'c3', { status: TaskStatus.COMPLETED }),
      cancelTask(T0 + 800, 'c3', { refused: true }),
    ];
    expect(run(spans, {}, T0 + 2 * TTL).findings.map((f) => f.reason)).toEqual([TaskLostReason.TTL_PASSED]);
  });

  it('never rests on silence: no ttl announced (unlimited), completed and never fetched, is no finding', () => {
    const spans = [createTask(T0, 'n1', { ttl: null }), getTask(T0 + 600, 'n1', { status: TaskStatus.COMPLETED })];
    const { findings, detector } = run(spans, {}, T0 + 1000 * TTL);
    expect(findings).toEqual([]);
    expect(detector.stats().tasks).toBe(1);
  });

  it('a "not found" for a task this detector never saw created is no finding (another replica\'s)', () => {
    const spans = [
      taskResult(T0 + 70_000, 'unknown', { gone: TaskGone.NOT_FOUND }),
      getTask(T0 + 70_100, 'unknown', { gone: TaskGone.EXPIRED }),
    ];
    const { findings, detector } = run(spans, {}, T0 + 10 * TTL);
    expect(findings).toEqual([]);
    expect(detector.stats().tasks).toBe(0);
  });

  it("is judged per service: the server's spans of the task are its own record", () => {
    const spans = [
      createTask(T0, 's1'),
      createTask(T0, 's1', { service: 'srv', kind: 2 }),
      getTask(T0 + 600, 's1', { status: TaskStatus.COMPLETED }),
      getTask(T0 + 600, 's1', { status: TaskStatus.COMPLETED, service: 'srv', kind: 2 }),
      taskResult(T0 + 700, 's1', { service: 'srv', kind: 2 }),
    ];
    const { findings } = run(spans, {}, T0 + 2 * TTL);
    expect(findings.map((f) => [f.service, f.reason])).toEqual([['app', TaskLostReason.TTL_PASSED]]);
  });
});

describe('task_poll_storm', () => {
  function polls(taskId: string, from: number, every: number, count: number, o = {}): SpanRecord[] {
    return Array.from({ length: count }, (_, i) =>
      getTask(from + i * every, taskId, { status: TaskStatus.WORKING, ...o }),
    );
  }

  it('is reported once for polls each sooner than half the announced interval, sustained (faster_than_interval)', () => {
    // The storm: tasks/get every 10 ms against a pollInterval of 500 ms.
    const spans = [createTask(T0, 'p1', { interval: 500 }), ...polls('p1', T0 + 10, 10, 170)];
    const { findings } = run(spans);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      kind: FindingKind.TASK_POLL_STORM,
      reason: TaskStormReason.FASTER_THAN_INTERVAL,
      task_id: 'p1',
      polls: 10,
      first_time_unix_ms: T0 + 10,
      last_time_unix_ms: T0 + 110,
      span_ids: [spans[11]!.spanId],
    });
  });

  it('is no finding for polls at or below the announced rate, or a little faster than it', () => {
    const atRate = [createTask(T0, 'p2', { interval: 500 }), ...polls('p2', T0 + 500, 500, 100)];
    const jittered = [createTask(T0, 'p3', { interval: 500 }), ...polls('p3', T0 + 300, 300, 100)];
    const slower = [createTask(T0, 'p4', { interval: 500 }), ...polls('p4', T0 + 2000, 2000, 50)];
    expect(run([...atRate, ...jittered, ...slower]).findings).toEqual([]);
  });

  it('needs the threshold within the window: fewer early polls, or early polls spread past it, are no storm', () => {
    const few = [createTask(T0, 'p5', { interval: 500 }), ...polls('p5', T0 + 10, 10, 9)];
    // Two early polls, then one at the interval, over and over: never 10 early polls in a row.
    const broken: SpanRecord[] = [createTask(T0, 'p6', { interval: 500 })];
    for (let i = 0; i < 40; i++) {
      const t = T0 + i * 1000;
      broken.push(...polls('p6', t + 500, 10, 3));
    }
    expect(run([...few, ...broken]).findings).toEqual([]);
    const spread = [createTask(T0, 'p7', { interval: 500 }), ...polls('p7', T0 + 10, 100, 12)];
    expect(run(spread, { taskPollStormWindowMs: 500 }).findings).toEqual([]);
    expect(run(spread).findings.map((f) => f.reason)).toEqual([TaskStormReason.FASTER_THAN_INTERVAL]);
  });

  it('counts a poll span exported twice once', () => {
    const nine = polls('p10', T0 + 10, 10, 9);
    const spans = [createTask(T0, 'p10', { interval: 500 }), ...nine.flatMap((p) => [p, p])];
    const { findings, detector } = run(spans);
    expect(findings).toEqual([]);
    expect(detector.taskTimeline('app', 'p10')!.polls.total).toBe(9);
  });

  it('counts polls delivered again later (an exporter retrying older export requests) once: fewer early polls than the threshold stay no storm', () => {
    const six = polls('p11', T0 + 10, 10, 6);
    const { findings, detector } = run([createTask(T0, 'p11', { interval: 500 }), ...six, ...six]);
    expect(findings).toEqual([]);
    expect(detector.taskTimeline('app', 'p11')!.polls.total).toBe(6);
  });

  it('is never judged by rate when the server announced no interval', () => {
    const spans = [createTask(T0, 'p8', { interval: null }), ...polls('p8', T0 + 10, 10, 100)];
    expect(run(spans).findings).toEqual([]);
  });

  it('takes an interval a later answer announces', () => {
    const spans = [
      createTask(T0, 'p9', { interval: null }),
      getTask(T0 + 5, 'p9', { status: TaskStatus.WORKING, interval: 1000 }),
      ...polls('p9', T0 + 20, 20, 20),
    ];
    expect(run(spans).findings.map((f) => f.reason)).toEqual([TaskStormReason.FASTER_THAN_INTERVAL]);
  });

  it('is reported for polls after the server said the task is gone (after_gone), at the taskPollsAfterGone-th', () => {
    const gone = getTask(T0 + 5_000, 'g1', { gone: TaskGone.NOT_FOUND });
    const after = [5_600, 6_200, 6_800].map((d) => getTask(T0 + d, 'g1', { gone: TaskGone.NOT_FOUND }));
    const { findings } = run([createTask(T0, 'g1', { ttl: null }), gone, ...after]);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      kind: FindingKind.TASK_POLL_STORM,
      reason: TaskStormReason.AFTER_GONE,
      polls: 3,
      first_time_unix_ms: T0 + 5_005,
      span_ids: [after[2]!.spanId],
    });
    expect(run([createTask(T0, 'g2', { ttl: null }), gone, ...after.slice(0, 2)]).findings).toEqual([]);
  });

  it('counts polls after gone whatever the order the spans arrive in', () => {
    const create = createTask(T0, 'g3', { ttl: null });
    const gone = getTask(T0 + 5_000, 'g3', { gone: TaskGone.NOT_FOUND });
    const after = [5_600, 6_200, 6_800].map((d) => getTask(T0 + d, 'g3', { gone: TaskGone.NOT_FOUND }));
    const { findings } = run([create, ...after, gone]);
    expect(findings.map((f) => [f.kind, f.reason])).toEqual([
      [FindingKind.TASK_POLL_STORM, TaskStormReason.AFTER_GONE],
    ]);
  });
});

describe('duplicate_task and possible_duplicate_task', () => {
  /**
   * The first attempt: the client's call whose reply it never read (its span ended with the stream broken,
   * no task id), and the server's (or gateway's) span of the same trace that created the task.
   */
  function firstAttempt(taskId: string, shape: TaskShape): { client: SpanRecord; server: SpanRecord } {
    const trace = newTrace();
    const server = createTask(T0, taskId, { service: 'srv', kind: 2, trace, shape });
    const client: SpanRecord = {
      ...createTask(T0, 'x', { trace }),
      attributes: { [ATTR_MCP_METHOD_NAME]: 'tools/call' },
    };
    return { client, server };
  }

  for (const shape of [TaskShape.AUGMENTED, TaskShape.EXTENSION]) {
    it(`is certain with the idempotency key, possible without, in either order of arrival (${shape})`, () => {
      for (const sameKey of [true, false]) {
        const { client, server } = firstAttempt(`d-${shape}-${sameKey}`, shape);
        const second = createTask(T0 + 2_000, `d2-${shape}-${sameKey}`, { service: 'srv', kind: 2, shape });
        const reissue = reissueCall(T0 + 1_990, client, { sameKey, trace: second.traceId, duration: 20 });
        const kind = sameKey ? FindingKind.DUPLICATE_TASK : FindingKind.POSSIBLE_DUPLICATE_TASK;
        const orders = [
          [client, server, second, reissue],
          [reissue, second, client, server],
          [client, reissue, server, second],
        ];
        for (const order of orders) {
          const { findings } = run(order, {}, T0 + 10 * TTL);
          const duplicates = findings.filter((f) => f.kind !== FindingKind.LOST_TASK_RESULT);
          expect(duplicates, order.map((s) => s.spanId).join()).toHaveLength(1);
          expect(duplicates[0]).toMatchObject({
            kind,
            service: 'app',
            trace_id: reissue.traceId,
            first_trace_id: server.traceId,
            task_id: server.attributes[ATTR_MCP_TASK_ID],
            span_ids: [server.spanId, reissue.spanId],
            first_time_unix_ms: T0 + 5,
            last_time_unix_ms: T0 + 2_010,
          });
        }
      }
    });
  }

  it('leaves no possible_duplicate_execution beside it once the window passes: the first attempt created a task (without one, it stays)', () => {
    for (const created of [true, false]) {
      const { client, server } = firstAttempt(`x-${created}`, TaskShape.AUGMENTED);
      const reissue = reissueCall(T0 + 1_000, client, { trace: newTrace() });
      const kinds: string[] = [];
      const detector = new Detector({ onFinding: (f) => void kinds.push(f.kind) });
      for (const span of created ? [client, reissue, server] : [client, reissue]) detector.ingest(span);
      // Past the re-issue's evidence window (60 s); the first task never completed, so no ttl verdict.
      detector.advance(T0 + 2 * TTL);
      expect(kinds.filter((k) => k !== FindingKind.LOST_RESULT)).toEqual(
        created ? [FindingKind.POSSIBLE_DUPLICATE_TASK] : [FindingKind.POSSIBLE_DUPLICATE_EXECUTION],
      );
    }
  });

  it("names the second task, and the first task's timeline shows it", () => {
    const { client, server } = firstAttempt('first', TaskShape.AUGMENTED);
    const reissue = reissueCall(T0 + 1_000, client, { sameKey: true, taskId: 'second' });
    const { findings, detector } = run([client, server, reissue]);
    expect(findings.filter((f) => f.kind === FindingKind.DUPLICATE_TASK)).toMatchObject([
      { task_id: 'first', duplicate_task_id: 'second' },
    ]);
    expect(detector.taskTimeline('srv', 'first')?.duplicate).toEqual({ traceId: reissue.traceId, taskId: 'second' });
  });

  it("is no finding when the re-issue got the first task's own handle back (the gateway under --enforce)", () => {
    const { client, server } = firstAttempt('one', TaskShape.AUGMENTED);
    const reissue = reissueCall(T0 + 1_000, client, { sameKey: true, taskId: 'one' });
    expect(run([client, server, reissue]).findings.filter((f) => f.kind !== FindingKind.LOST_TASK_RESULT)).toEqual([]);
    expect(run([reissue, client, server]).findings.filter((f) => f.kind !== FindingKind.LOST_TASK_RESULT)).toEqual([]);
  });

  it('is no finding for a re-issue whose first attempt created no task', () => {
    const trace = newTrace();
    const client: SpanRecord = {
      ...createTask(T0, 'x', { trace }),
      attributes: { [ATTR_MCP_METHOD_NAME]: 'tools/call' },
    };
    const reissue = reissueCall(T0 + 1_000, client, { sameKey: true });
    expect(run([client, reissue, createTask(T0 + 5_000, 'other')], {}, T0 + 10 * TTL).findings).toEqual([]);
  });

  it("leaves a task call's re-issue to the tasks family: no possible_duplicate_execution beside it", () => {
    // Every finding, not only the task kinds: the request-level re-issue rule sees the same re-issue.
    const all = (spans: SpanRecord[]): string[] => {
      const kinds: string[] = [];
      const detector = new Detector({ onFinding: (f) => void kinds.push(f.kind) });
      for (const s of spans) detector.ingest(s);
      detector.advance(T0 + 10 * TTL);
      return kinds.filter((k) => k !== FindingKind.LOST_TASK_RESULT).sort();
    };
    for (const sameKey of [true, false]) {
      const { client, server } = firstAttempt(`r-${sameKey}`, TaskShape.EXTENSION);
      const reissue = reissueCall(T0 + 1_000, client, { sameKey, taskId: `r2-${sameKey}` });
      const kind = sameKey ? FindingKind.DUPLICATE_TASK : FindingKind.POSSIBLE_DUPLICATE_TASK;
      expect(all([client, server, reissue])).toEqual([kind]);
      expect(all([reissue, client, server])).toEqual([kind]);
    }
    // A first attempt that created no task: the request-level rule's, as before.
    const trace = newTrace();
    const client: SpanRecord = {
      ...createTask(T0, 'x', { trace }),
      attributes: { [ATTR_MCP_METHOD_NAME]: 'tools/call' },
    };
    expect(all([client, reissueCall(T0 + 1_000, client)])).toEqual([FindingKind.POSSIBLE_DUPLICATE_EXECUTION]);
  });

  it('is reported once per first task, however many re-issues', () => {
    const { client, server } = firstAttempt('many', TaskShape.EXTENSION);
    const spans = [client, server, reissueCall(T0 + 1_000, client), reissueCall(T0 + 2_000, client, { sameKey: true })];
    expect(run(spans).findings.map((f) => f.kind)).toEqual([FindingKind.POSSIBLE_DUPLICATE_TASK]);
  });
});

describe('task records', () => {
  it('are capped per service, the least recently touched evicted and counted; another service keeps its own', () => {
    const spans = [
      createTask(T0, 'a'),
      createTask(T0 + 1, 'b'),
      createTask(T0 + 2, 'c'),
      getTask(T0 + 3, 'a', { status: TaskStatus.WORKING }),
      createTask(T0 + 4, 'd'),
      createTask(T0 + 5, 'z', { service: 'other-app' }),
    ];
    const { detector } = run(spans, { maxTasksPerService: 3 });
    expect(detector.stats()).toMatchObject({ tasks: 4, taskEvictions: 1 });
    expect(detector.liveTasksByService()).toEqual(
      new Map([
        ['app', 3],
        ['other-app', 1],
      ]),
    );
    expect(detector.taskTimeline('app', 'b')).toBeUndefined();
    expect(detector.taskTimeline('app', 'a')).toBeDefined();
    expect(detector.taskTimeline('other-app', 'z')).toBeDefined();
  });

  it('keep a task with no ttl (unlimited) under the cap, however long, until the cap needs its place', () => {
    const { detector } = run([createTask(T0, 'forever', { ttl: null })], { maxTasksPerService: 2 }, T0 + 1e9);
    expect(detector.stats()).toMatchObject({ tasks: 1, taskEvictions: 0 });
    detector.ingest(createTask(T0 + 1e9, 'next', { ttl: null }));
    expect(detector.stats()).toMatchObject({ tasks: 2, taskEvictions: 0 });
    detector.ingest(createTask(T0 + 1e9 + 1, 'third', { ttl: null }));
    expect(detector.stats()).toMatchObject({ tasks: 2, taskEvictions: 1 });
    expect(detector.taskTimeline('app', 'forever')).toBeUndefined();
  });

  it('leave once their ttl and the retention have passed', () => {
    const { detector } = run(
      [createTask(T0, 'gone-soon'), getTask(T0 + 500, 'gone-soon', { status: TaskStatus.WORKING })],
      { retentionMs: 1_000 },
      T0 + TTL,
    );
    expect(detector.stats().tasks).toBe(1);
    detector.advance(T0 + TTL + 1_006);
    expect(detector.stats().tasks).toBe(0);
  });

  it('give their ttl verdicts and leave in time order, however many are due at once or apart', () => {
    const findings: Finding[] = [];
    const d = new Detector({ retentionMs: 1_000, onFinding: (f) => findings.push(f) });
    // 300 tasks, each completed and never fetched, with ttls 1 s apart, fed in scrambled order.
    const ids = Array.from({ length: 300 }, (_, i) => (i * 97) % 300);
    for (const i of ids) {
      d.ingest(createTask(T0, `due-${i}`, { ttl: 1_000 * (i + 1), interval: null }));
      d.ingest(statusNotification(T0 + 100, `due-${i}`, TaskStatus.COMPLETED));
    }
    for (let step = 1; step <= 300; step++) {
      d.advance(T0 + 5 + 1_000 * step);
      expect(findings.length, `step ${step}`).toBe(step);
      expect(findings[step - 1]!.task_id).toBe(`due-${step - 1}`);
      // Each leaves retentionMs after its ttl (its last span is earlier).
      expect(d.stats().tasks).toBe(300 - step + 1);
    }
    d.advance(T0 + 5 + 1_000 * 301);
    expect(d.stats().tasks).toBe(0);
  });

  it('evicted by the cap, give no verdict; the live ones still do (the due heap rebuilt past its stale entries)', () => {
    const findings: Finding[] = [];
    const d = new Detector({ maxTasksPerService: 5, onFinding: (f) => findings.push(f) });
    for (let i = 0; i < 300; i++) {
      d.ingest(createTask(T0 + i, `churn-${i}`, { ttl: 1_000, interval: null }));
      d.ingest(statusNotification(T0 + i + 1, `churn-${i}`, TaskStatus.COMPLETED));
    }
    expect(d.stats()).toMatchObject({ tasks: 5, taskEvictions: 295 });
    d.advance(T0 + 10_000);
    expect(findings.map((f) => f.task_id)).toEqual(['churn-295', 'churn-296', 'churn-297', 'churn-298', 'churn-299']);
  });

  it('give the page a plain timeline: creation, status changes, poll ticks, the result fetch, the expiry', () => {
    const spans = [
      createTask(T0, 'tl', { ttl: 300_000, interval: 1_000 }),
      ...Array.from({ length: 70 }, (_, i) =>
        getTask(T0 + 1_000 * (i + 1), 'tl', { status: i < 69 ? TaskStatus.WORKING : TaskStatus.COMPLETED }),
      ),
      taskResult(T0 + 71_000, 'tl'),
    ];
    const { detector } = run(spans);
    const timeline = detector.taskTimeline('app', 'tl')!;
    expect(timeline).toMatchObject({
      service: 'app',
      taskId: 'tl',
      shape: TaskShape.AUGMENTED,
      createdAt: T0 + 5,
      createTraceId: spans[0]!.traceId,
      ttlMs: 300_000,
      pollIntervalMs: 1_000,
      statuses: [
        { time: T0 + 5, status: TaskStatus.WORKING },
        { time: T0 + 70_005, status: TaskStatus.COMPLETED },
      ],
      resultAt: T0 + 71_005,
      goneAt: null,
      expiresAt: T0 + 300_005,
      duplicate: null,
    });
    expect(timeline.polls.total).toBe(70);
    expect(timeline.polls.times).toHaveLength(64);
    expect(timeline.polls.times[0]).toBe(T0 + 7_000);
    expect(timeline.polls.times[63]).toBe(T0 + 70_000);
    // A copy: changing it changes nothing in the detector.
    timeline.polls.times.length = 0;
    expect(detector.taskTimeline('app', 'tl')!.polls.times).toHaveLength(64);
  });

  it('count creations and polls in the events', () => {
    const created: [string, string][] = [];
    let polled = 0;
    const events = {
      span: () => {},
      terminal: () => {},
      resume: () => {},
      reattach: () => {},
      stormFinalized: () => {},
      serverDefect: () => {},
      listeningResume: () => {},
      request: () => {},
      negotiationRefused: () => {},
      taskCreated: (service: string, shape: string) => created.push([service, shape]),
      taskPolled: () => polled++,
    };
    run([...healthy('ev1'), ...healthy('ev2', { shape: TaskShape.EXTENSION })], { events });
    expect(created).toEqual([
      ['app', TaskShape.AUGMENTED],
      ['app', TaskShape.EXTENSION],
    ]);
    expect(polled).toBe(6);
  });

  it('a status notification span with a method of its own creates no task, and updates a known one', () => {
    const d = new Detector();
    const orphan = statusNotification(T0, 'never-created', TaskStatus.WORKING);
    d.ingest({ ...orphan, attributes: { ...orphan.attributes, [ATTR_MCP_METHOD_NAME]: NOTIFICATION_TASK_STATUS } });
    expect(d.stats().tasks).toBe(0);
    d.ingest(createTask(T0, 'known'));
    const update = statusNotification(T0 + 100, 'known', TaskStatus.COMPLETED);
    d.ingest({ ...update, attributes: { ...update.attributes, [ATTR_MCP_METHOD_NAME]: NOTIFICATION_TASKS } });
    expect(d.taskTimeline('app', 'known')!.statuses.map((s) => s.status)).toEqual([
      TaskStatus.WORKING,
      TaskStatus.COMPLETED,
    ]);
  });

  it('a status span that names no task is ignored, one that does is accepted', () => {
    const d = new Detector();
    const named = statusNotification(T0, 'st', TaskStatus.WORKING);
    const unnamed: SpanRecord = { ...named, spanId: 'ab'.repeat(8), attributes: {} };
    expect(d.ingest(named)).toBe(SpanReceivedResult.ACCEPTED);
    expect(d.ingest(unnamed)).toBe(SpanReceivedResult.IGNORED);
  });
});
