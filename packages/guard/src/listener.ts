import { BoundedMap } from '@resumewatch/bounded';
import {
  GuardAction,
  GuardProof,
  ResumeEvidence,
  ResumeOutcome,
  StreamKind,
  isFailedResumptionOutcome,
  resumeVerdict,
} from '@resumewatch/semconv';
import type { ResumeVerdict } from '@resumewatch/semconv';
import { requestIdempotencyKey, taskRequested, TOOLS_CALL_METHOD } from '@resumewatch/wire';
import type {
  FetchLike,
  RequestRecord,
  StreamEnd,
  StreamRecord,
  WireEvent,
  WireListener,
  WireRequest,
  WireResponse,
} from '@resumewatch/wire';
import { ResumeDecision, decideResume } from './decision.js';
import { InvalidResumptionError } from './errors.js';
import { withIdempotencyKeys } from './idempotency-keys.js';
import { ReissueTracker } from './reissues.js';
import type { IdempotencyKeyCall } from './reissues.js';
import type {
  BrokenAttempt,
  ConflictingTerminal,
  DroppedTerminal,
  DuplicateTask,
  FailedResumption,
  LostTaskResult,
  RefusedResume,
  ReissueReport,
  RepeatedRefusal,
  RepeatedTaskHandle,
  ResumeReport,
} from './reports.js';
import { DEFAULT_REFUSAL_RETENTION_MS, SessionRefusals } from './session-refusals.js';
import { withTaskGuard } from './task-fetch.js';
import { DEFAULT_MAX_POLL_DELAY_MS, TaskTracker } from './tasks.js';

export const DEFAULT_REQUEST_DEADLINE_MS = 300_000;

