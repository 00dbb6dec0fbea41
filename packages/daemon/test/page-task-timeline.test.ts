import { ATTR_MCP_METHOD_NAME, NOTIFICATION_TASKS, TaskStatus, TaskStormReason } from '@resumewatch/semconv';
import type { Finding, SpanRecord } from '@resumewatch/detector';
import { describe, expect, it } from 'vitest';
import { configWith } from '../src/doors/writing-pipeline.js';
import { EVIDENCE_EVENTS, Evidence } from '../src/page/evidence.js';
import { findingTimeline } from '../src/page/page-data.js';
import { findingKey, isReissueFinding, taskKey } from '../src/page/timeline-event.js';
import type { DrawnTimeline } from '../src/page/timeline-view.js';
import {
  TASK_T0,
  created,
  duplicateTask,
  lostResult,
  poll,
  pollStorm,
  statusNotification,
} from './helpers/task-spans.js';

// A task finding's timeline, from synthetic span records (the semconv names) and a finding of the task's
// kind: what the evidence keeps under the task's key and what the page draws of it on one axis.

function evidenceOf(spans: readonly SpanRecord[], finding: Finding, reportAfter = spans.length): Evidence {
  const evidence = new Evidence(configWith());
  spans.slice(0, reportAfter).forEach((s) => evidence.observe(s));
  evidence.reported(finding);
  spans.slice(reportAfter).forEach((s) => evidence.observe(s));
  return evidence;
}

/** The drawn events of each lane, by type: what the chart shows. */
function byLane(tl: DrawnTimeline): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  tl.lanes.forEach((l, i) => (out[l.label!] = tl.events.filter((e) => e.lane === i).map((e) => e.type)));
  return out;
}

const count = (types: string[], type: string): number => types.filter((t) => t === type).length;
const timeOf = (tl: DrawnTimeline, type: string): number => tl.events.find((e) => e.type === type)!.start;

