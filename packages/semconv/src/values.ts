import type { ValuesOf } from './types.js';

export const ReattachTrigger = {
  STREAM_CLOSED: 'stream_closed',
  STREAM_ERROR: 'stream_error',
  NEW_TRANSPORT: 'new_transport',
} as const;
export type ReattachTrigger = ValuesOf<typeof ReattachTrigger>;

export const ResumeOutcome = {
  /** The server replayed at least one event, or held the stream open for live events. */
  CONTINUATION: 'continuation',
  /** 2xx and no event within the replay window. */
  EMPTY_REPLAY: 'empty_replay',
  /** 400 or 409: the cursor is not (or no longer) known. */
  CURSOR_REJECTED: 'cursor_rejected',
  /** 404: the session is gone. */
  SESSION_NOT_FOUND: 'session_not_found',
  /** Any other status, a network error, or a resume refused by the guard. */
  ERROR: 'error',
} as const;
export type ResumeOutcome = ValuesOf<typeof ResumeOutcome>;

export const TerminalOutcome = {
  RESULT: 'result',
  ERROR: 'error',
} as const;
export type TerminalOutcome = ValuesOf<typeof TerminalOutcome>;

export const TerminalDelivery = {
  /** Arrived on the stream of the request itself (POST response or its first GET). */
  LIVE: 'live',
  /** Arrived on a stream opened with Last-Event-ID. */
  REPLAY: 'replay',
} as const;
export type TerminalDelivery = ValuesOf<typeof TerminalDelivery>;

export const GuardAction = {
  /** A Last-Event-ID request for a terminal request was refused before it left the process. */
  RESUME_REFUSED: 'resume_refused',
  /** A second terminal event for one (session, request) was removed from the stream. */
  DUPLICATE_TERMINAL_DROPPED: 'duplicate_terminal_dropped',
  /** An empty replay or lost cursor was reported to the application. */
  RESUMPTION_FAILED_REPORTED: 'resumption_failed_reported',
} as const;
export type GuardAction = ValuesOf<typeof GuardAction>;

export const FindingKind = {
  DUPLICATE_TERMINAL: 'duplicate_terminal',
  RESUME_AFTER_TERMINAL: 'resume_after_terminal',
  RECONNECT_STORM: 'reconnect_storm',
  SIGNATURE: 'signature',
  AMBIGUOUS_EMPTY_REPLAY: 'ambiguous_empty_replay',
  CURSOR_LOST: 'cursor_lost',
} as const;
export type FindingKind = ValuesOf<typeof FindingKind>;
export const FINDING_KINDS: readonly FindingKind[] = Object.values(FindingKind);

export const SpanReceivedResult = {
  ACCEPTED: 'accepted',
  DUPLICATE: 'duplicate',
  INVALID: 'invalid',
  IGNORED: 'ignored',
} as const;
export type SpanReceivedResult = ValuesOf<typeof SpanReceivedResult>;