export interface GuardOptions {
  /**
   * Most resumed streams open and silent, and most requests held after a 400/409 or a poll, each;
   * the oldest is dropped beyond it (counted in `stats().evictions`). Default 10,000. Whether a request
   * is finished is the wire observer's to keep (its `maxRequests` and `requestRetentionMs`).
   */
  maxRequests?: number;
  now?: () => number;
  /**
   * A request's deadline, from when it was sent. A resumed stream of the request still silent then is
   * an empty replay (evidence `deadline`); a rejected cursor (400/409) not retried by then is a failed
   * resumption. Never a verdict before it: a quiet server is usually a working one. Default 5 min.
   */
  requestDeadlineMs?: number;
  /** A resume of a finished request was refused; the fetch rejects with `report.error`. */
  onResumeRefused?(report: RefusedResume): void;
  /** A duplicate terminal event (same content as the delivered one) was removed from a stream. */
  onDuplicateTerminalDropped?(report: DroppedTerminal): void;
  /**
   * A terminal event that differs from the one the application already received for the request was
   * removed from its stream: the server replayed another request's or another session's result, and
   * the delivered one may be the wrong one. Discard or re-verify it.
   */
  onConflictingTerminal?(report: ConflictingTerminal): void;
  /** Every verdict on a resume, when it is taken, one report per request the resumed stream carries. */
  onResumeDecision?(report: ResumeReport): void;
  /**
   * A resumption failed on evidence, for a request that has not finished (or a cursor this process
   * cannot place): an empty replay (body ended silent without polling announced, or the deadline
   * passed silent), a 404, a 400/409 confirmed by the next resume or the request's end, or a partial
   * replay (messages replayed, then the request's deadline passed, or the client aborted it, without its
   * result: outcome `partial_replay`). The request's outcome is unknown: retry it with idempotency
   * protection.
   */
  onFailedResumption?(report: FailedResumption): void;
  /**
   * 2026-07-28 era: give every `tools/call` an idempotency key in its `_meta`
   * (META_IDEMPOTENCY_KEY of @resumewatch/semconv), the same on each re-issue of a broken call, so a
   * server that checks it can refuse to run the side effect twice. `true`: a random UUID per call; a
   * function: the application's own key for a call that re-issues nothing. guardedFetch and
   * instrumentFetch add the keys; on an observer of your own, wrap its fetch with the listener's
   * `withIdempotencyKeys`. Default off.
   */
  idempotencyKey?: boolean | ((call: IdempotencyKeyCall) => string);
  /**
   * 2026-07-28 era: track broken streams and re-issues. Default true. A proxy serving many clients (a
   * gateway) sets it false: a 2026-07-28 request names no session, so its guard cannot tell whose
   * request a re-issue repeats, and would report one client's call as another's re-issue.
   */
  reissues?: boolean;
  /**
   * 2026-07-28 era: how long a request whose stream broke waits for its re-issue (same method, name
   * and arguments). Default 10 min (DEFAULT_REISSUE_WINDOW_MS of @resumewatch/wire).
   */
  reissueWindowMs?: number;
  /**
   * 2026-07-28 era: a request's response stream ended before its result, and the client did not close
   * it (the v2 SDK fails the call only at its timeout). The first attempt may have run, or may still run.
   */
  onStreamBroken?(attempt: BrokenAttempt): void;
  /**
   * 2026-07-28 era: the application is re-issuing a call whose earlier attempt's stream broke before
   * its result (the request is about to leave, and does: the guard never holds it back). The earlier
   * attempt may have run its side effect. `guardAction` on the request: `reissue_reported`.
   */
  onReissue?(report: ReissueReport): void;
  /**
   * MCP tasks: the longest a `tasks/get` is held back to its task's announced poll interval (2025
   * `pollInterval`, 2026 `pollIntervalMs`, from the creation answer or the last `tasks/get` answer).
   * Default 30 s. The spacing and the local answers are the fetch side's: guardedFetch and instrumentFetch
   * apply them; on an observer of your own, wrap its fetch with the listener's `withTaskGuard`.
   */
  maxPollDelayMs?: number;
  /**
   * MCP tasks: answer a re-issue of a live task's call (same method, name and arguments, same server and
   * session) with the server's own creation answer, so that no second task is created. Default true;
   * false lets every call through (an application that means to run the same call twice at once).
   */
  taskHandles?: boolean;
  /** MCP tasks: a task's outcome was never delivered, and the server said the task is gone (-32602). */
  onLostTaskResult?(report: LostTaskResult): void;
  /**
   * MCP tasks: a re-issued task-capable call, whose earlier attempt ended without an answer, created a task;
   * the earlier attempt may have created one too (`possible_duplicate_task`).
   */
  onDuplicateTask?(report: DuplicateTask): void;
  /** MCP tasks: a re-issue of a live task's call was answered locally with that task's handle. */
  onTaskHandleRepeated?(report: RepeatedTaskHandle): void;
  /**
   * Repeat the server's own refusals in process (see `withSessionRefusals`): a refused session's status,
   * headers and body to its further requests until the application initializes anew, and a 405 to a GET
   * to further GETs of that session. Default true.
   */
  sessionRefusals?: boolean;
  /** How long each refusal is repeated at most. Default 10 min; at most `maxRequests` of each kind. */
  refusalRetentionMs?: number;
  /** A request on a session the server refused (404, or a 400 saying so) was answered with that refusal. */
  onDeadSession?(report: RepeatedRefusal): void;
  /** A GET listening stream was answered with the server's earlier 405 to a GET of the same session. */
  onListeningRefused?(report: RepeatedRefusal): void;
}

/** What the guard holds now (see `GuardListener.stats`). */
export interface GuardStats {
  silentResumes: number;
  unsettledRequests: number;
  brokenRequests: number;
  /** MCP tasks kept (poll spacing, outcome delivered or not), and the live handles among them. */
  tasks: number;
  taskHandles: number;
  /** Sessions and listening streams whose refusal is repeated now, and the requests answered with one so far. */
  refusedSessions: number;
  refusedListeningStreams: number;
  deadSessionAnswers: number;
  listeningRefusalAnswers: number;
  evictions: number;
}

export interface GuardListener extends WireListener {
  /**
   * Resumed streams open and silent (no verdict yet); rejected or polled requests awaiting what settles
   * them; broken requests awaiting their re-issue; tasks and live task handles kept; what the caps evicted.
   */
  stats(): GuardStats;
  /**
   * The fetch with an idempotency key added to every 2026-07-28 `tools/call` and every session-era
   * `tools/call` that asks for a task (see `idempotencyKey`): wrap the fetch the observer wrapped (the
   * keys must be in the body before the observer reads it), outside `withTaskGuard`.
   */
  withIdempotencyKeys(fetch: FetchLike): FetchLike;
  /**
   * The fetch with the task guard's spacing of polls and its local answers to re-issues of a live task's
   * call: wrap the fetch the observer wrapped (a delayed poll is then seen when it leaves; a local answer
   * is never seen as a request).
   */
  withTaskGuard(fetch: FetchLike): FetchLike;
  /**
   * The fetch with the server's own refusals repeated in process (a dead session's 404 or 400, a GET's
   * 405): wrap outermost, so a request answered locally is seen by nothing else. Unchanged when
   * `sessionRefusals` is false.
   */
  withSessionRefusals(fetch: FetchLike): FetchLike;
  /** Stops pending deadline timers. */
  dispose(): void;
}

