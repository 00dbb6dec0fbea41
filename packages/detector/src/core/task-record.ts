import { TASK_STATUSES, TaskGone, TaskShape, type TaskLostReason } from '@resumewatch/semconv';

/**
 * The numbers of a task record, by name: one Float64Array per record (NaN: not known), so that a record
 * is a few objects whatever it holds, and the state codec writes each field by its name.
 */
export const NUMBER_FIELDS = [
  /** End of the creating span (the handle's arrival). */
  'createdAt',
  /** Announced ttl, ms; NaN when unlimited or not said. */
  'ttl',
  /** Latest announced poll interval, ms; NaN when not said. */
  'pollInterval',
  /** Latest status (index into TASK_STATUSES + 1) and the time it was shown. */
  'latestStatus',
  'statusAt',
  /** Earliest time a terminal status (or a delivered outcome) was shown. */
  'terminalAt',
  /** Earliest delivery of the outcome to the client. */
  'deliveredAt',
  /** Earliest cancellation (tasks/cancel acknowledged, or status cancelled). */
  'cancelledAt',
  /** Earliest gone answer, and what it said: 1 not found, 2 expired. */
  'goneAt',
  'gone',
  'lastPollAt',
  /** The current run of early polls: where it started, and how many. */
  'earlyFrom',
  'earlyCount',
  'pollsAfterGone',
  /** Polls seen in all (the ticks hold the last TICKS of them). */
  'polls',
  'lastSeenAt',
  /** The time a lost_task_result was reported at (its last evidence). */
  'lostAt',
  /** Bits: reported lost, retracted, storm, duplicate; terminal, with an outcome; extension shape. */
  'flags',
] as const;
export type NumberField = (typeof NUMBER_FIELDS)[number];
export const N = Object.fromEntries(NUMBER_FIELDS.map((name, i) => [name, i])) as { [K in NumberField]: number };

/** Poll times kept for the page (a ring), beside the total count. */
export const TICKS = 64;
/** Status changes kept for the page (the latest ones). */
export const STATUS_CHANGES = 16;

// Bits of a record's flags (N.flags).
export const LOST = 1;
export const LOST_RETRACTED = 2;
export const STORM = 4;
export const DUPLICATE = 8;
export const TERMINAL = 16;
/** Terminal with an outcome (completed or failed). */
export const OUTCOME = 32;
export const EXTENSION = 64;

/** A re-issue waiting for its first attempt's task to be known (by the first attempt's trace). */
export interface PendingReissue {
  /** The re-issuing client's service (interned id). */
  service: number;
  sessionId: string;
  requestId: string;
  traceId: string;
  spanId: string;
  start: number;
  end: number;
  /** The re-issue carries its first attempt's idempotency key: a certain duplicate. */
  sameKey: boolean;
  /** The task id the re-issue's answer carried ('' when none). */
  taskId: string;
}

/** A task's life, for the page: plain data, times in Unix ms, null when not known. */
export interface TaskTimeline {
  service: string;
  taskId: string;
  shape: TaskShape;
  createdAt: number;
  createTraceId: string;
  createSpanId: string;
  ttlMs: number | null;
  pollIntervalMs: number | null;
  /** Status changes as they were learnt (the latest STATUS_CHANGES). */
  statuses: { time: number; status: string }[];
  /** The latest TICKS poll times, ascending, and the count of every poll. */
  polls: { total: number; times: number[] };
  /** When the outcome reached the client. */
  resultAt: number | null;
  /** When the server said the task is gone, and how. */
  goneAt: number | null;
  gone: TaskGone | null;
  /** createdAt + ttl. */
  expiresAt: number | null;
  cancelledAt: number | null;
  /** A re-issue of the creating call: its trace, and the second task's id when known ('' otherwise). */
  duplicate: { traceId: string; taskId: string } | null;
}

/**
 * One live task. Bytes (measured: 20,000 tasks with 36-character task and session ids, `node
 * --expose-gc`, V8 heap plus typed-array backing store; `pnpm bench detector-tasks` on a quiet machine):
 * about 1.5 KB for a task never polled (1,459 B measured) — this object, its Float64Array of 18 numbers
 * (~200 of heap, 144 of backing store), its ids (task, session, trace, span, request), its status changes,
 * its entries in its service's map and the trace index — and at most about 2.4 KB (2,326 B measured, its
 * poll-time ring grown to TICKS: 512 bytes of backing store). The detector README states the same.
 */
