import { BoundedMap } from '@resumewatch/bounded';
import { GuardAction, ResumeEvidence, ResumeOutcome, StreamKind, isFailedResumptionOutcome, resumeVerdict } from '@resumewatch/semconv';
import type { ResumeVerdict } from '@resumewatch/semconv';
import type { RequestRecord, StreamEnd, StreamRecord, WireEvent, WireListener, WireRequest, WireResponse } from '@resumewatch/wire';
import { ResumeDecision, decideResume } from './decision.js';
import { InvalidResumptionError } from './errors.js';
import type { ConflictingTerminal, DroppedTerminal, FailedResumption, RefusedResume, ResumeReport } from './reports.js';
import { StreamResumptionGuard } from './resumption-guard.js';
import type { StreamResumptionGuardOptions } from './resumption-guard.js';

export const DEFAULT_REQUEST_DEADLINE_MS = 300_000;

export interface GuardOptions extends StreamResumptionGuardOptions {
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
   * passed silent), a 404, or a 400/409 confirmed by the next resume or the request's end. The
   * request's outcome is unknown: retry it with idempotency protection.
   */
  onFailedResumption?(report: FailedResumption): void;
}

export interface GuardListener extends WireListener {
  readonly guard: StreamResumptionGuard;
  /** Resumed streams open and silent (no verdict yet); rejected or polled requests awaiting what settles them. */
  stats(): { silentResumes: number; unsettledRequests: number; evictions: number };
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
 * still holding the dropped connection), or a poll (the client is expected back). Settled by a later
 * verdict or terminal, by the request's end, or at its deadline.
 */