/** A 2xx resume whose stream is open and has carried no message yet: no verdict. */
interface SilentResume {
  readonly request: WireRequest;
  readonly stream: StreamRecord;
  readonly status: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * An unfinished request whose last resume left it undecided: a 400/409 (maybe transient: a server
 * still holding the dropped connection), a poll (the client is expected back), or a continuation (its
 * result is expected on the resumed stream: a server that replays the missed progress and routes nothing
 * live to the resumed stream never sends it). Settled by a later verdict or terminal, by the request's
 * end, or at its deadline.
 */
interface Unsettled {
  readonly kind: 'rejected' | 'polled' | 'continued';
  readonly report: ResumeReport;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * The guard as a wire listener: add it to a WireObserver with `{ filters: true }`. It refuses a
 * `Last-Event-ID` request whose cursor's stream carried only finished requests, removes terminal
 * events for a (session, request) that already had one (reporting a conflicting one), and takes a
 * verdict on every resume with `resumeVerdict` of @resumewatch/semconv, on evidence only. Whether a
 * request is finished is the observer's answer (`RequestRecord.finished`); what the guard did travels
 * on the request or event it decided (`guardAction`), before any other listener sees it.
 */
export function createGuardListener(options: GuardOptions = {}): GuardListener {
  return new GuardWireListener(options);
}

/** A held or silent entry leaving its map, evicted or not, takes its timer along. */
function clearEntryTimer(_key: unknown, entry: { timer: ReturnType<typeof setTimeout> | undefined }): void {
  clearTimeout(entry.timer);
}

/**
 * A class, not an object of closures: the observer's optimised code calls `onEvent` through this
 * class's one method; a closure made per listener would be a new function for each guarded fetch,
 * and optimised code that inlined a dead one is thrown away at the next GC.
 */
class GuardWireListener implements GuardListener {
  /** Only the events that can decide something: terminals, and the events of resumed streams. */
  readonly eventsWanted = 'deciding' as const;
  private readonly options: GuardOptions;
  private readonly now: () => number;
  private readonly deadlineMs: number;
  private readonly silent: BoundedMap<StreamRecord, SilentResume>;
  private readonly unsettled: BoundedMap<string, Unsettled>;
  private readonly reissues: ReissueTracker;
  private readonly tracksReissues: boolean;
  private readonly tasks: TaskTracker;
  private readonly refusals: SessionRefusals;

  constructor(options: GuardOptions) {
    this.options = options;
    // Read at each call, not taken once: a clock swapped after the guard is made (a test's fake Date) is the
    // one its waits and its spacing both use, so a loaded machine's real time cannot leak into either.
    this.now = options.now ?? (() => Date.now());
    this.deadlineMs = options.requestDeadlineMs ?? DEFAULT_REQUEST_DEADLINE_MS;
    if (!(this.deadlineMs > 0)) throw new RangeError(`requestDeadlineMs must be positive, got ${this.deadlineMs}`);
    const cap = options.maxRequests ?? 10_000;
    if (!(cap > 0)) throw new RangeError(`maxRequests must be positive, got ${cap}`);
    // Cap only: each entry's timer ends it.
    this.silent = new BoundedMap<StreamRecord, SilentResume>(cap, Infinity, this.now, clearEntryTimer);
    this.unsettled = new BoundedMap<string, Unsettled>(cap, Infinity, this.now, clearEntryTimer);
    this.tracksReissues = options.reissues ?? true;
    const makeKey = options.idempotencyKey;
    this.reissues = new ReissueTracker(
      {
        reissueWindowMs: options.reissueWindowMs,
        makeIdempotencyKey: typeof makeKey === 'function' ? makeKey : undefined,
        onStreamBroken: options.onStreamBroken?.bind(options),
        onReissue: options.onReissue?.bind(options),
      },
      cap,
      this.now,
    );
    this.tasks = new TaskTracker(
      {
        maxTasks: cap,
        maxPollDelayMs: options.maxPollDelayMs ?? DEFAULT_MAX_POLL_DELAY_MS,
        repeatHandles: options.taskHandles ?? true,
        // A proxy serving many clients (reissues false) keeps no handle and matches no re-issue: whose call is it?
        tracksCalls: this.tracksReissues,
        reissueWindowMs: options.reissueWindowMs,
        onLostTaskResult: options.onLostTaskResult?.bind(options),
        onDuplicateTask: options.onDuplicateTask?.bind(options),
        onTaskHandleRepeated: options.onTaskHandleRepeated?.bind(options),
      },
      this.now,
    );
    const retentionMs = options.refusalRetentionMs ?? DEFAULT_REFUSAL_RETENTION_MS;
    if (!(retentionMs > 0)) throw new RangeError(`refusalRetentionMs must be positive, got ${retentionMs}`);
    this.refusals = new SessionRefusals({
      maxEntries: cap,
      retentionMs,
      now: this.now,
      onDeadSession: options.onDeadSession?.bind(options),
      onListeningRefused: options.onListeningRefused?.bind(options),
    });
  }

