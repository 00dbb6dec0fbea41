import { BoundedMap, type CappedLabels } from '@resumewatch/bounded';
import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_TASK_GONE,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  FindingKind,
  FindingRecord,
  NOTIFICATION_TASK_STATUS,
  NOTIFICATION_TASKS,
  OUTCOME_TASK_STATUSES,
  SPAN_TASK_STATUS,
  TASK_METHODS,
  TASK_STATUSES,
  TaskGone,
  TaskLostReason,
  TaskMethod,
  TaskShape,
  TaskStatus,
  TaskStormReason,
} from '@resumewatch/semconv';
import { DueHeap } from './due-heap.js';
import type { DetectorOptions } from './options.js';
import { UNKNOWN_SERVICE } from './services.js';
import {
  DUPLICATE,
  EXTENSION,
  LOST,
  LOST_RETRACTED,
  N,
  OUTCOME,
  STORM,
  TERMINAL,
  TaskRecord,
  type PendingReissue,
  type TaskTimeline,
} from './task-record.js';
import type { DetectorEvents, Finding, SpanRecord } from './types.js';

export type { TaskTimeline } from './task-record.js';

/** Longer ids are not tasks the detector keeps (the id policy keys ids to 64 hex digits or fewer). */
const MAX_TASK_ID = 256;
const TASK_METHOD_SET = new Set<string>(TASK_METHODS);
const NOTIFICATIONS = new Set<string>([NOTIFICATION_TASK_STATUS, NOTIFICATION_TASKS]);
const OUTCOME_STATUSES = new Set<string>(OUTCOME_TASK_STATUSES);
const CANCELLED = TASK_STATUSES.indexOf(TaskStatus.CANCELLED) + 1;

/** What the family needs of its detector: its options, service interning, events and findings sink. */
export interface TaskFamilyInit {
  options: DetectorOptions;
  services: CappedLabels<string>;
  events: DetectorEvents | undefined;
  onFinding: ((finding: Finding) => void) | undefined;
}

/**
 * The tasks family (issue 38): one bounded record per live task, keyed by (service, task id), fed the
 * spans that carry ATTR_MCP_TASK_ID (request spans and SPAN_TASK_STATUS spans) and the client's re-issues.
 * Its rules:
 * - lost_task_result (retractable): the outcome never reached the client, and the server said the task is
 *   gone (reason `gone`), or it reached completed|failed and its announced ttl passed (`ttl_passed`);
 * - task_poll_storm: polls sooner than half the announced interval, sustained, or polls after gone;
 * - duplicate_task / possible_duplicate_task: a re-issued call whose first attempt's trace created a task.
 * Time: spans' own times for what they show; verdicts that rest on a ttl passing wait for advance(now).
 */
export class TaskFamily {
  private readonly options: DetectorOptions;
  private readonly services: CappedLabels<string>;
  private readonly events: DetectorEvents | undefined;
  private readonly onFinding: ((finding: Finding) => void) | undefined;
  /** Per service (interned id): its live tasks by id, least recently touched first, capped by maxTasksPerService. */
  private readonly byService = new Map<number, BoundedMap<string, TaskRecord>>();
  /** The trace of each task's creating span: where a re-issue finds its first attempt's task. Never larger than the records. */
  private readonly byTrace = new Map<string, TaskRecord>();
  /** Re-issues whose first attempt's task is not known yet (its span may come later), by the first attempt's trace. */
  private readonly pending: BoundedMap<string, PendingReissue>;
  /** The detector's time (advance): ttl verdicts and releases. */
  private now = -Infinity;
  /** The detector's time, or the latest span end seen if later: the pending re-issues' clock (as reissues.ts touches). */
  private latest = 0;
  /**
   * Records by the time advance() has to look at them again (a ttl verdict, a release). A record is
   * pushed only when its due time moves earlier (`TaskRecord.due`); a later one is found when the entry
   * pops. Rebuilt from the live records when stale entries (of records gone or moved) outnumber them.
   */
  private readonly dueHeap = new DueHeap<TaskRecord>();
  private live = 0;
  /** Evictions by the cap of records and maps no longer held (a restored count, or a dropped service's). */
  private evictionsBase = 0;
  /** "Gone" answers for a task this detector never saw created: counted, never a finding (another replica's?). */
  unknownGone = 0;

