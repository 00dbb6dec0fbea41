import type {
  FindingKind,
  GuardAction,
  GuardProof,
  ResumeEvidence,
  ResumeOutcome,
  TaskGone,
  TaskLostReason,
  TaskShape,
  TerminalOutcome,
} from '@resumewatch/semconv';
import type { RequestRecord, StreamEnd, StreamRecord, WireEvent, WireRequest } from '@resumewatch/wire';
import type { ResumeDecision } from './decision.js';
import type { InvalidResumptionError } from './errors.js';

/** A `Last-Event-ID` request for a finished request, refused before it left the process. */
export interface RefusedResume {
  readonly action: typeof GuardAction.RESUME_REFUSED;
  readonly sessionId: string | undefined;
  /** The JSON-RPC ids of the requests the cursor's stream carried, all terminal. */
  readonly requestIds: readonly string[];
  readonly lastEventId: string;
  /**
   * How the client showed it holds the results: `application_read` in the application's own process; through a
   * proxy, its cursor at or past the result (`cursor`) or its next request on the same connection (`next_request`).
   */
  readonly proof: GuardProof;
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
  /** How the reader showed it holds the first copy (see RefusedResume.proof). */
  readonly proof: GuardProof;
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
  /**
   * Removed from its SSE stream: only when the reader provably holds the first terminal (`proof`); a
   * JSON body is passed whole, and without proof the conflicting copy goes on (it may be the only one
   * the reader gets).
   */
  readonly removed: boolean;
  /** What the removal rests on; `not_needed` when nothing was removed. */
  readonly proof: GuardProof;
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

/**
 * 2026-07-28 era: a request whose response stream ended before its result (the network, a proxy or the
 * server closed it; the client did not). The result is lost; the first attempt may have run, or may
 * still be running: nothing on the client says which. Told at once (the v2 SDK fails the call only at
 * its request timeout).
 */
export interface BrokenAttempt {
  readonly requestId: string;
  readonly method: string;
  /** The tool, prompt or resource (`Mcp-Name`). */
  readonly name: string | undefined;
  /** When the attempt was sent and when its stream broke (the guard's clock). */
  readonly startedAt: number;
  readonly brokenAt: number;
  /** How its body ended (`clean` or `error`); undefined when the fetch failed without a response. */
  readonly streamEnd: StreamEnd | undefined;
  /** The idempotency key the attempt carried in its `_meta`, if any. */
  readonly idempotencyKey: string | undefined;
  /** 1 for a first attempt, 2 for its first re-issue, and so on. */
  readonly attempt: number;
  readonly request: WireRequest;
}

/** The request that re-issues a broken one. */
export interface ReissueAttempt {
  readonly requestId: string;
  /** The idempotency key it carries: the broken attempt's, when the guard added keys. */
  readonly idempotencyKey: string | undefined;
  readonly attempt: number;
  readonly request: WireRequest;
}

/**
 * 2026-07-28 era: the application is re-issuing (the request is about to leave) a call whose earlier
 * attempt's stream broke before its result: the same method, name and arguments (by keyed digest)
 * within the re-issue window. The earlier attempt may have run to its side effect; the re-issue is not
 * held back. Never for a Multi Round-Trip round (a request carrying `inputResponses`).
 */
export interface ReissueReport {
  readonly action: typeof GuardAction.REISSUE_REPORTED;
  readonly method: string;
  readonly name: string | undefined;
  /** The keyed digest of method, name and arguments under this guard's own key (never the arguments). */
  readonly argumentsDigest: string;
  /** The attempt it re-issues: the first attempt, or the last re-issue when that broke too. */
  readonly firstAttempt: BrokenAttempt;
  readonly reissue: ReissueAttempt;
}

/**
 * MCP tasks (both shapes): a `tasks/get`, `tasks/result` or `tasks/update` of a task whose outcome this
 * guard never delivered to the application was answered -32602 ("Task not found", "Task has expired"):
 * the server no longer holds the task, and its result or error is lost. Once per task. Never for a task
 * the client cancelled, nor for a task whose outcome was delivered (a re-read after expiry loses nothing).
 */
export interface LostTaskResult {
  readonly kind: typeof FindingKind.LOST_TASK_RESULT;
  /** `gone`: the server said the task is gone. */
  readonly reason: typeof TaskLostReason.GONE;
  /** `expired` when the error's message says so, else `not_found`. */
  readonly gone: TaskGone;
  readonly taskId: string;
  /** The request that was answered -32602. */
  readonly method: string;
  readonly requestId: string;
  /**
   * This guard saw the call that created the task answered with its handle. A `not_found` for a task it
   * never saw created may be another replica's answer (behind a balancer that does not route by task),
   * or a task id from elsewhere: weigh it accordingly.
   */
  readonly created: boolean;
  /** The last status this guard saw for the task (a `completed` or `failed` task lost its outcome for sure). */
  readonly lastStatus: string | undefined;
  /** The ttl the server announced, in ms (null: unlimited; undefined: never seen). */
  readonly ttlMs: number | null | undefined;
  /** When the guard received the task's handle (its clock), if it did. */
  readonly createdAt: number | undefined;
  readonly request: WireRequest;
}

/** One attempt of a task-capable call (a 2025 `tools/call` with `params.task`, or a 2026 `tools/call`). */
export interface TaskCallAttempt {
  readonly requestId: string;
  readonly method: string;
  readonly name: string | undefined;
  readonly idempotencyKey: string | undefined;
  /** When it was sent (the guard's clock). */
  readonly startedAt: number;
}

/**
 * MCP tasks (both shapes): the application re-issued a task-capable call (same method, name and arguments,
 * same server and session, within `reissueWindowMs`) whose earlier attempt ended without an answer this
 * guard saw (its stream or fetch broke, or the client gave it up), and the re-issue was answered with a
 * new task. The earlier attempt may have created a task too (the server may have received it): two tasks
 * may run the same work. `possible`: nothing on the client shows whether the first task exists; where the
 * calls carry one idempotency key (`idempotencyKey`), the server, or the gateway under --enforce, can tie
 * them. The guard could not answer the re-issue with the first handle: it never saw it.
 */
export interface DuplicateTask {
  readonly kind: typeof FindingKind.POSSIBLE_DUPLICATE_TASK;
  /** The task the re-issue created. */
  readonly taskId: string;
  readonly shape: TaskShape;
  readonly firstAttempt: TaskCallAttempt & {
    /** When its exchange ended without an answer. */
    readonly endedAt: number;
    /** How its body ended; undefined when its fetch failed. */
    readonly streamEnd: StreamEnd | undefined;
  };
  readonly reissue: TaskCallAttempt;
  readonly request: WireRequest;
}

/**
 * MCP tasks (both shapes): the application re-issued a task-capable call (same method, name and arguments,
 * same server and session) while the task its earlier attempt created is live (its ttl has not passed, its
 * outcome has not been delivered, it was not cancelled nor said gone), and the guard answered it locally
 * with the server's own creation answer (the result it received, under the re-issue's JSON-RPC id):
 * nothing was sent, no second task was created.
 */
export interface RepeatedTaskHandle {
  readonly taskId: string;
  readonly shape: TaskShape;
  /** The re-issue's JSON-RPC id (the local answer carries it). */
  readonly requestId: string | number;
  readonly method: string;
  readonly name: string | undefined;
  /** The re-issue's idempotency key, if it carries one (equal to the first attempt's, or the first had none). */
  readonly idempotencyKey: string | undefined;
  /** When the guard received the handle it repeated. */
  readonly createdAt: number;
}

/**
 * A request answered in process with the server's own earlier refusal (nothing was sent): a request on a
 * session the server refused (`onDeadSession`: 404, or a 400 that said the session is unknown), or a GET
 * listening stream the server does not offer (`onListeningRefused`: 405). The application sees what the
 * server said, without the load; it should initialize anew (a dead session) or stop re-opening (405).
 */
export interface RepeatedRefusal {
  /** The refused session; undefined for a GET without one (a stateless server). */
  readonly sessionId: string | undefined;
  readonly url: string;
  /** The HTTP method of the request answered locally. */
  readonly httpMethod: string;
  /** The server's status, repeated. */
  readonly status: number;
  /** When the server's refusal arrived (the guard's clock). */
  readonly refusedAt: number;
  /** How many requests this refusal has answered locally, this one included. */
  readonly repeats: number;
}