  withSessionRefusals(fetch: FetchLike): FetchLike {
    return this.options.sessionRefusals === false ? fetch : this.refusals.wrap(fetch);
  }

  withIdempotencyKeys(fetch: FetchLike): FetchLike {
    return withIdempotencyKeys(fetch, (message, scope, stateless) => {
      // The session era keys only calls that ask for a task (its other calls have resumption instead).
      if (message.method !== TOOLS_CALL_METHOD || (!stateless && !taskRequested(message))) return undefined;
      // A call that repeats a live task's call, or re-issues a task call left without an answer, takes its key.
      const carried = requestIdempotencyKey(message);
      if (carried !== undefined) return carried;
      return this.tasks.inheritedKey(scope, message, stateless) ?? this.reissues.idempotencyKeyFor(message);
    });
  }

  withTaskGuard(fetch: FetchLike): FetchLike {
    return withTaskGuard(fetch, this.tasks);
  }

  /** Whom a resume's verdict concerns: none for the listening stream, else the requests its stream carries. */
  private subjects(request: WireRequest, stream: StreamRecord | undefined): readonly RequestRecord[] {
    const resume = request.resume!;
    if ((stream?.kind ?? resume.from?.kind) === StreamKind.LISTENING) return [];
    return stream ? stream.requests : resume.requests;
  }

  /** A cursor this process cannot place may belong to a request still waiting for its outcome. */
  private unplaced(request: WireRequest, stream: StreamRecord | undefined): boolean {
    return request.resume!.from === undefined && (stream === undefined || stream.kind === undefined);
  }

  private unsettledKey(request: WireRequest, record: RequestRecord | undefined): string {
    return record ? record.key : `${request.sessionId ?? ''}\n#${request.resume!.lastEventId}`;
  }

  private timer(at: number, run: () => void): ReturnType<typeof setTimeout> {
    const handle = setTimeout(run, Math.max(0, at - this.now()));
    handle.unref?.();
    return handle;
  }

  private fail(report: ResumeReport, evidence = report.evidence): void {
    report.request.guardAction = GuardAction.RESUMPTION_FAILED_REPORTED;
    this.options.onFailedResumption?.({ ...report, evidence, action: GuardAction.RESUMPTION_FAILED_REPORTED });
  }

  private retract(key: string): void {
    const entry = this.unsettled.get(key);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    this.unsettled.delete(key);
  }

  private watch(kind: Unsettled['kind'], report: ResumeReport, key: string, deadline: number): void {
    this.retract(key);
    const entry: Unsettled = { kind, report, timer: undefined };
    entry.timer = this.timer(deadline, () => this.confirm(key, ResumeEvidence.DEADLINE));
    this.unsettled.set(key, entry);
  }

