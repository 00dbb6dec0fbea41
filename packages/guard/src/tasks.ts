import { randomBytes } from 'node:crypto';
import { BoundedMap } from '@resumewatch/bounded';
import {
  FindingKind,
  TASK_ID_METHODS,
  TaskLostReason,
  TaskMethod,
  TaskShape,
  TaskStatus,
  TerminalOutcome,
} from '@resumewatch/semconv';
import {
  BrokenRequests,
  isInputRound,
  isRequest,
  keyedArgumentsDigest,
  requestArgumentsDigest,
  requestIdempotencyKey,
  requestTarget,
  TOOLS_CALL_METHOD,
} from '@resumewatch/wire';
import type {
  JsonRpcMessage,
  JsonRpcRequest,
  RequestRecord,
  StreamEnd,
  WireEvent,
  WireRequest,
} from '@resumewatch/wire';
import { requestTaskId, taskFactsOfAnswer, taskRequested, type TaskFacts } from '@resumewatch/wire';
import { isStatelessEra } from './reissues.js';
import type { DuplicateTask, LostTaskResult, RepeatedTaskHandle, TaskCallAttempt } from './reports.js';

/** Longest poll delay by default: a server announcing a longer interval gets polls this far apart at most. */
export const DEFAULT_MAX_POLL_DELAY_MS = 30_000;
/** Largest creation answer kept to repeat (its JSON text); a larger handle is not kept (nothing is answered locally). */
const MAX_HANDLE_CHARS = 64 * 1024;

export interface TaskOptions {
  /** Most tasks, kept handles and unanswered task calls held, each; the oldest is dropped beyond it. */
  maxTasks: number;
  /** Longest a poll is held back (the announced interval is honoured up to it). */
  maxPollDelayMs: number;
  /** Answer a re-issue of a live task's call with its handle. */
  repeatHandles: boolean;
  /** Keep handles and match re-issues (a client's own guard); false: only polls and lost results. */
  tracksCalls: boolean;
  reissueWindowMs: number | undefined;
  onLostTaskResult?(report: LostTaskResult): void;
  onDuplicateTask?(report: DuplicateTask): void;
  onTaskHandleRepeated?(report: RepeatedTaskHandle): void;
}

/**
 * What the guard keeps of one task, by (server, session, task id): about 300 bytes with its key and map entry, plus the
 * kept creation answer's text (at most MAX_HANDLE_CHARS) while the handle is live.
 */
interface TaskState {
  readonly taskId: string;
  shape: TaskShape;
  pollIntervalMs: number | undefined;
  /** When the last poll left (or is due to leave: a delayed poll holds its slot). */
  lastPollAt: number | undefined;
  /** When the last poll actually left (the spacing is checked against it just before a poll leaves). */
  lastLeftAt: number | undefined;
  ttlMs: number | null | undefined;
  /** When the guard received the handle; undefined when it never saw the task created. */
  createdAt: number | undefined;
  status: string | undefined;
  outcomeDelivered: boolean;
  cancelled: boolean;
  gone: boolean;
  lostReported: boolean;
  handle: KeptHandle | undefined;
}

/** The server's own creation answer, kept to answer a re-issue of its call. */
interface KeptHandle {
  readonly callKey: string;
  readonly idempotencyKey: string | undefined;
  /** The creation answer's `result`, as JSON text. */
  readonly resultText: string;
}

/** A task-capable call on its way: what its answer is filed under. */
interface PendingCall {
  readonly callKey: string;
  readonly scope: string;
  readonly attempt: TaskCallAttempt;
  /** The earlier attempt this call re-issues, which ended without an answer. */
  readonly reissues: UnansweredCall | undefined;
}

interface UnansweredCall extends TaskCallAttempt {
  readonly record: RequestRecord;
  readonly endedAt: number;
  readonly streamEnd: StreamEnd | undefined;
}

/** A request naming one task (`tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`). */
interface TaskRequest {
  readonly taskKey: string;
  readonly taskId: string;
  readonly method: string;
}

/** A poll's place in its task's spacing: when it may leave, and the slot it took. */
export interface PollSlot {
  readonly delayMs: number;
  /** Once the wait is over: how much longer this poll must wait (0 or less: it may leave). */
  remainingMs(): number;
  /** The poll leaves now: the next one is spaced from now (a timer that fired late moves the slot on). */
  leaving(): void;
  /** The poll was aborted while it waited: its slot is given back. */
  release(): void;
}

/** Whose tasks these are: the server (its URL) and, in the session era, the session. */
export function taskScope(url: string, sessionId: string | undefined): string {
  return `${url}\n${sessionId ?? ''}`;
}

function answerAt(event: WireEvent, index: number): JsonRpcMessage | undefined {
  const message = event.messages[index];
  return message !== undefined && !isRequest(message) ? message : undefined;
}

