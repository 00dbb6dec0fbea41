import { ResumeOutcome, isCursorGoneStatus } from '@resumewatch/semconv';
import type { ResumeVerdict } from '@resumewatch/semconv';

export { isCursorGoneStatus };

/** What a resume's verdict (`resumeVerdict` of @resumewatch/semconv) means for the request it resumed. */
export const ResumeDecision = {
  /** A JSON-RPC message arrived on the resumed stream of a request that had not finished: a real continuation. */
  CONTINUATION_VALID: 'continuation_valid',
  /** The request had already reached its terminal event; whatever the server sends changes nothing. */
  TERMINAL_ALREADY_OBSERVED_NO_ACTION: 'terminal_already_observed_no_action',
  /**
   * The server announced polling (SEP-1699) and the resumed body ended without a message: a valid
   * poll. The client comes back after the `retry` interval; nothing is lost.
   */
  POLL_NO_ACTION: 'poll_no_action',
  /**
   * 2xx and the resumed body ended without a message, no polling announced, or the request's deadline
   * passed with the resumed stream silent: resumption failed, not "nothing missed".
   */
  AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY: 'ambiguous_empty_replay_escalate_to_retry',
  /** 400, 404 or 409: the cursor or the session is gone; retry the request from scratch. */
  BUFFER_EVICTED_RETRY_FROM_SCRATCH: 'buffer_evicted_retry_from_scratch',
  /**
   * Another status, no response, a broken body, or the client gave the request up while the resumed
   * stream was silent: not an answer about the cursor. The client resumes again or gives up on its own.
   */
  RESUME_ERROR_NO_ACTION: 'resume_error_no_action',
  /**
   * The resumed stream replayed messages (a continuation by them), and then the request's deadline
   * passed, or the client aborted it, without its result: the replay was partial and the result is lost.
   * Resumption failed; retry the request with idempotency protection.
   */
  PARTIAL_REPLAY_RETRY_WITH_IDEMPOTENCY: 'partial_replay_retry_with_idempotency',
} as const;
export type ResumeDecision = (typeof ResumeDecision)[keyof typeof ResumeDecision];

/** Decisions that leave an unfinished request without its outcome: the application must retry it. */
export function isFailedResumption(decision: ResumeDecision): boolean {
  return (
    decision === ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY ||
    decision === ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH ||
    decision === ResumeDecision.PARTIAL_REPLAY_RETRY_WITH_IDEMPOTENCY
  );
}

/**
 * The decision table. `terminal` is whether the client had seen the request's terminal event. A
 * status that says the cursor or session is gone decides whatever the request's state; on a 2xx, a
 * request already terminal is `terminal_already_observed_no_action` whatever the stream carries
 * (condition 1 of validity fails regardless of the buffer).
 */
export function decideResume(verdict: ResumeVerdict, terminal: boolean): ResumeDecision {
  switch (verdict.outcome) {
    case ResumeOutcome.CURSOR_REJECTED:
    case ResumeOutcome.SESSION_NOT_FOUND:
      return ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH;
    case ResumeOutcome.ERROR:
      return ResumeDecision.RESUME_ERROR_NO_ACTION;
    default:
      if (terminal) return ResumeDecision.TERMINAL_ALREADY_OBSERVED_NO_ACTION;
      if (verdict.outcome === ResumeOutcome.CONTINUATION) return ResumeDecision.CONTINUATION_VALID;
      if (verdict.outcome === ResumeOutcome.POLL) return ResumeDecision.POLL_NO_ACTION;
      if (verdict.outcome === ResumeOutcome.PARTIAL_REPLAY) return ResumeDecision.PARTIAL_REPLAY_RETRY_WITH_IDEMPOTENCY;
      return ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY;
  }
}
