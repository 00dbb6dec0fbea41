import type { RequestRecord, StreamEnd, StreamRecord, WireEvent, WireListener, WireRequest, WireResponse } from '@resumewatch/wire';
import { decideResume, isCursorGoneStatus, isFailedResumption } from './decision.js';
import { InvalidResumptionError } from './errors.js';
import type { DroppedTerminal, FailedResumption, RefusedResume, ResumeReport } from './reports.js';
import { StreamResumptionGuard } from './resumption-guard.js';
import type { StreamResumptionGuardOptions } from './resumption-guard.js';

export interface GuardOptions extends StreamResumptionGuardOptions {
  /**
   * How long a 2xx resume stream may stay silent before it counts as an empty replay. Servers (the
   * MCP SDK's among them) keep a resumed stream open after replaying, so its end cannot be awaited.
   * Default 1000 ms.
   */
  replayWindowMs?: number;
  /** A resume of a finished request was refused; the fetch rejects with `report.error`. */
  onResumeRefused?(report: RefusedResume): void;
  /** A duplicate terminal event was removed from a stream. */
  onDuplicateTerminalDropped?(report: DroppedTerminal): void;
  /** Every classified resume response, one report per request the cursor's stream carried. */
  onResumeDecision?(report: ResumeReport): void;
  /**
   * An empty replay or a lost cursor on a request that has not finished (or on a cursor this process
   * cannot attribute): the request's outcome is unknown and must be retried with idempotency protection.
   */
  onFailedResumption?(report: FailedResumption): void;
}

export interface GuardListener extends WireListener {
  readonly guard: StreamResumptionGuard;
  /** Stops pending replay-window timers. */
  dispose(): void;
}

interface PendingResume {
  readonly request: WireRequest;
  readonly status: number;
  readonly stream: StreamRecord;
  timer: ReturnType<typeof setTimeout> | undefined;
  messages: number;
}

/**
 * The guard as a wire listener: add it to a WireObserver with `{ filters: true }`. It refuses a
 * `Last-Event-ID` request whose cursor's stream carried only finished requests, removes terminal
 * events for a (session, request) that already had one, and classifies every resume response with
 * the decision table, reporting failed resumptions.
 */
export function createGuardListener(options: GuardOptions = {}): GuardListener {
  const guard = new StreamResumptionGuard(options);
  const replayWindowMs = options.replayWindowMs ?? 1000;
  const pending = new Map<StreamRecord, PendingResume>();

  const isTerminal = (record: RequestRecord): boolean => record.terminalCount > 0 || guard.isTerminal(record.key);

  const report = (request: WireRequest, status: number, stream: StreamRecord | undefined, empty: boolean, messages: number): void => {
    // Any 2xx accepts the resume; the table speaks of 200. Other statuses outside the table (405,
    // 5xx, ...) are left to the client, which sees them itself.
    const tableStatus = status >= 200 && status < 300 ? 200 : status;
    if (tableStatus !== 200 && !isCursorGoneStatus(tableStatus)) return;
    const resume = request.resume!;
    const base = { sessionId: request.sessionId, lastEventId: resume.lastEventId, status, replayedMessages: messages, request, stream };
    if (resume.requests.length === 0) {
      const decision = decideResume('', tableStatus, empty, false);
      const unattributed: ResumeReport = { ...base, requestId: undefined, record: undefined, decision };
      options.onResumeDecision?.(unattributed);
      // A cursor from a stream known to carry no request (the standalone GET stream) loses nothing;
      // a cursor this process cannot attribute may belong to a request still waiting for its outcome.
      if (resume.from === undefined && isFailedResumption(decision)) {
        options.onFailedResumption?.({ ...unattributed, action: 'resumption_failed_reported' });
      }
      return;
    }
    for (const record of resume.requests) {
      // The guard's own flag: the observer has already counted a terminal carried by the event that
      // settles this decision, which is part of the continuation, not something seen before it.
      const decision = decideResume(record.id, tableStatus, empty, guard.isTerminal(record.key));
      const perRequest: ResumeReport = { ...base, requestId: record.id, record, decision };
      options.onResumeDecision?.(perRequest);
      if (isFailedResumption(decision)) options.onFailedResumption?.({ ...perRequest, action: 'resumption_failed_reported' });
    }
  };

  const settle = (entry: PendingResume, empty: boolean): void => {
    pending.delete(entry.stream);
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    report(entry.request, entry.status, entry.stream, empty, entry.messages);
  };

  return {
    guard,

    onRequest(request: WireRequest): void {
      for (const record of request.requests) guard.forget(record.key);
      const resume = request.resume;
      if (resume === undefined || resume.requests.length === 0) return;
      for (const record of resume.requests) if (!isTerminal(record)) return;
      const first = resume.requests[0]!;
      const error = InvalidResumptionError.terminal(first.id, request.sessionId);
      options.onResumeRefused?.({
        action: 'resume_refused',
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
      const success = status >= 200 && status < 300;
      if (success && stream !== undefined) {
        const entry: PendingResume = { request, status, stream, timer: undefined, messages: 0 };
        entry.timer = setTimeout(() => settle(entry, true), replayWindowMs);
        entry.timer.unref?.();
        pending.set(stream, entry);
        return;
      }
      report(request, status, stream, true, 0);
    },

    onEvent(event: WireEvent): boolean {
      const stream = event.stream;
      if (stream.isResume && pending.size > 0 && event.messages.length > 0) {
        const entry = pending.get(stream);
        if (entry !== undefined) {
          entry.messages++;
          settle(entry, false);
        }
      }
      const terminals = event.terminals;
      // Cursors are the wire's (the stream's delivered ids); the guard's own state is fed at the
      // terminal event, so an event that is not one costs nothing here.
      if (terminals.length === 0) return true;
      let keep = true;
      for (const terminal of terminals) {
        const record = terminal.request;
        if (event.sse !== undefined && (terminal.duplicate || guard.isTerminal(record.key))) {
          keep = false;
          options.onDuplicateTerminalDropped?.({
            action: 'duplicate_terminal_dropped',
            sessionId: record.sessionId,
            requestId: record.id,
            outcome: terminal.outcome,
            eventId: event.eventId,
            streamId: stream.id,
            event,
          });
        } else {
          guard.observeEvent(record.key, event.eventId, true);
        }
      }
      return keep;
    },

    onStreamEnd(_request: WireRequest, stream: StreamRecord, end: StreamEnd): void {
      if (pending.size === 0) return;
      const entry = pending.get(stream);
      if (entry === undefined) return;
      if (end === 'clean') {
        settle(entry, true);
      } else {
        // Cut or cancelled before anything arrived: not an answer from the server, and the client
        // will resume again or give up on its own.
        pending.delete(stream);
        if (entry.timer !== undefined) clearTimeout(entry.timer);
      }
    },

    dispose(): void {
      for (const entry of pending.values()) if (entry.timer !== undefined) clearTimeout(entry.timer);
      pending.clear();
    },
  };
}