/**
 * The guard's half of MCP tasks (both shapes). Reads the answers to task-capable calls and to `tasks/*`
 * requests as the wire observer parses them; keeps, per task, the announced poll interval and when the
 * last poll left (the fetch side spaces polls with it), and the server's creation answer while the task is
 * live (the fetch side answers a re-issue with it); tells the application of a lost result and of a
 * possible duplicate task. Every map is bounded (`maxTasks`), and what it evicts is counted.
 */
export class TaskTracker {
  /** The digests never leave the guard: a key of its own. */
  private readonly digestKey = randomBytes(32);
  private readonly tasks: BoundedMap<string, TaskState>;
  /** (scope, call digest) → the task key of the live handle its call created. */
  private readonly handles: BoundedMap<string, string>;
  private readonly unanswered: BrokenRequests<UnansweredCall>;
  private readonly pending = new WeakMap<RequestRecord, PendingCall>();
  private readonly taskRequests = new WeakMap<RequestRecord, TaskRequest>();
  private readonly options: TaskOptions;
  private readonly now: () => number;

  constructor(options: TaskOptions, now: () => number) {
    this.options = options;
    this.now = now;
    if (!(options.maxPollDelayMs >= 0))
      throw new RangeError(`maxPollDelayMs must not be negative, got ${options.maxPollDelayMs}`);
    // Cap only: a task with an unlimited ttl stays until the cap pushes it out.
    this.tasks = new BoundedMap<string, TaskState>(options.maxTasks, Infinity, now);
    this.handles = new BoundedMap<string, string>(options.maxTasks, Infinity, now);
    this.unanswered = new BrokenRequests({ windowMs: options.reissueWindowMs, maxEntries: options.maxTasks, now });
  }

  /** Whether anything is kept: with nothing, the fetch side reads no body. */
  get active(): boolean {
    return this.tasks.size > 0 || this.handles.size > 0;
  }

  stats(): { tasks: number; taskHandles: number; evictions: number } {
    return {
      tasks: this.tasks.size,
      taskHandles: this.handles.size,
      evictions: this.tasks.evictions + this.handles.evictions + this.unanswered.evictions,
    };
  }

  private callKey(scope: string, message: JsonRpcRequest): string {
    return `${scope}\n${requestArgumentsDigest(message, this.digestKey)}`;
  }

  /** Whether a call can be answered with a task: 2025 asks for one (`params.task`); 2026, the server decides. */
  private taskCapable(message: JsonRpcRequest, stateless: boolean): boolean {
    return message.method === TOOLS_CALL_METHOD && !isInputRound(message) && (stateless || taskRequested(message));
  }

  /** The live handle a call repeats (same scope, method, name, arguments), or undefined. */
  private liveHandle(scope: string, message: JsonRpcRequest, stateless: boolean): TaskState | undefined {
    if (this.handles.size === 0 || !this.taskCapable(message, stateless)) return undefined;
    const callKey = this.callKey(scope, message);
    const taskKey = this.handles.get(callKey);
    const state = taskKey === undefined ? undefined : this.tasks.get(taskKey);
    const handle = state?.handle;
    if (state === undefined || handle === undefined || handle.callKey !== callKey) return undefined;
    // The shape the call would get: a 2025 handle never answers a 2026 call, nor the reverse.
    if ((state.shape === TaskShape.EXTENSION) !== stateless) return undefined;
    const expired = state.ttlMs != null && state.createdAt !== undefined && this.now() >= state.createdAt + state.ttlMs;
    if (expired || state.outcomeDelivered || state.cancelled || state.gone) {
      state.handle = undefined;
      this.handles.delete(callKey);
      return undefined;
    }
    return state;
  }

  /**
   * The idempotency key a task-capable call inherits: the key of the live handle's call it repeats, or of
   * the unanswered attempt it re-issues (so the server, or the gateway, can tie the attempts).
   */
  inheritedKey(scope: string, message: JsonRpcRequest, stateless: boolean): string | undefined {
    if (!this.taskCapable(message, stateless)) return undefined;
    const live = this.liveHandle(scope, message, stateless);
    if (live !== undefined) return live.handle!.idempotencyKey;
    return this.unanswered.peek(this.callKey(scope, message))?.idempotencyKey;
  }