interface Unsettled {
  readonly kind: 'rejected' | 'polled';
  readonly report: ResumeReport;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * The guard as a wire listener: add it to a WireObserver with `{ filters: true }`. It refuses a
 * `Last-Event-ID` request whose cursor's stream carried only finished requests, removes terminal
 * events for a (session, request) that already had one (reporting a conflicting one), and takes a
 * verdict on every resume with `resumeVerdict` of @resumewatch/semconv, on evidence only.
 */
export function createGuardListener(options: GuardOptions = {}): GuardListener {
  const guard = new StreamResumptionGuard(options);
  const now = options.now ?? Date.now;
  const deadlineMs = options.requestDeadlineMs ?? DEFAULT_REQUEST_DEADLINE_MS;
  if (!(deadlineMs > 0)) throw new RangeError(`requestDeadlineMs must be positive, got ${deadlineMs}`);
  const cap = options.maxRequests ?? 10_000;
  // Cap only (each entry's timer ends it); an entry that leaves, evicted or not, takes its timer along.
  const clearTimer = (_key: unknown, entry: { timer: ReturnType<typeof setTimeout> | undefined }): void => clearTimeout(entry.timer);
  const silent = new BoundedMap<StreamRecord, SilentResume>(cap, Infinity, now, clearTimer);
  const unsettled = new BoundedMap<string, Unsettled>(cap, Infinity, now, clearTimer);

  const isTerminal = (record: RequestRecord): boolean => record.terminalCount > 0 || guard.isTerminal(record.key);

  /** Whom a resume's verdict concerns: none for the listening stream, else the requests its stream carries. */
  const subjects = (request: WireRequest, stream: StreamRecord | undefined): readonly RequestRecord[] => {
    const resume = request.resume!;
    if ((stream?.kind ?? resume.from?.kind) === StreamKind.LISTENING) return [];
    return stream ? stream.requests : resume.requests;
  };
  /** A cursor this process cannot place may belong to a request still waiting for its outcome. */
  const unplaced = (request: WireRequest, stream: StreamRecord | undefined): boolean =>
    request.resume!.from === undefined && (stream === undefined || stream.kind === undefined);
  const unsettledKey = (request: WireRequest, record: RequestRecord | undefined): string =>
    record ? record.key : `${request.sessionId ?? ''}\n#${request.resume!.lastEventId}`;

  const timer = (at: number, run: () => void): ReturnType<typeof setTimeout> => {
    const handle = setTimeout(run, Math.max(0, at - now()));
    handle.unref?.();
    return handle;
  };

  const fail = (report: ResumeReport, evidence = report.evidence): void => {
    options.onFailedResumption?.({ ...report, evidence, action: GuardAction.RESUMPTION_FAILED_REPORTED });
  };
  const retract = (key: string): void => {
    const entry = unsettled.get(key);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    unsettled.delete(key);
  };
  const watch = (kind: Unsettled['kind'], report: ResumeReport, key: string, deadline: number): void => {
    retract(key);
    const entry: Unsettled = { kind, report, timer: undefined };
    entry.timer = timer(deadline, () => confirm(key, ResumeEvidence.DEADLINE));
    unsettled.set(key, entry);
  };
  /** The request's deadline passed, or the client gave it up, without its terminal. */
  const confirm = (key: string, evidence: typeof ResumeEvidence.DEADLINE | typeof ResumeEvidence.REQUEST_END): void => {
    const entry = unsettled.get(key);
    if (entry === undefined) return;
    retract(key);
    const record = entry.report.record;
    if (record !== undefined && isTerminal(record)) return;
    if (entry.kind === 'rejected') {
      fail(entry.report, evidence);
    } else if (evidence === ResumeEvidence.DEADLINE) {
      // Polled, and never back with the result: a server that lost its buffer looks like a quiet poll
      // until the deadline says otherwise. A request the client gave up after a poll lost nothing known.
      fail({
        ...entry.report,
        outcome: ResumeOutcome.EMPTY_REPLAY,
        decision: ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY,
      }, evidence);
    }
  };

  /** Reports one verdict and applies the failed-resumption rule to it. */
  const decide = (report: ResumeReport, key: string, terminal: boolean, deadline: number): void => {
    options.onResumeDecision?.(report);
    const outcome = report.outcome;
    if (terminal || outcome === ResumeOutcome.CONTINUATION) {
      // The server still holds the cursor, or the request has its result: an earlier rejection was transient.
      retract(key);
    } else if (outcome === ResumeOutcome.POLL) {
      watch('polled', report, key, deadline);
    } else if (outcome === ResumeOutcome.CURSOR_REJECTED) {
      if (unsettled.get(key)?.kind === 'rejected') {
        // The client's own next resume of the request was rejected too.
        retract(key);
        fail(report);
      } else {
        watch('rejected', report, key, deadline);
      }
    } else if (isFailedResumptionOutcome(outcome)) {
      retract(key);
      fail(report);
    }
  };

  const settle = (request: WireRequest, status: number, stream: StreamRecord | undefined, verdict: ResumeVerdict): void => {
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
    const records = subjects(request, stream);
    if (records.length === 0) {
      const report: ResumeReport = { ...base, requestId: undefined, record: undefined, decision: decideResume(verdict, false) };
      if (unplaced(request, stream)) decide(report, unsettledKey(request, undefined), false, request.startedAt + deadlineMs);
      else options.onResumeDecision?.(report);
      return;
    }
    for (const record of records) {
      // The guard's own flag: the observer has already counted a terminal carried by the event that
      // settles this verdict, which is part of the continuation, not something seen before it.
      const terminal = guard.isTerminal(record.key);
      const report: ResumeReport = { ...base, requestId: record.id, record, decision: decideResume(verdict, terminal) };
      decide(report, record.key, terminal, record.startedAt + deadlineMs);
    }
  };

  const settleSilent = (entry: SilentResume, seen: { ended?: StreamEnd; deadlinePassed?: boolean; requestEnded?: boolean }): void => {
    silent.delete(entry.stream);
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
    if (verdict) settle(entry.request, entry.status, stream, verdict);
  };

  /** The client gave these requests up (cancelled them, or deleted their session). */
  const requestsEnded = (sessionId: string | undefined, records: readonly RequestRecord[] | undefined): void => {
    for (const entry of [...silent.values()]) {
      if (entry.request.sessionId !== sessionId) continue;
      const concerned = subjects(entry.request, entry.stream);
      if (records === undefined || concerned.some((r) => records.includes(r))) settleSilent(entry, { requestEnded: true });
    }
    if (records !== undefined) {
      for (const record of records) confirm(record.key, ResumeEvidence.REQUEST_END);
      return;
    }
    for (const [key, entry] of unsettled.entries()) {
      if (entry.report.sessionId === sessionId) confirm(key, ResumeEvidence.REQUEST_END);
    }
  };

  const onTerminals = (event: WireEvent): boolean => {
    let keep = true;
    const sse = event.sse !== undefined;
    for (const terminal of event.terminals) {
      const record = terminal.request;
      retract(record.key);
      if (terminal.conflict) {
        if (sse) keep = false;
        const first = terminal.firstStream;
        options.onConflictingTerminal?.({
          action: GuardAction.CONFLICTING_TERMINAL_REPORTED,
          sessionId: record.sessionId,
          requestId: record.id,
          delivered: { streamId: first?.id, eventId: terminal.firstEventId },
          conflicting: { streamId: event.stream.id, eventId: event.eventId },
          outcome: terminal.outcome,
          removed: sse,
          foreign: terminal.foreign,
          event,
        });
      } else if (sse && (terminal.duplicate || guard.isTerminal(record.key))) {
        keep = false;
        options.onDuplicateTerminalDropped?.({
          action: GuardAction.DUPLICATE_TERMINAL_DROPPED,
          sessionId: record.sessionId,
          requestId: record.id,
          outcome: terminal.outcome,
          eventId: event.eventId,
          streamId: event.stream.id,
          foreign: terminal.foreign,
          event,
        });
      } else {
        // The first terminal, delivered even when foreign: it is the only result the client has.
        guard.observeEvent(record.key, event.eventId, true);
      }
    }
    return keep;
  };

  return {
    guard,

    onRequest(request: WireRequest): void {
      for (const record of request.requests) {
        guard.forget(record.key);
        retract(record.key);
      }
      if (request.cancels.length > 0) requestsEnded(request.sessionId, request.cancels);
      if (request.httpMethod === 'DELETE' && request.sessionId !== undefined) requestsEnded(request.sessionId, undefined);
      const resume = request.resume;
      if (resume === undefined || resume.requests.length === 0) return;
      for (const record of resume.requests) if (!isTerminal(record)) return;
      const first = resume.requests[0]!;
      const error = InvalidResumptionError.terminal(first.id, request.sessionId);
      options.onResumeRefused?.({
        action: GuardAction.RESUME_REFUSED,
        sessionId: request.sessionId,
        requestIds: resume.requests.map((r) => r.id),
        lastEventId: resume.lastEventId,
        error,
        request,
      });
      throw error;
    },

    onResponse(request: WireRequest, response: WireResponse): void {
      if (request.resume === undefined) return;
      const { status, stream } = response;
      if (status >= 200 && status < 300 && stream !== undefined) {
        const entry: SilentResume = { request, status, stream, timer: undefined };
        const records = subjects(request, stream);
        // A later resume the server accepted supersedes a held rejection or a poll: its own verdict (or
        // the deadline) settles the request now, so the request is never reported twice.
        for (const record of records) retract(record.key);
        const listening = records.length === 0 && !unplaced(request, stream);
        if (!listening) {
          let started = request.startedAt;
          for (const record of records) started = Math.min(started, record.startedAt);
          entry.timer = timer(started + deadlineMs, () => {
            if (silent.get(stream) === entry) settleSilent(entry, { deadlinePassed: true });
          });
        }
        silent.set(stream, entry);
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
      if (verdict) settle(request, status, stream, verdict);
    },

    onFetchError(request: WireRequest): void {
      if (request.resume === undefined) return;
      settle(request, 0, undefined, { outcome: ResumeOutcome.ERROR, evidence: ResumeEvidence.STATUS });
    },

    onEvent(event: WireEvent): boolean {
      const stream = event.stream;
      if (silent.size > 0 && stream.messageEvents > 0 && stream.isResume) {
        const entry = silent.get(stream);
        if (entry !== undefined) settleSilent(entry, {});
      }
      // Cursors are the wire's (the stream's delivered ids); the guard's own state is fed at the
      // terminal event, so an event that is not one costs nothing here.
      if (event.terminals.length === 0) return true;
      return onTerminals(event);
    },

    onStreamEnd(_request: WireRequest, stream: StreamRecord, end: StreamEnd): void {
      if (silent.size === 0) return;
      const entry = silent.get(stream);
      if (entry !== undefined) settleSilent(entry, { ended: end });
    },

    onSessionReleased(sessionId: string): void {
      guard.forgetSession(sessionId);
      // Silent resumes of the session ended with their streams (abort) or with the DELETE (request
      // end); what remains of them, and held rejections or polls, no longer concern a live session.
      for (const [stream, entry] of silent.entries()) {
        if (entry.request.sessionId !== sessionId) continue;
        clearTimeout(entry.timer);
        silent.delete(stream);
      }
    },

    stats() {
      return { silentResumes: silent.size, unsettledRequests: unsettled.size, evictions: silent.evictions + unsettled.evictions };
    },

    dispose(): void {
      for (const entry of silent.values()) clearTimeout(entry.timer);
      for (const entry of unsettled.values()) clearTimeout(entry.timer);
      silent.clear();
      unsettled.clear();
    },
  };
}
