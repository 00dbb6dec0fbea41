import {
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_TASK_GONE,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  FindingKind,
  NOTIFICATION_TASK_STATUS,
  NOTIFICATION_TASKS,
  OUTCOME_TASK_STATUSES,
  TASK_METHODS,
  TaskGone,
  TaskLostReason,
  TaskMethod,
  TaskStormReason,
} from '@resumewatch/semconv';
import type { Finding } from '@resumewatch/detector';
import type { TaskEvidence } from './evidence.js';
import { EventType, type TimelineEvent } from './timeline-event.js';
import { drawEvent, momentOf, type DrawnEvent, type DrawnTimeline, type Lane } from './timeline-view.js';

/**
 * What a task's timeline marks (none is a span of its own but the poll): the task's creation (the end
 * of the call answered with its handle), a change of its status (a tasks/get answer or a status
 * notification that showed another status than the one before), a poll (a tasks/get, at its start:
 * when the client asked), the answer that carried its outcome (ATTR_MCP_TASK_OUTCOME_DELIVERED), the
 * answer that said it is gone (ATTR_MCP_TASK_GONE), and the end of the ttl the server announced.
 */
export const TaskMoment = {
  CREATED: 'created',
  STATUS: 'status_change',
  POLL: 'poll_tick',
  DELIVERED: 'delivered',
  GONE: 'gone',
  TTL: 'ttl',
} as const;
export type TaskMoment = (typeof TaskMoment)[keyof typeof TaskMoment];

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** A time of day as the story says it: `12:00:01.200 UTC`. */
function clock(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 23)} UTC`;
}

function duration(ms: number): string {
  return ms >= 1000 ? `${Number((ms / 1000).toFixed(2))} s` : `${Math.round(ms)} ms`;
}

/** What one task's spans say, read once, earliest first: the story's facts. */
interface TaskFacts {
  created?: number;
  /** The announced ttl's end: created + ttl (absent: no ttl said, or unlimited). */
  deadline?: number;
  ttl?: number;
  pollInterval?: number;
  /** When an outcome status (completed, failed) was first shown, and which. */
  done?: { at: number; status: string };
  lastStatus?: string;
  delivered?: number;
  gone?: { at: number; reason: string };
  polls: number[];
  /** Polls sooner than half the announced interval after the one before. */
  fastPolls: number;
  pollsAfterGone: number;
}

/** The spans of one task drawn on its two lanes (its life, its polls), and what they say. */
function drawTask(
  events: readonly TimelineEvent[],
  lifeLane: number,
  pollLane: number,
  drawn: DrawnEvent[],
  seen: Set<string>,
): TaskFacts {
  const facts: TaskFacts = { polls: [], fastPolls: 0, pollsAfterGone: 0 };
  const sorted = [...events].sort((a, b) => a.end - b.end);
  let status: string | undefined;
  for (const e of sorted) {
    seen.add(e.span_id);
    const a = e.attributes;
    const method = str(a[ATTR_MCP_METHOD_NAME]);
    const shown = str(a[ATTR_MCP_TASK_STATUS]);
    const mark = (type: TaskMoment, at: number, short: string, what: string, lane = lifeLane): void =>
      void drawn.push({ lane, start: at, end: at, type, short, what, facts: [], span_id: e.span_id });
    if (e.type === EventType.CALL && method !== undefined && !TASK_METHODS.includes(method) && !notification(method)) {
      // The call answered with the handle. A second creating span of the task (its server's side, sent
      // under the same service) is drawn as a call, not as a second creation.
      if (facts.created === undefined) {
        facts.created = e.end;
        facts.ttl = num(a[ATTR_MCP_TASK_TTL_MS]);
        facts.pollInterval = num(a[ATTR_MCP_TASK_POLL_INTERVAL_MS]);
        if (facts.ttl !== undefined) facts.deadline = e.end + facts.ttl;
        // One mark, where the handle was answered, with the call's facts (its ttl, its poll interval).
        drawn.push({
          ...drawEvent(e, lifeLane, new Set()),
          type: TaskMoment.CREATED,
          start: e.end,
          short: 'created',
          what: `task created by ${method}` + (shown ? `, ${shown}` : ''),
        });
        status = shown;
        if (shown) facts.lastStatus = shown;
        if (shown && OUTCOME_TASK_STATUSES.includes(shown)) facts.done = { at: e.end, status: shown };
        continue;
      }
    }
    if (e.type === EventType.CALL && method === TaskMethod.GET) {
      // A poll: a tick where the client asked; its answer's marks at its end.
      const previous = facts.polls[facts.polls.length - 1];
      if (previous !== undefined && facts.pollInterval !== undefined && e.start - previous < facts.pollInterval / 2)
        facts.fastPolls++;
      if (facts.gone !== undefined) facts.pollsAfterGone++;
      facts.polls.push(e.start);
      drawn.push({ ...drawEvent(e, pollLane, new Set()), type: TaskMoment.POLL, short: '', what: 'poll (tasks/get)' });
      if (facts.pollInterval === undefined) facts.pollInterval = num(a[ATTR_MCP_TASK_POLL_INTERVAL_MS]);
    } else if (e.type === EventType.CALL && !(method !== undefined && notification(method)))
      drawn.push(drawEvent(e, lifeLane, new Set()));
    if (shown !== undefined && shown !== status) {
      const notified = e.type === EventType.TASK_STATUS || (method !== undefined && notification(method));
      const source = notified ? 'a status notification' : `the answer to ${method ?? 'a request'}`;
      mark(TaskMoment.STATUS, e.end, shown, `status ${shown}, as ${source} showed it`);
      // A notification is drawn by this mark alone: its facts go with it.
      if (notified) drawn[drawn.length - 1]!.facts = drawEvent(e, lifeLane, new Set()).facts;
      status = shown;
    }
    if (shown !== undefined) facts.lastStatus = shown;
    if (shown !== undefined && OUTCOME_TASK_STATUSES.includes(shown) && facts.done === undefined)
      facts.done = { at: e.end, status: shown };
    if (a[ATTR_MCP_TASK_OUTCOME_DELIVERED] === true) {
      facts.delivered ??= e.end;
      mark(TaskMoment.DELIVERED, e.end, 'outcome', `the outcome reached the client (${method ?? 'an answer'})`);
    }
    const gone = str(a[ATTR_MCP_TASK_GONE]);
    if (gone !== undefined) {
      facts.gone ??= { at: e.end, reason: gone };
      const words = gone === TaskGone.EXPIRED ? 'expired' : 'not found';
      mark(TaskMoment.GONE, e.end, 'gone', `the server answered the task is gone: ${words} (${method ?? 'an answer'})`);
    }
  }
  return facts;
}

/** A status notification's method: a span that names one (whatever its span name) created nothing. */
function notification(method: string): boolean {
  return method === NOTIFICATION_TASK_STATUS || method === NOTIFICATION_TASKS;
}

/** The names of a task finding's lanes: one task's, or a duplicate's two. */
const LANES = {
  task: ['task', 'task \u00b7 polls'],
  first: ['first task', 'first task \u00b7 polls'],
  second: ['second task', 'second task \u00b7 polls'],
} as const;

/**
 * A task finding's timeline (findings of TASK_FINDING_KINDS that name their task): on one time axis,
 * the task's life on one lane (its creation, each change of status, the answer that carried its outcome
 * or said it is gone, the end of its announced ttl) and its polls as ticks on another. A duplicate's
 * second task the same, below the first, and the two attempts' client spans when their traces are held
 * (spans without a session). What the finding means is told in one sentence, `story`. It draws from the
 * spans and the finding alone, never from the detector's records.
 */
export function drawTaskTimeline(f: Finding, evidence: TaskEvidence): DrawnTimeline {
  const duplicate = f.kind === FindingKind.DUPLICATE_TASK || f.kind === FindingKind.POSSIBLE_DUPLICATE_TASK;
  const lanes: Lane[] = [];
  const drawn: DrawnEvent[] = [];
  const seen = new Set<string>();
  const notes: string[] = [];
  const laneOf = (label: string): number => lanes.push({ stream: '', resumed: false, label }) - 1;
  const [lifeName, pollName] = duplicate ? LANES.first : LANES.task;
  const life = laneOf(lifeName);
  const first = drawTask(evidence.task?.events ?? [], life, laneOf(pollName), drawn, seen);
  let second: TaskFacts | undefined;
  if (duplicate) {
    const secondLife = laneOf(LANES.second[0]);
    second = drawTask(evidence.second?.events ?? [], secondLife, laneOf(LANES.second[1]), drawn, seen);
    if (!evidence.second?.events.length) lanes[secondLife]!.unknown = 'no span of the second task is held';
    // The attempts' spans that are no task's (the first attempt's call, whose answer never arrived).
    for (const [which, label] of [
      ['first', 'first attempt'],
      ['reissue', 're-issue'],
    ] as const) {
      const own = (evidence[which]?.events ?? []).filter((e) => !seen.has(e.span_id));
      if (own.length === 0) continue;
      const lane = laneOf(label);
      for (const e of own) {
        drawn.push(drawEvent(e, lane, new Set()));
        const moment = e.type === EventType.CALL ? momentOf(e, which === 'first') : undefined;
        if (moment) drawn.push({ lane, start: e.end, end: e.end, ...moment, facts: [], span_id: e.span_id });
      }
    }
  }
  if (!evidence.task?.events.length) lanes[life]!.unknown = 'no span of the task is held (the evidence let them go)';
  // Empty poll lanes go: a task polled never has nothing to tick.
  for (let i = lanes.length - 1; i >= 0; i--) {
    if (!lanes[i]!.label?.endsWith('polls') || drawn.some((d) => d.lane === i)) continue;
    lanes.splice(i, 1);
    for (const d of drawn) if (d.lane > i) d.lane--;
  }
  let start = Infinity;
  let end = -Infinity;
  for (const d of drawn) {
    start = Math.min(start, d.start);
    end = Math.max(end, d.end);
  }
  if (!Number.isFinite(start)) [start, end] = [f.first_time_unix_ms, f.last_time_unix_ms];
  // The ttl's end, where it matters to the finding or falls within what is drawn; else said in words (a
  // five-minute ttl would squeeze a storm's seconds into the axis's first pixels).
  for (const [facts, lane] of [
    [first, life],
    [second, duplicate ? lanes.findIndex((l) => l.label === LANES.second[0]) : -1],
  ] as const) {
    if (!facts || facts.deadline === undefined || lane < 0) continue;
    const deadline = facts.deadline;
    if (f.kind === FindingKind.LOST_TASK_RESULT || deadline <= end) {
      drawn.push({
        lane,
        start: deadline,
        end: deadline,
        type: TaskMoment.TTL,
        short: 'ttl',
        what: `its ttl of ${duration(facts.ttl!)} ran out`,
        facts: [],
        span_id: '',
      });
      end = Math.max(end, deadline);
    } else notes.push(`Its ttl of ${duration(facts.ttl!)} runs out at ${clock(deadline)}, after what is drawn.`);
  }
  drawn.sort((a, b) => a.start - b.start);
  const dropped = (['task', 'second', 'first', 'reissue'] as const).reduce(
    (n, which) => n + (evidence[which]?.dropped ?? 0),
    0,
  );
  if (dropped > 0)
    notes.push(`${dropped} spans of the task left out between its first and its latest (the evidence's bound).`);
  return { lanes, events: drawn, start, end, dropped, notes, story: story(f, first, second), task: true };
}