  /**
   * The server's own creation answer for a re-issue of a live task's call, under the re-issue's id: a
   * JSON body, or undefined when the call goes to the server. A re-issue carrying an idempotency key other
   * than its first attempt's is another call (the application says so) and leaves.
   */
  localAnswer(scope: string, message: JsonRpcRequest, stateless: boolean): Response | undefined {
    if (!this.options.repeatHandles) return undefined;
    const state = this.liveHandle(scope, message, stateless);
    if (state === undefined) return undefined;
    const handle = state.handle!;
    const key = requestIdempotencyKey(message);
    if (key !== undefined && handle.idempotencyKey !== undefined && key !== handle.idempotencyKey) return undefined;
    this.options.onTaskHandleRepeated?.({
      taskId: state.taskId,
      shape: state.shape,
      requestId: message.id,
      method: message.method,
      name: requestTarget(message),
      idempotencyKey: key,
      createdAt: state.createdAt!,
    });
    // The JSON-RPC response's `result` member (TerminalOutcome.RESULT names it): the kept text as it is.
    const text = `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"${TerminalOutcome.RESULT}":${handle.resultText}}`;
    return new Response(text, { status: 200, headers: { 'content-type': 'application/json' } });
  }

  /**
   * A `tasks/get` about to leave: its slot in its task's spacing. It may leave once the announced poll
   * interval has passed since the previous poll of the task (at most `maxPollDelayMs` from now); the slot
   * is taken at once, so polls sent together leave one interval apart. `release()` gives the slot back
   * (the poll was aborted while it waited).
   */
  pollSlot(scope: string, taskId: string): PollSlot | undefined {
    const state = this.tasks.get(`${scope}\n${taskId}`);
    if (state === undefined) return undefined;
    const now = this.now();
    const deadline = now + this.options.maxPollDelayMs;
    const previous = state.lastPollAt;
    let leaveAt = now;
    if (previous !== undefined && state.pollIntervalMs !== undefined)
      leaveAt = Math.max(now, Math.min(previous + state.pollIntervalMs, deadline));
    state.lastPollAt = leaveAt;
    return {
      delayMs: leaveAt - now,
      remainingMs: () => {
        // A timer fires late on a loaded machine (or a millisecond early): the poll before this one may
        // have left later than its slot. Spaced from when it left, up to this poll's own deadline.
        const left = state.lastLeftAt;
        const interval = state.pollIntervalMs;
        if (left === undefined || interval === undefined) return 0;
        return Math.min(left + interval, deadline) - this.now();
      },
      leaving: () => {
        const at = this.now();
        state.lastLeftAt = at;
        if (state.lastPollAt === leaveAt) state.lastPollAt = Math.max(leaveAt, at);
      },
      release: () => {
        if (state.lastPollAt === leaveAt) state.lastPollAt = previous;
      },
    };
  }

  /** A request before it leaves: its task-capable calls and the tasks its `tasks/*` requests name. */
  onRequest(request: WireRequest): void {
    if (request.requests.length === 0) return;
    const stateless = isStatelessEra(request.protocolVersion);
    const scope = taskScope(request.url, request.sessionId);
    let index = 0;
    for (const message of request.messages) {
      if (!isRequest(message)) continue;
      const record = request.requests[index++];
      if (record === undefined) break;
      const taskId = requestTaskId(message);
      if (taskId !== undefined && TASK_ID_METHODS.includes(message.method)) {
        this.taskRequests.set(record, { taskKey: `${scope}\n${taskId}`, taskId, method: message.method });
        continue;
      }
      if (!this.options.tracksCalls || record.workDigest === undefined || !this.taskCapable(message, stateless))
        continue;
      const callKey = `${scope}\n${keyedArgumentsDigest(record.workDigest, this.digestKey)}`;
      const attempt: TaskCallAttempt = {
        requestId: record.id,
        method: record.method,
        name: record.target,
        idempotencyKey: record.idempotencyKey,
        startedAt: record.startedAt,
      };
      this.pending.set(record, { callKey, scope, attempt, reissues: this.unanswered.takeReissued(callKey) });
    }
  }

  /** An event carrying answers: the handles, the polls' answers, the outcomes and the gone tasks. */
  onTerminals(event: WireEvent): void {
    for (const terminal of event.terminals) {
      const record = terminal.request;
      const message = answerAt(event, terminal.messageIndex);
      if (message === undefined) continue;
      const call = this.pending.get(record);
      if (call !== undefined) {
        this.pending.delete(record);
        this.answered(call, record, message, event.request);
        continue;
      }
      const named = this.taskRequests.get(record);
      if (named !== undefined) this.taskAnswer(named, record, message, event.request);
    }
  }