  constructor(init: TaskFamilyInit) {
    this.options = init.options;
    this.services = init.services;
    this.events = init.events;
    this.onFinding = init.onFinding;
    this.pending = new BoundedMap(
      Math.max(1, init.options.maxTasksPerService),
      init.options.retentionMs,
      () => this.latest,
    );
  }

  /** Live task records, across services. */
  get size(): number {
    return this.live;
  }

  /** Records dropped by the per-service cap. */
  get evictions(): number {
    let n = this.evictionsBase;
    for (const map of this.byService.values()) n += map.evictions;
    return n;
  }

  // ---------------------------------------------------------------------------------------------
  // Spans in.
  // ---------------------------------------------------------------------------------------------

  /**
   * A span that carries ATTR_MCP_TASK_ID: a call answered with a handle (creates the task), a `tasks/*`
   * request, or a SPAN_TASK_STATUS span (a status notification). False: it names no task (a valid id)
   * or its times are not times; nothing was done with it.
   */
  span(span: SpanRecord): boolean {
    const attrs = span.attributes;
    const taskId = attrs[ATTR_MCP_TASK_ID];
    if (typeof taskId !== 'string' || taskId.length === 0 || taskId.length > MAX_TASK_ID) return false;
    const start = span.startTimeUnixMs;
    const end = span.endTimeUnixMs;
    if (!(start >= 0) || !(end >= start)) return false;
    if (end > this.latest) this.latest = end;
    const serviceName = span.service || UNKNOWN_SERVICE;
    const status = span.name === SPAN_TASK_STATUS;
    const method = status ? undefined : attrs[ATTR_MCP_METHOD_NAME];
    // Neither a tasks/* request nor a status notification's own span creates a task: only a call answered with a handle.
    const taskMethod = typeof method === 'string' && (TASK_METHOD_SET.has(method) || NOTIFICATIONS.has(method));
    const service = this.services.idOf(serviceName);
    const poll = method === TaskMethod.GET;
    if (poll) this.events?.taskPolled?.(this.services.keyOf(service)!);
    let record = this.byService.get(service)?.get(taskId);
    if (!status && !taskMethod && typeof method === 'string') record = this.created(span, service, taskId, record);
    if (record === undefined) {
      if (attrs[ATTR_MCP_TASK_GONE] !== undefined) this.unknownGone++;
      return true;
    }
    this.byService.get(service)!.touch(taskId);
    const n = record.n;
    if (end > n[N.lastSeenAt]! || !(n[N.lastSeenAt]! >= 0)) n[N.lastSeenAt] = end;
    const ttl = attrs[ATTR_MCP_TASK_TTL_MS];
    // The ttl first announced holds (a server does not move it); a later answer may be the first to say it.
    if (typeof ttl === 'number' && ttl >= 0 && !(n[N.ttl]! >= 0)) n[N.ttl] = ttl;
    const interval = attrs[ATTR_MCP_TASK_POLL_INTERVAL_MS];
    // The latest interval holds: a server may ask for slower polling as the work goes on.
    if (typeof interval === 'number' && interval > 0) n[N.pollInterval] = interval;
    const said = attrs[ATTR_MCP_TASK_STATUS];
    if (typeof said === 'string') this.status(record, said, end);
    if (method === TaskMethod.CANCEL && attrs[ATTR_ERROR_TYPE] === undefined) this.cancelled(record, end);
    if (attrs[ATTR_MCP_TASK_OUTCOME_DELIVERED] === true) this.delivered(record, span, end);
    const gone = attrs[ATTR_MCP_TASK_GONE];
    if (typeof gone === 'string') this.gone(record, span, gone, end);
    if (poll) this.poll(record, span, start);
    this.lostTaskResult(record);
    this.schedule(record);
    return true;
  }

