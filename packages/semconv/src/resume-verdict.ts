import { ResumeEvidence, ResumeOutcome } from './values.js';

/**
 * What the wire has shown of one resume (a request carrying `Last-Event-ID`) so far. The guard, the
 * instrumentation and the detector all decide with `resumeVerdict`, so the three agree.
 */
export interface ResumeObservation {
  /** HTTP status of the response; 0 when there was none (network error, refusal). */
  readonly status: number;
  /** JSON-RPC messages that arrived on the resumed stream so far (priming events are not messages). */
  readonly messages: number;
  /** How the resumed body ended, if it has. */
  readonly ended: 'clean' | 'error' | 'abort' | undefined;
  /** The server announced polling (SEP-1699) for this stream: a priming event or a `retry` field. */
  readonly pollingAnnounced: boolean;
  /** The request's deadline passed without its terminal. */
  readonly deadlinePassed: boolean;
  /** The client gave the request up (cancelled it, closed its transport). */
  readonly requestEnded: boolean;
}

export interface ResumeVerdict {
  readonly outcome: ResumeOutcome;
  readonly evidence: ResumeEvidence;
}

/** Statuses that say the server no longer holds the cursor (400, 409) or the session (404). */
export function isCursorGoneStatus(status: number): boolean {
  return status === 400 || status === 404 || status === 409;
}

/** The outcome a non-2xx status (or no response, 0) gives a resume. */
export function outcomeOfStatus(status: number): ResumeOutcome {
  if (status === 404) return ResumeOutcome.SESSION_NOT_FOUND;
  if (status === 400 || status === 409) return ResumeOutcome.CURSOR_REJECTED;
  return ResumeOutcome.ERROR;
}

/**
 * The one rule for a resume's outcome, on evidence only: a status, a message, the end of the body, the
 * request's deadline or its end. A resumed stream that is open and silent has no verdict yet
 * (`undefined`): a quiet server is usually a working one.
 */
export function resumeVerdict(seen: ResumeObservation): ResumeVerdict | undefined {
  const { status } = seen;
  if (!(status >= 200 && status < 300)) return { outcome: outcomeOfStatus(status), evidence: ResumeEvidence.STATUS };
  if (seen.messages > 0) return { outcome: ResumeOutcome.CONTINUATION, evidence: ResumeEvidence.MESSAGE };
  if (seen.ended === 'clean') {
    return {
      outcome: seen.pollingAnnounced ? ResumeOutcome.POLL : ResumeOutcome.EMPTY_REPLAY,
      evidence: ResumeEvidence.BODY_END,
    };
  }
  if (seen.ended !== undefined) return { outcome: ResumeOutcome.ERROR, evidence: ResumeEvidence.BODY_END };
  if (seen.deadlinePassed) return { outcome: ResumeOutcome.EMPTY_REPLAY, evidence: ResumeEvidence.DEADLINE };
  if (seen.requestEnded) return { outcome: ResumeOutcome.ERROR, evidence: ResumeEvidence.REQUEST_END };
  return undefined;
}

/**
 * Outcomes that leave an unfinished request without its result: the application must retry it with
 * idempotency protection. Only for a request whose terminal had not been seen; a 400/409 may be
 * transient (a server still holding the dropped connection) and counts only once the client's own
 * retry of the resume failed too or the request ended without its terminal. A `partial_replay` is
 * known only at the request's end.
 */
export function isFailedResumptionOutcome(outcome: ResumeOutcome): boolean {
  return (
    outcome === ResumeOutcome.EMPTY_REPLAY ||
    outcome === ResumeOutcome.CURSOR_REJECTED ||
    outcome === ResumeOutcome.SESSION_NOT_FOUND ||
    outcome === ResumeOutcome.PARTIAL_REPLAY
  );
}

/**
 * The outcome of a resume that was a continuation when its request ended without its terminal: the
 * request's deadline passed (`timedOut`) or the client aborted it (closed its stream or session). A
 * request the client cancelled keeps its continuation. Any other verdict stands.
 */
export function verdictAtRequestEnd(verdict: ResumeVerdict, timedOut: boolean): ResumeVerdict {
  if (verdict.outcome !== ResumeOutcome.CONTINUATION) return verdict;
  return {
    outcome: ResumeOutcome.PARTIAL_REPLAY,
    evidence: timedOut ? ResumeEvidence.DEADLINE : ResumeEvidence.REQUEST_END,
  };
}
