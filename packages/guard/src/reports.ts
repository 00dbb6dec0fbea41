import type { RequestRecord, StreamRecord, WireEvent, WireRequest } from '@resumewatch/wire';
import type { ResumeDecision } from './decision.js';
import type { InvalidResumptionError } from './errors.js';

/**
 * What the guard did, named as `GuardAction` in @resumewatch/semconv so the instrumentation can
 * record it on spans as is.
 */
export type GuardAction = 'resume_refused' | 'duplicate_terminal_dropped' | 'resumption_failed_reported';

/** A `Last-Event-ID` request for a finished request, refused before it left the process. */
export interface RefusedResume {
  readonly action: 'resume_refused';
  readonly sessionId: string | undefined;
  /** The JSON-RPC ids of the requests the cursor's stream carried, all terminal. */
  readonly requestIds: readonly string[];
  readonly lastEventId: string;
  readonly error: InvalidResumptionError;
  readonly request: WireRequest;
}

/** A second terminal event for one (session, request), removed before the client read it. */
export interface DroppedTerminal {
  readonly action: 'duplicate_terminal_dropped';
  readonly sessionId: string;
  readonly requestId: string;
  readonly outcome: 'result' | 'error';
  readonly eventId: string | undefined;
  /** The stream it arrived on (a resumed stream, usually). */
  readonly streamId: string;
  readonly event: WireEvent;
}

/** How a response to a `Last-Event-ID` request was classified, for one request the cursor's stream carried. */
export interface ResumeReport {
  readonly sessionId: string | undefined;
  /** The JSON-RPC id, or undefined when the cursor's stream carried no request this process knows. */
  readonly requestId: string | undefined;
  readonly record: RequestRecord | undefined;
  readonly lastEventId: string;
  readonly status: number;
  readonly decision: ResumeDecision;
  /** Events carrying JSON-RPC messages seen on the resumed stream before the decision. */
  readonly replayedMessages: number;
  readonly request: WireRequest;
  readonly stream: StreamRecord | undefined;
}

/** A failed resumption told to the application: retry the request with idempotency protection. */
export interface FailedResumption extends ResumeReport {
  readonly action: 'resumption_failed_reported';
}