  /** The task's creating span (a call answered with a handle): a new record, or an earlier creating time. */
  private created(span: SpanRecord, service: number, taskId: string, known: TaskRecord | undefined): TaskRecord {
    const end = span.endTimeUnixMs;
    if (known !== undefined) {
      // The same creation seen again (re-exported, or another span of its trace): the earliest holds.
      if (end < known.n[N.createdAt]!) this.creatingSpan(known, span);
      return known;
    }
    let map = this.byService.get(service);
    if (map === undefined) {
      map = new BoundedMap<string, TaskRecord>(
        Math.max(1, this.options.maxTasksPerService),
        Infinity,
        () => 0,
        (_id, dropped) => this.dropped(dropped),
      );
      this.byService.set(service, map);
    }
    const record = new TaskRecord(service, taskId);
    this.creatingSpan(record, span);
    const shape =
      span.attributes[ATTR_MCP_TASK_SHAPE] === TaskShape.EXTENSION ? TaskShape.EXTENSION : TaskShape.AUGMENTED;
    if (shape === TaskShape.EXTENSION) record.n[N.flags] = EXTENSION;
    this.live++;
    map.set(taskId, record);
    this.events?.taskCreated?.(this.services.keyOf(service)!, shape);
    const waiting = this.pending.get(span.traceId);
    if (waiting !== undefined) {
      this.pending.delete(span.traceId);
      this.duplicateTask(record, waiting);
    }
    return record;
  }

  private creatingSpan(record: TaskRecord, span: SpanRecord): void {
    const attrs = span.attributes;
    const session = attrs[ATTR_MCP_SESSION_ID];
    const req = attrs[ATTR_JSONRPC_REQUEST_ID];
    if (this.byTrace.get(record.createTrace) === record) this.byTrace.delete(record.createTrace);
    record.n[N.createdAt] = span.endTimeUnixMs;
    record.createTrace = span.traceId;
    record.createSpan = span.spanId;
    record.sessionId = typeof session === 'string' ? session : '';
    record.requestId = typeof req === 'string' ? req : typeof req === 'number' ? String(req) : '';
    if (span.traceId.length > 0 && !this.byTrace.has(span.traceId)) this.byTrace.set(span.traceId, record);
  }

  /** A record leaves (released, or evicted by its service's cap). */
  private dropped(record: TaskRecord): void {
    this.live--;
    record.dropped = true;
    if (this.byTrace.get(record.createTrace) === record) this.byTrace.delete(record.createTrace);
  }

  private status(record: TaskRecord, said: string, at: number): void {
    const index = TASK_STATUSES.indexOf(said) + 1;
    if (index === 0) return;
    const n = record.n;
    const flags = n[N.flags]!;
    // A terminal status is final: a status notification that arrives after it is older news.
    if ((flags & TERMINAL) === 0 && !(at < n[N.statusAt]!)) {
      if (n[N.latestStatus] !== index) record.change(at, index);
      n[N.latestStatus] = index;
      n[N.statusAt] = at;
    }
    if (index === CANCELLED) this.cancelled(record, at);
    if (index === CANCELLED || OUTCOME_STATUSES.has(said)) {
      if ((flags & TERMINAL) === 0 || at < n[N.terminalAt]!) n[N.terminalAt] = at;
      n[N.flags] = flags | TERMINAL | (index === CANCELLED ? 0 : OUTCOME);
      if ((flags & TERMINAL) === 0 && n[N.latestStatus] !== index) {
        record.change(at, index);
        n[N.latestStatus] = index;
        n[N.statusAt] = at;
      }
    }
  }

