import { InvalidResumptionError } from './errors.js';

/** What a response to a `Last-Event-ID` request means for the request it resumed. */
export const ResumeDecision = {
  /** The server replayed events for a request that had not finished: a real continuation. */
  CONTINUATION_VALID: 'continuation_valid',
  /** The request had already reached its terminal event; whatever the server sends changes nothing. */
  TERMINAL_ALREADY_OBSERVED_NO_ACTION: 'terminal_already_observed_no_action',
  /** 2xx with nothing replayed on an unfinished request: resumption failed, not "nothing missed". */
  AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY: 'ambiguous_empty_replay_escalate_to_retry',
  /** 400, 404 or 409: the cursor or the session is gone; retry the request from scratch. */
  BUFFER_EVICTED_RETRY_FROM_SCRATCH: 'buffer_evicted_retry_from_scratch',
} as const;
export type ResumeDecision = (typeof ResumeDecision)[keyof typeof ResumeDecision];

/** Statuses that say the server no longer holds the cursor or the session. */
export function isCursorGoneStatus(status: number): boolean {
  return status === 400 || status === 404 || status === 409;
}

/** Decisions that leave an unfinished request without its outcome: the application must retry it. */
export function isFailedResumption(decision: ResumeDecision): boolean {
  return (
    decision === ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY ||
    decision === ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH
  );
}

/**
 * The decision table. `terminal` is whether the client had seen the request's terminal event.
 * A 200 that replays events for a terminal request is not a continuation (condition 1 of validity
 * fails regardless of the buffer), so it is classified as terminal, not as `continuation_valid`.
 */
export function decideResume(requestId: string, status: number, bodyEmpty: boolean, terminal: boolean): ResumeDecision {
  if (isCursorGoneStatus(status)) return ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH;
  if (status === 200) {
    if (terminal) return ResumeDecision.TERMINAL_ALREADY_OBSERVED_NO_ACTION;
    return bodyEmpty ? ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY : ResumeDecision.CONTINUATION_VALID;
  }
  throw InvalidResumptionError.unexpectedStatus(requestId, status);
}