export class TaskRecord {
  readonly n = new Float64Array(NUMBER_FIELDS.length).fill(NaN);
  createTrace = '';
  createSpan = '';
  /** The client: its session id ('' when none: the trace tells it apart). */
  sessionId = '';
  /** The creating call's JSON-RPC id. */
  requestId = '';
  deliverSpan = '';
  goneSpan = '';
  goneTrace = '';
  lastPollSpan = '';
  duplicateTaskId = '';
  duplicateTrace = '';
  lostReason: TaskLostReason | undefined = undefined;
  /** Poll times, a ring of TICKS written at n.polls % TICKS; allocated at the first poll, grown to TICKS. */
  ticks: Float64Array | null = null;
  /** Status changes, [time, status index + 1] pairs, the latest STATUS_CHANGES. */
  changes: number[] | null = null;
  /** When the family's advance() looks at it next (its entry in the due heap); Infinity: not scheduled. Not kept in the state. */
  due = Infinity;
  /** It left its service's map (released, or evicted by the cap): its heap entries are stale. */
  dropped = false;

  constructor(
    readonly service: number,
    readonly taskId: string,
  ) {
    this.n[N.flags] = 0;
    this.n[N.polls] = 0;
    this.n[N.pollsAfterGone] = 0;
    this.n[N.earlyCount] = 0;
  }

  tick(at: number): void {
    const polls = this.n[N.polls]!;
    // Grown 4, 8, ... TICKS as polls come (most tasks are polled a few times), then a ring of TICKS.
    let ticks = this.ticks;
    if (ticks === null || (polls === ticks.length && polls < TICKS)) {
      const grown = new Float64Array(ticks === null ? 4 : ticks.length * 2);
      if (ticks !== null) grown.set(ticks);
      ticks = this.ticks = grown;
    }
    ticks[polls % TICKS] = at;
    this.n[N.polls] = polls + 1;
  }

  /** The poll times kept, oldest written first. */
  tickTimes(): number[] {
    const polls = this.n[N.polls]!;
    if (this.ticks === null) return [];
    const kept = Math.min(polls, TICKS);
    const out: number[] = [];
    for (let i = polls - kept; i < polls; i++) out.push(this.ticks[i % TICKS]!);
    return out;
  }

  /** How many kept polls are later than `at`. */
  ticksAfter(at: number): number {
    let count = 0;
    for (const t of this.tickTimes()) if (t > at) count++;
    return count;
  }

  change(at: number, status: number): void {
    // Most tasks change status two or three times: the list starts at its first pair's size.
    if (this.changes === null) {
      this.changes = [at, status];
      return;
    }
    const changes = this.changes;
    if (changes.length >= STATUS_CHANGES * 2) changes.splice(0, 2);
    changes.push(at, status);
  }

  timeline(service: string): TaskTimeline {
    const n = this.n;
    const known = (v: number): number | null => (v >= 0 ? v : null);
    const ttl = known(n[N.ttl]!);
    const statuses: { time: number; status: string }[] = [];
    const changes = this.changes ?? [];
    for (let i = 0; i < changes.length; i += 2)
      statuses.push({ time: changes[i]!, status: TASK_STATUSES[changes[i + 1]! - 1]! });
    return {
      service,
      taskId: this.taskId,
      shape: (n[N.flags]! & EXTENSION) !== 0 ? TaskShape.EXTENSION : TaskShape.AUGMENTED,
      createdAt: n[N.createdAt]!,
      createTraceId: this.createTrace,
      createSpanId: this.createSpan,
      ttlMs: ttl,
      pollIntervalMs: known(n[N.pollInterval]!),
      statuses,
      polls: { total: n[N.polls]!, times: this.tickTimes().sort((a, b) => a - b) },
      resultAt: known(n[N.deliveredAt]!),
      goneAt: known(n[N.goneAt]!),
      gone: n[N.gone] === 2 ? TaskGone.EXPIRED : n[N.gone] === 1 ? TaskGone.NOT_FOUND : null,
      expiresAt: ttl === null ? null : n[N.createdAt]! + ttl,
      cancelledAt: known(n[N.cancelledAt]!),
      duplicate: this.duplicateTrace.length > 0 ? { traceId: this.duplicateTrace, taskId: this.duplicateTaskId } : null,
    };
  }
}