  private cancelled(record: TaskRecord, at: number): void {
    if (!(at >= record.n[N.cancelledAt]!)) record.n[N.cancelledAt] = at;
  }

  /** The task's outcome reached the client (tasks/result, or an inline outcome): a lost_task_result reported before is retracted. */
  private delivered(record: TaskRecord, span: SpanRecord, at: number): void {
    const n = record.n;
    if (!(at >= n[N.deliveredAt]!)) {
      n[N.deliveredAt] = at;
      record.deliverSpan = span.spanId;
    }
    const flags = n[N.flags]!;
    if ((flags & LOST) === 0 || (flags & LOST_RETRACTED) !== 0) return;
    n[N.flags] = flags | LOST_RETRACTED;
    this.emit(record, FindingKind.LOST_TASK_RESULT, span.traceId, n[N.lostAt]!, at, [span.spanId], {
      reason: record.lostReason,
      record: FindingRecord.RETRACTION,
    });
  }

  /** The server said it no longer serves the task: the earliest such answer holds, `expired` if any said so. */
  private gone(record: TaskRecord, span: SpanRecord, said: string, at: number): void {
    const n = record.n;
    const expired = said === TaskGone.EXPIRED;
    if (expired) n[N.gone] = 2;
    else if (!(n[N.gone]! >= 1)) n[N.gone] = 1;
    if (at >= n[N.goneAt]!) return;
    n[N.goneAt] = at;
    record.goneSpan = span.spanId;
    record.goneTrace = span.traceId;
    // Polls already seen may be later than this answer (spans out of order): count them from the ticks.
    n[N.pollsAfterGone] = record.ticksAfter(at);
  }

  /** One `tasks/get` of the task, at its start (the client's send time). */
  private poll(record: TaskRecord, span: SpanRecord, at: number): void {
    const n = record.n;
    if (record.lastPollSpan === span.spanId) return;
    record.lastPollSpan = span.spanId;
    record.tick(at);
    if (at > n[N.goneAt]!) n[N.pollsAfterGone] = n[N.pollsAfterGone]! + 1;
    const last = n[N.lastPollAt]!;
    const interval = n[N.pollInterval]!;
    if (last >= 0 && interval > 0) {
      // Sooner than half the interval: a client that keeps to the interval (with jitter) is never early.
      if (Math.abs(at - last) < interval / 2) {
        const from = n[N.earlyFrom]!;
        if (!(from >= 0) || at - from > this.options.taskPollStormWindowMs || at < from) {
          n[N.earlyFrom] = Math.min(at, last);
          n[N.earlyCount] = 1;
        } else {
          n[N.earlyCount] = n[N.earlyCount]! + 1;
        }
      } else {
        n[N.earlyCount] = 0;
        n[N.earlyFrom] = NaN;
      }
    }
    if (!(at <= last)) n[N.lastPollAt] = at;
    this.taskPollStorm(record, span, at);
  }

  /** A client span that re-issues the call of trace `firstTrace` (its reply was not received). */
  reissue(span: SpanRecord, firstTrace: string): void {
    if (firstTrace.length !== 32 || span.traceId.length !== 32 || span.spanId.length !== 16) return;
    if (!(span.startTimeUnixMs >= 0) || !(span.endTimeUnixMs >= span.startTimeUnixMs)) return;
    if (span.endTimeUnixMs > this.latest) this.latest = span.endTimeUnixMs;
    const attrs = span.attributes;
    const session = attrs[ATTR_MCP_SESSION_ID];
    const req = attrs[ATTR_JSONRPC_REQUEST_ID];
    const taskId = attrs[ATTR_MCP_TASK_ID];
    const reissue: PendingReissue = {
      service: this.services.idOf(span.service || UNKNOWN_SERVICE),
      sessionId: typeof session === 'string' ? session : '',
      requestId: typeof req === 'string' ? req : typeof req === 'number' ? String(req) : '',
      traceId: span.traceId,
      spanId: span.spanId,
      start: span.startTimeUnixMs,
      end: span.endTimeUnixMs,
      sameKey: attrs[ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY] === true,
      taskId: typeof taskId === 'string' && taskId.length <= MAX_TASK_ID ? taskId : '',
    };
    const first = this.byTrace.get(firstTrace);
    if (first !== undefined) this.duplicateTask(first, reissue);
    // Not known yet (the server's span may come later): kept, and tried when a task of that trace is created.
    else if (!this.pending.has(firstTrace)) this.pending.set(firstTrace, reissue);
  }