  private answered(call: PendingCall, record: RequestRecord, message: JsonRpcMessage, request: WireRequest): void {
    // Answered after all (on a resumed stream): no longer an attempt without an answer.
    if (this.unanswered.peek(call.callKey)?.record === record) this.unanswered.takeReissued(call.callKey);
    // The wire's one reader of task facts (task-facts.ts): a handle names its task; any other answer does not.
    const facts = taskFactsOfAnswer(call.attempt.method, message);
    if (facts?.taskId === undefined || facts.outcomeDelivered || facts.gone !== undefined) return;
    const result = (message as { result?: unknown }).result;
    const taskKey = `${call.scope}\n${facts.taskId}`;
    const state = this.stateOf(taskKey, facts);
    state.createdAt = this.now();
    let resultText: string | undefined;
    try {
      resultText = JSON.stringify(result);
    } catch {
      resultText = undefined;
    }
    if (resultText !== undefined && resultText.length <= MAX_HANDLE_CHARS) {
      state.handle = { callKey: call.callKey, idempotencyKey: call.attempt.idempotencyKey, resultText };
      this.handles.set(call.callKey, taskKey);
    }
    const first = call.reissues;
    if (first === undefined) return;
    this.options.onDuplicateTask?.({
      kind: FindingKind.POSSIBLE_DUPLICATE_TASK,
      taskId: facts.taskId,
      shape: facts.shape ?? TaskShape.AUGMENTED,
      firstAttempt: {
        requestId: first.requestId,
        method: first.method,
        name: first.name,
        idempotencyKey: first.idempotencyKey,
        startedAt: first.startedAt,
        endedAt: first.endedAt,
        streamEnd: first.streamEnd,
      },
      reissue: call.attempt,
      request,
    });
  }

  /** The task's state, made or updated from what an answer said of it. */
  private stateOf(taskKey: string, facts: TaskFacts | undefined, taskId = facts?.taskId ?? ''): TaskState {
    let state = this.tasks.get(taskKey);
    if (state === undefined) {
      state = {
        taskId,
        shape: facts?.shape ?? TaskShape.AUGMENTED,
        pollIntervalMs: undefined,
        lastPollAt: undefined,
        lastLeftAt: undefined,
        ttlMs: undefined,
        createdAt: undefined,
        status: undefined,
        outcomeDelivered: false,
        cancelled: false,
        gone: false,
        lostReported: false,
        handle: undefined,
      };
      this.tasks.set(taskKey, state);
    }
    if (facts !== undefined) {
      if (facts.shape !== undefined) state.shape = facts.shape;
      if (facts.pollIntervalMs !== undefined) state.pollIntervalMs = facts.pollIntervalMs;
      if (facts.ttlMs !== undefined) state.ttlMs = facts.ttlMs;
      if (facts.status !== undefined) state.status = facts.status;
      if (facts.status === TaskStatus.CANCELLED) state.cancelled = true;
    }
    return state;
  }

  private taskAnswer(named: TaskRequest, record: RequestRecord, answer: JsonRpcMessage, request: WireRequest): void {
    // The wire's one reader (task-facts.ts) says gone only for a -32602 to TASK_GONE_METHODS (a -32602 to
    // tasks/cancel is a refusal: the task is already terminal) that names no task (a task's own -32602).
    const facts = taskFactsOfAnswer(named.method, answer);
    const gone = facts?.gone;
    if (gone !== undefined) {
      const state = this.stateOf(named.taskKey, undefined, named.taskId);
      state.gone = true;
      state.handle = undefined;
      if (state.outcomeDelivered || state.cancelled || state.lostReported) return;
      state.lostReported = true;
      this.options.onLostTaskResult?.({
        kind: FindingKind.LOST_TASK_RESULT,
        reason: TaskLostReason.GONE,
        gone,
        taskId: named.taskId,
        method: named.method,
        requestId: record.id,
        created: state.createdAt !== undefined,
        lastStatus: state.status,
        ttlMs: state.ttlMs,
        createdAt: state.createdAt,
        request,
      });
      return;
    }
    switch (named.method) {
      case TaskMethod.GET: {
        if (facts?.taskId === undefined) return;
        const state = this.stateOf(named.taskKey, facts);
        // The first poll this guard saw answered: the spacing starts from when it left.
        state.lastPollAt ??= record.startedAt;
        state.lastLeftAt ??= record.startedAt;
        if (facts.outcomeDelivered) state.outcomeDelivered = true;
        return;
      }
      case TaskMethod.RESULT:
        // The result, or the task's own error: the outcome reached the application.
        if (facts?.outcomeDelivered) this.stateOf(named.taskKey, undefined, named.taskId).outcomeDelivered = true;
        return;
      case TaskMethod.CANCEL:
        if ('result' in answer) this.stateOf(named.taskKey, undefined, named.taskId).cancelled = true;
        return;
      default:
        return;
    }
  }

  /** Task-capable calls whose exchange ended without their answer: a re-issue of one may create a second task. */
  ended(records: readonly RequestRecord[], streamEnd: StreamEnd | undefined): void {
    for (const record of records) {
      const call = this.pending.get(record);
      if (call === undefined) continue;
      // Kept pending: a resumed stream (2025) may still bring the answer, which takes it back.
      this.unanswered.noteBroken(call.callKey, { ...call.attempt, record, endedAt: this.now(), streamEnd });
    }
  }
}