describe("a task finding's timeline", () => {
  it('lost_task_result: creation, a status change, poll ticks, the gone answer and the ttl on one axis, and its story', () => {
    const { spans, finding } = lostResult();
    // Reported before the last poll arrived, as the detector reports it at the gone answer: the spans
    // before move in from the window, the later one follows.
    const tl = findingTimeline(finding, evidenceOf(spans, finding, 5))!;
    const lanes = byLane(tl);
    expect(Object.keys(lanes)).toEqual(['task', 'task \u00b7 polls']);
    expect(lanes['task \u00b7 polls']).toEqual(['poll_tick', 'poll_tick', 'poll_tick', 'poll_tick']);
    const life = lanes['task']!;
    expect(count(life, 'created')).toBe(1);
    // working at creation and on two polls; completed by the notification, the poll after it no change.
    expect(tl.events.filter((e) => e.type === 'status_change').map((e) => e.short)).toEqual([TaskStatus.COMPLETED]);
    expect(tl.events.find((e) => e.type === 'status_change')!.what).toMatch(/status notification/);
    expect(count(life, 'gone')).toBe(1);
    expect(count(life, 'ttl')).toBe(1);
    expect(count(life, 'delivered')).toBe(0);
    // Ticks where the client asked; marks where the answers said so; the ttl's end at creation + 2 s.
    expect(tl.events.filter((e) => e.type === 'poll_tick').map((e) => e.start - TASK_T0)).toEqual([
      500, 1000, 1500, 2600,
    ]);
    expect(timeOf(tl, 'created') - TASK_T0).toBe(20);
    expect(timeOf(tl, 'ttl') - TASK_T0).toBe(2020);
    expect(timeOf(tl, 'created')).toBeLessThan(timeOf(tl, 'status_change'));
    expect(timeOf(tl, 'status_change')).toBeLessThan(timeOf(tl, 'ttl'));
    expect(timeOf(tl, 'ttl')).toBeLessThan(timeOf(tl, 'gone'));
    expect(tl.start).toBe(TASK_T0 + 20);
    expect(tl.end).toBe(TASK_T0 + 2604);
    expect(tl.story).toBe(
      'The task completed at 08:00:01.200 UTC, its client asked for the result after its ttl (it ran out at ' +
        '08:00:02.020 UTC) and was told at 08:00:02.604 UTC that it was not found: the result never reached it.',
    );
  });

  it('lost_task_result by ttl: the ttl drawn, the story says no answer carried the outcome; a later delivery is told', () => {
    const task = 'task-ttl';
    const spans = [
      created(task, TASK_T0, { session: 's', ttl: 1000 }),
      statusNotification(task, TASK_T0 + 400, TaskStatus.FAILED, { session: 's' }),
    ];
    const finding: Finding = { ...lostResult().finding, task_id: task, session_id: 's' };
    const tl = findingTimeline(finding, evidenceOf(spans, finding))!;
    expect(byLane(tl)).toEqual({ task: ['created', 'status_change', 'ttl'] });
    expect(tl.story).toBe(
      'The task failed at 08:00:00.400 UTC; no answer carried its outcome to the client, and its ttl ran out at ' +
        '08:00:01.020 UTC: the result never reached it.',
    );
    // The outcome reaches the client after all (the finding's retraction): the timeline says so.
    const evidence = evidenceOf(spans, finding);
    evidence.observe(poll(task, TASK_T0 + 1500, 9, { status: TaskStatus.FAILED, delivered: true }, { session: 's' }));
    const later = findingTimeline(finding, evidence)!;
    expect(later.events.filter((e) => e.type === 'delivered')).toHaveLength(1);
    expect(later.story).toMatch(/an answer carried its outcome to the client at 08:00:01\.504 UTC\.$/);
  });

  it('task_poll_storm: one tick per poll; the story counts them against the announced interval; a far ttl is said, not drawn', () => {
    const { spans, finding } = pollStorm(40);
    const tl = findingTimeline(finding, evidenceOf(spans, finding, 1))!;
    expect(count(byLane(tl)['task \u00b7 polls']!, 'poll_tick')).toBe(40);
    expect(tl.events.some((e) => e.type === 'ttl')).toBe(false);
    expect(tl.notes).toContain('Its ttl of 300 s runs out at 08:05:00.020 UTC, after what is drawn.');
    expect(tl.story).toBe(
      'Its client polled the task 40 times between 08:00:00.100 UTC and 08:00:00.490 UTC, 39 of them sooner ' +
        'than half the 500 ms the server asked for between polls: a poll storm.',
    );
  });

  it('a status notification recorded under its method is a change of status, not a creation', () => {
    const task = 'task-notified';
    const o = { session: 's-n' };
    const notified = statusNotification(task, TASK_T0 + 300, TaskStatus.INPUT_REQUIRED, o);
    const spans = [
      created(task, TASK_T0, o),
      {
        ...notified,
        name: NOTIFICATION_TASKS,
        attributes: { ...notified.attributes, [ATTR_MCP_METHOD_NAME]: NOTIFICATION_TASKS },
      },
    ];
    const finding: Finding = { ...lostResult().finding, task_id: task, session_id: 's-n' };
    const tl = findingTimeline(finding, evidenceOf(spans, finding))!;
    expect(byLane(tl)).toEqual({ task: ['created', 'status_change'] });
    expect(tl.events[1]!.what).toBe('status input_required, as a status notification showed it');
  });

  it('task_poll_storm after gone: the gone answer marked, the polls after it counted', () => {
    const task = 'task-after-gone';
    const o = { session: 's-g' };
    const spans = [created(task, TASK_T0, { ...o, pollInterval: 1000 })];
    for (let i = 0; i < 4; i++) spans.push(poll(task, TASK_T0 + 1000 * (i + 1), i + 2, { gone: 'expired' }, o));
    const finding: Finding = { ...pollStorm(1).finding, task_id: task, session_id: 's-g' };
    (finding as Finding & { reason: string }).reason = TaskStormReason.AFTER_GONE;
    const tl = findingTimeline(finding, evidenceOf(spans, finding))!;
    expect(count(byLane(tl)['task']!, 'gone')).toBe(4);
    expect(tl.story).toBe(
      'The server said at 08:00:01.004 UTC that the task was gone, and its client polled it 3 more times after that: a poll storm.',
    );
  });

  for (const sameKey of [true, false]) {
    it(`${sameKey ? 'duplicate_task' : 'possible_duplicate_task'}: the first task, the second task and the first attempt's broken call on one axis`, () => {
      const { spans, finding } = duplicateTask(sameKey);
      expect(isReissueFinding(finding)).toBe(false);
      const evidence = evidenceOf(spans, finding, 3);
      const tl = findingTimeline(finding, evidence)!;
      // Every span once: a sessionless call's span is held by its task and by its trace.
      expect(
        evidence
          .timeline(finding)!
          .events.map((e) => e.span_id)
          .sort(),
      ).toEqual(spans.map((s) => s.spanId).sort());
      const lanes = byLane(tl);
      expect(Object.keys(lanes)).toEqual(['first task', 'second task', 'second task \u00b7 polls', 'first attempt']);
      expect(count(lanes['first task']!, 'created')).toBe(1);
      expect(count(lanes['second task']!, 'created')).toBe(1);
      expect(lanes['second task \u00b7 polls']).toEqual(['poll_tick']);
      // The first attempt's client span (no task id: its handle never arrived) and its broken stream.
      expect(lanes['first attempt']!.sort()).toEqual(['broken', 'call']);
      // Each creation is drawn once, though the re-issue's trace holds the second one's span too.
      expect(tl.events.filter((e) => e.type === 'created')).toHaveLength(2);
      expect(timeOf(tl, 'created')).toBe(TASK_T0 + 30);
      expect(tl.story).toBe(
        sameKey
          ? 'The call that created the task at 08:00:00.030 UTC was re-issued with the same idempotency key, and the server created a second task at 08:00:00.320 UTC: the work runs twice.'
          : 'The call that created the task at 08:00:00.030 UTC was re-issued, with no idempotency key to tie the two attempts, and the server created a second task at 08:00:00.320 UTC: the work may run twice.',
      );
    });
  }
});