  // ---------------------------------------------------------------------------------------------
  // Rules.
  // ---------------------------------------------------------------------------------------------

  /**
   * duplicate_task (the re-issue carries its first attempt's idempotency key) or possible_duplicate_task:
   * a call re-issued after its first attempt created a task. Once per first task. A re-issue answered
   * with the same task's handle (a gateway under --enforce gave it back) made no second task: no finding.
   */
  private duplicateTask(first: TaskRecord, reissue: PendingReissue): void {
    const n = first.n;
    if ((n[N.flags]! & DUPLICATE) !== 0 || reissue.taskId === first.taskId) return;
    n[N.flags] = n[N.flags]! | DUPLICATE;
    const second = reissue.taskId || this.byTrace.get(reissue.traceId)?.taskId || '';
    first.duplicateTaskId = second;
    first.duplicateTrace = reissue.traceId;
    if (!this.onFinding) return;
    const finding: Finding = {
      kind: reissue.sameKey ? FindingKind.DUPLICATE_TASK : FindingKind.POSSIBLE_DUPLICATE_TASK,
      service: this.services.keyOf(reissue.service)!,
      session_id: reissue.sessionId,
      request_id: reissue.requestId,
      trace_id: reissue.traceId,
      first_time_unix_ms: Math.min(n[N.createdAt]!, reissue.start),
      last_time_unix_ms: Math.max(n[N.createdAt]!, reissue.end),
      span_ids: [first.createSpan, reissue.spanId],
      first_trace_id: first.createTrace,
      task_id: first.taskId,
    };
    if (second.length > 0) finding.duplicate_task_id = second;
    this.onFinding(finding);
  }

  /**
   * lost_task_result, decided on what is known at the detector's time: a gone answer that the evidence
   * shows is an expiry (the message said so, or it came at or after created-at + ttl) at once; a plain
   * "not found" before the ttl passed (another replica's answer?) once the ttl has passed with the outcome
   * still undelivered; and a task that reached completed|failed whose ttl passed undelivered. A task with
   * no announced ttl is never judged by its passing; a cancelled one never at all.
   */
  private lostTaskResult(record: TaskRecord): void {
    const n = record.n;
    const flags = n[N.flags]!;
    if ((flags & LOST) !== 0 || n[N.deliveredAt]! >= 0 || n[N.cancelledAt]! >= 0) return;
    const ttl = n[N.ttl]!;
    const expiresAt = n[N.createdAt]! + ttl;
    const goneAt = n[N.goneAt]!;
    if (goneAt >= 0) {
      const expired = n[N.gone] === 2 || goneAt >= expiresAt;
      // A plain "not found" before the ttl: reported once the ttl has passed, at it.
      if (expired || this.now >= expiresAt) this.reportLost(record, TaskLostReason.GONE, expired ? goneAt : expiresAt);
      return;
    }
    if ((flags & OUTCOME) !== 0 && ttl >= 0 && this.now >= expiresAt)
      this.reportLost(record, TaskLostReason.TTL_PASSED, expiresAt);
  }