  /**
   * The request's deadline passed, or the client gave it up (`cancelled`: it sent notifications/cancelled;
   * else it deleted the session or closed the resumed stream), without its terminal.
   */
  private confirm(
    key: string,
    evidence: typeof ResumeEvidence.DEADLINE | typeof ResumeEvidence.REQUEST_END,
    cancelled = false,
  ): void {
    const entry = this.unsettled.get(key);
    if (entry === undefined) return;
    this.retract(key);
    const record = entry.report.record;
    if (record?.finished) return;
    if (entry.kind === 'rejected') {
      this.fail(entry.report, evidence);
    } else if (entry.kind === 'continued') {
      // The replay carried messages, not the result, and the request ended without it. A request the
      // client cancelled was given up on purpose: nothing to retry.
      if (cancelled) return;
      this.fail(
        {
          ...entry.report,
          outcome: ResumeOutcome.PARTIAL_REPLAY,
          decision: ResumeDecision.PARTIAL_REPLAY_RETRY_WITH_IDEMPOTENCY,
        },
        evidence,
      );
    } else if (evidence === ResumeEvidence.DEADLINE) {
      // Polled, and never back with the result: a server that lost its buffer looks like a quiet poll
      // until the deadline says otherwise. A request the client gave up after a poll lost nothing known.
      this.fail(
        {
          ...entry.report,
          outcome: ResumeOutcome.EMPTY_REPLAY,
          decision: ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY,
        },
        evidence,
      );
    }
  }

  /** Reports one verdict and applies the failed-resumption rule to it. */
  private decide(report: ResumeReport, key: string, terminal: boolean, deadline: number): void {
    this.options.onResumeDecision?.(report);
    const outcome = report.outcome;
    if (terminal) {
      // The request has its result: an earlier rejection was transient.
      this.retract(key);
    } else if (outcome === ResumeOutcome.CONTINUATION) {
      // The server still holds the cursor (an earlier rejection was transient); the result is expected
      // on this stream. Its request's deadline or end without it settles the continuation as partial.
      if (report.record === undefined) this.retract(key);
      else this.watch('continued', report, key, deadline);
    } else if (outcome === ResumeOutcome.POLL) {
      this.watch('polled', report, key, deadline);
    } else if (outcome === ResumeOutcome.CURSOR_REJECTED) {
      if (this.unsettled.get(key)?.kind === 'rejected') {
        // The client's own next resume of the request was rejected too.
        this.retract(key);
        this.fail(report);
      } else {
        this.watch('rejected', report, key, deadline);
      }
    } else if (isFailedResumptionOutcome(outcome)) {
      this.retract(key);
      this.fail(report);
    }
  }

  private settle(request: WireRequest, status: number, stream: StreamRecord | undefined, verdict: ResumeVerdict): void {
    const resume = request.resume!;
    const base = {
      sessionId: request.sessionId,
      lastEventId: resume.lastEventId,
      status,
      outcome: verdict.outcome,
      evidence: verdict.evidence,
      replayedMessages: stream?.messageEvents ?? 0,
      request,
      stream,
    };
    const records = this.subjects(request, stream);
    if (records.length === 0) {
      const report: ResumeReport = {
        ...base,
        requestId: undefined,
        record: undefined,
        decision: decideResume(verdict, false),
      };
      if (this.unplaced(request, stream))
        this.decide(report, this.unsettledKey(request, undefined), false, request.startedAt + this.deadlineMs);
      else this.options.onResumeDecision?.(report);
      return;
    }
    for (const record of records) {
      // As before the event that settles this verdict (the observer marks its terminal after every
      // listener saw it): a terminal it carries is part of the continuation, not something seen before it.
      const terminal = record.finished;
      const report: ResumeReport = { ...base, requestId: record.id, record, decision: decideResume(verdict, terminal) };
      this.decide(report, record.key, terminal, record.startedAt + this.deadlineMs);
    }
  }

  private settleSilent(
    entry: SilentResume,
    seen: { ended?: StreamEnd; deadlinePassed?: boolean; requestEnded?: boolean },
  ): void {
    this.silent.delete(entry.stream);
    clearTimeout(entry.timer);
    const stream = entry.stream;
    const verdict = resumeVerdict({
      status: entry.status,
      messages: stream.messageEvents,
      ended: seen.ended,
      pollingAnnounced: stream.pollingAnnounced,
      deadlinePassed: seen.deadlinePassed ?? false,
      requestEnded: seen.requestEnded ?? false,
    });
    if (verdict) this.settle(entry.request, entry.status, stream, verdict);
  }