describe('task-keyed evidence', () => {
  it("keeps a task's spans under its key: bounded like a request's, the ones between its first and latest dropped and counted", () => {
    const { spans, finding } = pollStorm(EVIDENCE_EVENTS * 2);
    const evidence = evidenceOf(spans, finding, 10);
    const tl = findingTimeline(finding, evidence)!;
    expect(tl.events.filter((e) => e.type !== 'created' && e.type !== 'call').length).toBeLessThanOrEqual(
      EVIDENCE_EVENTS,
    );
    expect(tl.dropped).toBe(spans.length - EVIDENCE_EVENTS);
    expect(tl.notes).toContain(
      `${tl.dropped} spans of the task left out between its first and its latest (the evidence's bound).`,
    );
    // The creation is among the first kept: the axis starts with it.
    expect(tl.events[0]!.type).toBe('created');
    expect(tl.story).toMatch(new RegExp(`polled the task ${EVIDENCE_EVENTS - 1} times`));
  });

  it("a task finding's key is its task's (a duplicate's, both tasks'); its spans stay under their requests' keys too", () => {
    const { spans, finding } = lostResult('s-keys');
    expect(findingKey(finding)).toBe(taskKey('task-client', 'task-lost-1'));
    expect(findingKey(duplicateTask(true).finding)).toBe(
      taskKey('task-client', 'task-first') + taskKey('task-client', 'task-second'),
    );
    const evidence = evidenceOf(spans, finding);
    // Held: the task's six spans; in the window: each request's own span (the notification has no request).
    expect(evidence.stats()).toMatchObject({ requests: 1, windowRequests: 5 });
    expect(evidence.timeline(finding)!.events).toHaveLength(6);
  });

  it('a task finding that names no task is drawn as before, from its request', () => {
    const { spans, finding } = lostResult('s-none');
    const unnamed: Finding = { ...finding, task_id: undefined };
    const tl = findingTimeline(unnamed, evidenceOf(spans, unnamed))!;
    // Not a task's timeline: the finding's own sentence, from its fields (finding-story.ts).
    expect(tl.task).toBeUndefined();
    expect(tl.story).toMatch(/^A task reached its outcome and its client never got it/);
    expect(tl.events).toHaveLength(1);
  });

  it('no evidence held for the task: no timeline', () => {
    const { finding } = lostResult('s-empty');
    expect(findingTimeline(finding, evidenceOf([], finding))).toBeUndefined();
  });
});