  private reportLost(record: TaskRecord, reason: TaskLostReason, at: number): void {
    const n = record.n;
    n[N.flags] = n[N.flags]! | LOST;
    n[N.lostAt] = at;
    record.lostReason = reason;
    const gone = reason === TaskLostReason.GONE;
    const ids = gone ? [record.createSpan, record.goneSpan] : [record.createSpan];
    this.emit(
      record,
      FindingKind.LOST_TASK_RESULT,
      gone ? record.goneTrace : record.createTrace,
      n[N.createdAt]!,
      at,
      ids,
      {
        reason,
      },
    );
  }

  /** task_poll_storm: taskPollStormThreshold early polls within the window, or taskPollsAfterGone polls after gone. Once per task. */
  private taskPollStorm(record: TaskRecord, span: SpanRecord, at: number): void {
    const n = record.n;
    if ((n[N.flags]! & STORM) !== 0) return;
    let reason: TaskStormReason;
    let from: number;
    let polls: number;
    if (n[N.pollsAfterGone]! >= this.options.taskPollsAfterGone && n[N.goneAt]! >= 0) {
      reason = TaskStormReason.AFTER_GONE;
      from = n[N.goneAt]!;
      polls = n[N.pollsAfterGone]!;
    } else if (n[N.earlyCount]! >= this.options.taskPollStormThreshold) {
      reason = TaskStormReason.FASTER_THAN_INTERVAL;
      from = n[N.earlyFrom]!;
      polls = n[N.earlyCount]!;
    } else {
      return;
    }
    n[N.flags] = n[N.flags]! | STORM;
    this.emit(
      record,
      FindingKind.TASK_POLL_STORM,
      span.traceId,
      Math.min(from, at),
      Math.max(from, at),
      [span.spanId],
      {
        reason,
        polls,
      },
    );
  }