/** What the finding means, in one sentence, from what the spans say. */
function story(f: Finding, task: TaskFacts, second: TaskFacts | undefined): string {
  const reason = (f as Finding & { reason?: string }).reason;
  const reached = task.done
    ? `The task ${task.done.status} at ${clock(task.done.at)}`
    : task.lastStatus
      ? `The task's last status seen was ${task.lastStatus}`
      : task.created !== undefined
        ? `The task was created at ${clock(task.created)}`
        : 'The task was created';
  switch (f.kind) {
    case FindingKind.LOST_TASK_RESULT: {
      if (task.delivered !== undefined)
        return `${reached}, and an answer carried its outcome to the client at ${clock(task.delivered)}.`;
      if (task.gone !== undefined && reason !== TaskLostReason.TTL_PASSED) {
        const deadline = task.deadline;
        const when =
          deadline === undefined
            ? ''
            : task.gone.at >= deadline
              ? ` after its ttl (it ran out at ${clock(deadline)})`
              : ` before its ttl ran out (at ${clock(deadline)})`;
        const gone = task.gone.reason === TaskGone.EXPIRED ? 'had expired' : 'was not found';
        return `${reached}, its client asked for the result${when} and was told at ${clock(task.gone.at)} that it ${gone}: the result never reached it.`;
      }
      const ttl = task.deadline !== undefined ? `, and its ttl ran out at ${clock(task.deadline)}` : '';
      return `${reached}; no answer carried its outcome to the client${ttl}: the result never reached it.`;
    }
    case FindingKind.TASK_POLL_STORM: {
      if ((reason === TaskStormReason.AFTER_GONE || reason === undefined) && task.gone && task.pollsAfterGone > 0)
        return `The server said at ${clock(task.gone.at)} that the task was gone, and its client polled it ${task.pollsAfterGone} more times after that: a poll storm.`;
      const polls = task.polls;
      const between = polls.length > 1 ? ` between ${clock(polls[0]!)} and ${clock(polls[polls.length - 1]!)}` : '';
      const rate =
        task.pollInterval !== undefined
          ? `, ${task.fastPolls} of them sooner than half the ${duration(task.pollInterval)} the server asked for between polls`
          : '';
      return `Its client polled the task ${polls.length} times${between}${rate}: a poll storm.`;
    }
    default: {
      const created = task.created !== undefined ? ` at ${clock(task.created)}` : '';
      const again =
        second?.created !== undefined
          ? `the server created a second task at ${clock(second.created)}`
          : 'a second task was created';
      return f.kind === FindingKind.DUPLICATE_TASK
        ? `The call that created the task${created} was re-issued with the same idempotency key, and ${again}: the work runs twice.`
        : `The call that created the task${created} was re-issued, with no idempotency key to tie the two attempts, and ${again}: the work may run twice.`;
    }
  }
}
