import type { GuardAction, ResumeEvidence, ResumeOutcome, TerminalOutcome } from '@resumewatch/semconv';
import type { RequestRecord, StreamRecord, WireEvent, WireRequest } from '@resumewatch/wire';
import type { ResumeDecision } from './decision.js';
import type { InvalidResumptionError } from './errors.js';

/** A `Last-Event-ID` request for a finished request, refused before it left the process. */
export interface RefusedResume {
  readonly action: typeof GuardAction.RESUME_REFUSED;
  readonly sessionId: string | undefined;
  /** The JSON-RPC ids of the requests the cursor's stream carried, all terminal. */
  readonly requestIds: readonly string[];
  readonly lastEventId: string;
  readonly error: InvalidResumptionError;
  readonly request: WireRequest;
}

/** A second terminal event for one (session, request) with the first one's content, removed before the client read it. */
export interface DroppedTerminal {
  readonly action: typeof GuardAction.DUPLICATE_TERMINAL_DROPPED;
  readonly sessionId: string;
  readonly requestId: string;
  readonly outcome: TerminalOutcome;
  readonly eventId: string | undefined;
  /** The stream it arrived on (a resumed stream, usually). */
  readonly streamId: string;
  /** It arrived on a stream that never carried the request (a server replaying across streams). */
  readonly foreign: boolean;
  readonly event: WireEvent;
}

/** Where one terminal event of a request arrived. */
export interface TerminalPlace {
  /** The wire observer's stream id. */
  readonly streamId: string | undefined;
  /** The SSE id of the event, when it had one. */
  readonly eventId: string | undefined;
}

/**
 * A terminal event whose content differs from the one the application already received for the
 * same (session, request): the server replayed another request's or another session's result. The
 * application holds `delivered` and may hold the wrong result: it should discard or re-verify it.
 */
export interface ConflictingTerminal {
  readonly action: typeof GuardAction.CONFLICTING_TERMINAL_REPORTED;
  readonly sessionId: string;
  readonly requestId: string;
  /** The first terminal, which reached the application. */
  readonly delivered: TerminalPlace;
  /** The conflicting terminal, removed from its SSE stream (see `removed`). */
  readonly conflicting: TerminalPlace;
  readonly outcome: TerminalOutcome;
  /** False only for a JSON body, which is passed whole. */
  readonly removed: boolean;
  /** The conflicting terminal arrived on a stream that never carried the request. */
  readonly foreign: boolean;
  readonly event: WireEvent;
}

/** A verdict on a response to a `Last-Event-ID` request, for one request the resumed stream carries. */
export interface ResumeReport {
  readonly sessionId: string | undefined;
  /** The JSON-RPC id, or undefined when the stream carries no request this process knows (or is the listening stream). */
  readonly requestId: string | undefined;
  readonly record: RequestRecord | undefined;
  readonly lastEventId: string;
  /** HTTP status of the resume; 0 when there was no response. */
  readonly status: number;
  /** `resumeVerdict` of @resumewatch/semconv. */
  readonly outcome: ResumeOutcome;
  /** What the wire showed that decided: a status, a message, the body's end, the request's deadline or its end. */
  readonly evidence: ResumeEvidence;
  readonly decision: ResumeDecision;
  /** Events carrying JSON-RPC messages seen on the resumed stream before the verdict. */
  readonly replayedMessages: number;
  readonly request: WireRequest;
  readonly stream: StreamRecord | undefined;
}

/**
 * A failed resumption told to the application: retry the request with idempotency protection. For
 * a rejected cursor (400/409), `evidence` says what confirmed it: the client's next resume rejected
 * too (`status`), the request's deadline (`deadline`) or its end (`request_end`).
 */
export interface FailedResumption extends ResumeReport {
  readonly action: typeof GuardAction.RESUMPTION_FAILED_REPORTED;
}