  private emit(
    record: TaskRecord,
    kind: FindingKind,
    traceId: string,
    first: number,
    last: number,
    spanIds: string[],
    extra: Partial<Finding>,
  ): void {
    if (!this.onFinding) return;
    this.onFinding({
      kind,
      ...(extra.record ? { record: extra.record } : {}),
      service: this.services.keyOf(record.service)!,
      session_id: record.sessionId,
      request_id: record.requestId,
      trace_id: traceId,
      first_time_unix_ms: first,
      last_time_unix_ms: last,
      span_ids: spanIds.filter((id) => id.length > 0),
      task_id: record.taskId,
      ...extra,
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Time.
  // ---------------------------------------------------------------------------------------------

  /** When advance() has to look at the record again: its ttl verdict, or its release. */
  private dueAt(record: TaskRecord): number {
    const n = record.n;
    const flags = n[N.flags]!;
    const ttl = n[N.ttl]!;
    const settled = (flags & LOST) !== 0 || n[N.deliveredAt]! >= 0 || n[N.cancelledAt]! >= 0;
    const expiresAt = n[N.createdAt]! + ttl;
    if (!settled && ttl >= 0 && ((flags & OUTCOME) !== 0 || n[N.goneAt]! >= 0) && expiresAt > this.now)
      return expiresAt;
    return this.releaseAt(record);
  }

  /**
   * A record with a ttl leaves once the ttl and its last span are retentionMs behind (the server has
   * purged the task). One without ("unlimited") stays under the cap until its task is settled (outcome
   * delivered, cancelled, gone or reported lost), then leaves retentionMs after its last span.
   */
  private releaseAt(record: TaskRecord): number {
    const n = record.n;
    const ttl = n[N.ttl]!;
    const retention = this.options.retentionMs;
    if (ttl >= 0) return Math.max(n[N.createdAt]! + ttl, n[N.lastSeenAt]!) + retention;
    const settled = (n[N.flags]! & LOST) !== 0 || n[N.deliveredAt]! >= 0 || n[N.cancelledAt]! >= 0 || n[N.goneAt]! >= 0;
    return settled ? n[N.lastSeenAt]! + retention : Infinity;
  }

  private schedule(record: TaskRecord): void {
    const due = this.dueAt(record);
    if (!(due < record.due)) return;
    record.due = due;
    const heap = this.dueHeap;
    if (heap.size >= 2 * this.live + 64) {
      heap.clear();
      for (const map of this.byService.values())
        for (const live of map.values()) if (live.due < Infinity) heap.push(live.due, live);
    } else {
      heap.push(due, record);
    }
  }

  /**
   * The detector's time moved to `nowMs`: ttls that passed give their verdicts, settled records leave.
   * Costs one comparison until something is due; then the records due, earliest first.
   */
  advance(nowMs: number): void {
    if (nowMs > this.now) this.now = nowMs;
    if (nowMs > this.latest) this.latest = nowMs;
    const heap = this.dueHeap;
    while (heap.top <= this.now) {
      const at = heap.top;
      const record = heap.pop()!;
      // A stale entry: the record left, or is due at another time (it has an entry of its own for it).
      if (record.dropped || record.due !== at) continue;
      record.due = Infinity;
      this.lostTaskResult(record);
      if (this.releaseAt(record) <= this.now) {
        this.byService.get(record.service)!.delete(record.taskId);
        continue;
      }
      // Due later (after now): pushed again at that time.
      this.schedule(record);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Reading (the page) and state.
  // ---------------------------------------------------------------------------------------------

  /** A task's timeline as plain data (a copy), or undefined if the detector holds no record of it. */
  timeline(service: string, taskId: string): TaskTimeline | undefined {
    const record = this.byService.get(this.serviceIdOf(service))?.get(taskId);
    return record?.timeline(this.services.keyOf(record.service)!);
  }

  /** Live task records by service (read when needed, e.g. a scrape of resumewatch_live_tasks). */
  liveByService(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [service, map] of this.byService) if (map.size > 0) out.set(this.services.keyOf(service)!, map.size);
    return out;
  }

  /** The service's interned id, without interning it (a read changes nothing); -1 when unknown. */
  private serviceIdOf(service: string): number {
    return this.services.keys().indexOf(service);
  }

  /** The ids of the service's live tasks, least recently touched first. */
  taskIds(service: string): string[] {
    const map = this.byService.get(this.serviceIdOf(service));
    return map ? [...map.entries()].map(([taskId]) => taskId) : [];
  }

  /** Every record, each service's least recently touched first; and the pending re-issues, oldest first. */
  /** Whether a task known to this family was created by a span of `trace` (a re-issue's first attempt, say). */
  createdIn(trace: string): boolean {
    return this.byTrace.has(trace);
  }

  records(): TaskRecord[] {
    const out: TaskRecord[] = [];
    for (const map of this.byService.values()) for (const record of map.values()) out.push(record);
    return out;
  }

  pendingReissues(): [string, PendingReissue][] {
    return [...this.pending.entries()];
  }

  /** Loads records (each service's oldest first) into this empty family. */
  restore(records: TaskRecord[], pending: [string, PendingReissue][], evictions: number, unknownGone: number): void {
    for (const record of records) {
      let map = this.byService.get(record.service);
      if (map === undefined) {
        map = new BoundedMap<string, TaskRecord>(
          Math.max(1, this.options.maxTasksPerService),
          Infinity,
          () => 0,
          (_id, dropped) => this.dropped(dropped),
        );
        this.byService.set(record.service, map);
      }
      this.live++;
      map.set(record.taskId, record);
      if (record.createTrace.length > 0 && !this.byTrace.has(record.createTrace))
        this.byTrace.set(record.createTrace, record);
      this.schedule(record);
    }
    // The pending re-issues' clock starts at the latest time the state shows, so that none expires at once.
    for (const record of records) if (record.n[N.lastSeenAt]! > this.latest) this.latest = record.n[N.lastSeenAt]!;
    for (const [, reissue] of pending) if (reissue.end > this.latest) this.latest = reissue.end;
    for (const [trace, reissue] of pending) this.pending.set(trace, reissue);
    this.evictionsBase = evictions;
    this.unknownGone = unknownGone;
  }
}