  /** The client gave these requests up (cancelled them, or deleted their session: `records` undefined). */
  private requestsEnded(sessionId: string | undefined, records: readonly RequestRecord[] | undefined): void {
    for (const entry of [...this.silent.values()]) {
      if (entry.request.sessionId !== sessionId) continue;
      const concerned = this.subjects(entry.request, entry.stream);
      if (records === undefined || concerned.some((r) => records.includes(r)))
        this.settleSilent(entry, { requestEnded: true });
    }
    if (records !== undefined) {
      for (const record of records) this.confirm(record.key, ResumeEvidence.REQUEST_END, true);
      return;
    }
    for (const [key, entry] of [...this.unsettled.entries()]) {
      if (entry.report.sessionId === sessionId) this.confirm(key, ResumeEvidence.REQUEST_END);
    }
  }

  /**
   * Terminals of a request the reader provably holds (`finished`, with its proof) are removed from an
   * SSE event, message by message: the rest of a batch goes on. A terminal that differs from the first
   * is reported, and removed only when the reader provably holds the first; without proof it goes on
   * (maybe the reader's only copy). A JSON body is passed whole.
   */
  private onTerminals(event: WireEvent): boolean {
    const options = this.options;
    let keep = true;
    const sse = event.sse !== undefined;
    const batch = event.messages.length > 1;
    for (const terminal of event.terminals) {
      const record = terminal.request;
      this.retract(record.key);
      // The observer's answer, not the wire's `duplicate`: with confirmDelivery a terminal the client
      // never proved it read does not finish its request.
      const remove = sse && record.finished;
      if (remove) {
        if (batch) event.removeMessage(terminal.messageIndex);
        else keep = false;
      }
      if (terminal.conflict) {
        event.guardAction = GuardAction.CONFLICTING_TERMINAL_REPORTED;
        event.guardProof = remove ? record.proof : GuardProof.NONE;
        const first = terminal.firstStream;
        options.onConflictingTerminal?.({
          action: GuardAction.CONFLICTING_TERMINAL_REPORTED,
          sessionId: record.sessionId,
          requestId: record.id,
          delivered: { streamId: first?.id, eventId: terminal.firstEventId },
          conflicting: { streamId: event.stream.id, eventId: event.eventId },
          outcome: terminal.outcome,
          removed: remove,
          proof: event.guardProof ?? GuardProof.NONE,
          foreign: terminal.foreign,
          event,
        });
      } else if (remove) {
        event.guardAction = GuardAction.DUPLICATE_TERMINAL_DROPPED;
        event.guardProof = record.proof;
        options.onDuplicateTerminalDropped?.({
          action: GuardAction.DUPLICATE_TERMINAL_DROPPED,
          sessionId: record.sessionId,
          requestId: record.id,
          outcome: terminal.outcome,
          eventId: event.eventId,
          streamId: event.stream.id,
          foreign: terminal.foreign,
          proof: record.proof ?? GuardProof.NONE,
          event,
        });
      }
    }
    return keep;
  }

  onRequest(request: WireRequest): void {
    // A new request with the id of an earlier one: what was held for that one no longer applies.
    for (const record of request.requests) this.retract(record.key);
    if (this.tracksReissues) this.reissues.onRequest(request);
    this.tasks.onRequest(request);
    if (request.cancels.length > 0) this.requestsEnded(request.sessionId, request.cancels);
    if (request.httpMethod === 'DELETE' && request.sessionId !== undefined)
      this.requestsEnded(request.sessionId, undefined);
    const resume = request.resume;
    if (resume === undefined || resume.requests.length === 0) return;
    for (const record of resume.requests) if (!record.finished) return;
    const first = resume.requests[0]!;
    const error = InvalidResumptionError.terminal(first.id, request.sessionId);
    // Every request the cursor's stream carried is proven received; the first one's proof names the refusal.
    const proof = first.proof ?? GuardProof.NONE;
    request.guardAction = GuardAction.RESUME_REFUSED;
    request.guardProof = proof;
    this.options.onResumeRefused?.({
      action: GuardAction.RESUME_REFUSED,
      sessionId: request.sessionId,
      requestIds: resume.requests.map((r) => r.id),
      lastEventId: resume.lastEventId,
      proof,
      error,
      request,
    });
    throw error;
  }

  onResponse(request: WireRequest, response: WireResponse): void {
    if (request.resume === undefined) return;
    const { status, stream } = response;
    if (status >= 200 && status < 300 && stream !== undefined) {
      const entry: SilentResume = { request, status, stream, timer: undefined };
      const records = this.subjects(request, stream);
      // A later resume the server accepted supersedes a held rejection or a poll: its own verdict (or
      // the deadline) settles the request now, so the request is never reported twice.
      for (const record of records) this.retract(record.key);
      const listening = records.length === 0 && !this.unplaced(request, stream);
      if (!listening) {
        let started = request.startedAt;
        for (const record of records) started = Math.min(started, record.startedAt);
        entry.timer = this.timer(started + this.deadlineMs, () => {
          if (this.silent.get(stream) === entry) this.settleSilent(entry, { deadlinePassed: true });
        });
      }
      this.silent.set(stream, entry);
      return;
    }
    const verdict = resumeVerdict({
      status,
      messages: 0,
      // A 2xx without a body ended at once.
      ended: 'clean',
      pollingAnnounced: request.resume.from?.pollingAnnounced ?? false,
      deadlinePassed: false,
      requestEnded: false,
    });
    if (verdict) this.settle(request, status, stream, verdict);
  }

  onFetchError(request: WireRequest, error: unknown): void {
    this.reissues.fetchFailed(request, error);
    this.tasks.ended(request.requests, undefined);
    if (request.resume === undefined) return;
    this.settle(request, 0, undefined, { outcome: ResumeOutcome.ERROR, evidence: ResumeEvidence.STATUS });
  }

  onEvent(event: WireEvent): boolean {
    const stream = event.stream;
    if (this.silent.size > 0 && stream.messageEvents > 0 && stream.isResume) {
      const entry = this.silent.get(stream);
      if (entry !== undefined) this.settleSilent(entry, {});
    }
    // Cursors are the wire's (the stream's delivered ids); the guard's own state is fed at the
    // terminal event, so an event that is not one costs nothing here.
    if (event.terminals.length === 0) return true;
    this.tasks.onTerminals(event);
    return this.onTerminals(event);
  }

  onStreamEnd(_request: WireRequest, stream: StreamRecord, end: StreamEnd): void {
    // A 2026-07-28 request's stream has no session; closed by the client, its request was given up.
    if (stream.sessionId === '') this.reissues.ended(stream.requests, end, end === 'abort');
    // Task calls of either era: one that ended without its answer may have created a task all the same.
    this.tasks.ended(stream.requests, end);
    // The client closed a resumed stream that was a continuation: it gave its requests up without their result.
    if (end === 'abort' && stream.isResume && this.unsettled.size > 0)
      for (const record of stream.requests)
        if (this.unsettled.get(record.key)?.kind === 'continued') this.confirm(record.key, ResumeEvidence.REQUEST_END);
    if (this.silent.size === 0) return;
    const entry = this.silent.get(stream);
    if (entry !== undefined) this.settleSilent(entry, { ended: end });
  }

  onSessionReleased(sessionId: string): void {
    // Silent resumes of the session ended with their streams (abort) or with the DELETE (request
    // end); what remains of them, and held rejections or polls, no longer concern a live session.
    for (const [stream, entry] of [...this.silent.entries()]) {
      if (entry.request.sessionId !== sessionId) continue;
      clearTimeout(entry.timer);
      this.silent.delete(stream);
    }
  }

  stats(): GuardStats {
    const reissues = this.reissues.stats();
    const tasks = this.tasks.stats();
    const refusals = this.refusals.stats();
    return {
      silentResumes: this.silent.size,
      unsettledRequests: this.unsettled.size,
      brokenRequests: reissues.brokenRequests,
      tasks: tasks.tasks,
      taskHandles: tasks.taskHandles,
      refusedSessions: refusals.refusedSessions,
      refusedListeningStreams: refusals.refusedListeningStreams,
      deadSessionAnswers: refusals.deadSessionAnswers,
      listeningRefusalAnswers: refusals.listeningRefusalAnswers,
      evictions:
        this.silent.evictions + this.unsettled.evictions + reissues.evictions + tasks.evictions + refusals.evictions,
    };
  }

  dispose(): void {
    for (const entry of this.silent.values()) clearTimeout(entry.timer);
    for (const entry of this.unsettled.values()) clearTimeout(entry.timer);
    this.silent.clear();
    this.unsettled.clear();
  }
}

/**
 * One listener held for the life of the process: its class's hidden class then
 * outlives every guarded fetch, so the observer's optimised code that checks it is not thrown away
 * at a GC that finds no listener alive (see shapes.ts of @resumewatch/wire).
 */
const HELD_SHAPE = new GuardWireListener({});
void HELD_SHAPE;
