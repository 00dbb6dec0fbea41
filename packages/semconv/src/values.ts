import type { ValuesOf } from './types.js';

export const ReattachTrigger = {
  STREAM_CLOSED: 'stream_closed',
  STREAM_ERROR: 'stream_error',
  NEW_TRANSPORT: 'new_transport',
} as const;
export type ReattachTrigger = ValuesOf<typeof ReattachTrigger>;

export const StreamKind = {
  /** The response stream of a POST, and every resumption of it. */
  REQUEST: 'request',
  /** The session's standalone GET stream (server-initiated messages), and every resumption of it. */
  LISTENING: 'listening',
} as const;
export type StreamKind = ValuesOf<typeof StreamKind>;

export const ResumeOutcome = {
  /** At least one JSON-RPC message arrived on the resumed stream (priming events are not messages). */
  CONTINUATION: 'continuation',
  /**
   * 2xx and the resumed body ended without any JSON-RPC message, the server not having announced
   * polling; or the request's deadline passed with the resumed stream still silent. Never silence alone.
   */
  EMPTY_REPLAY: 'empty_replay',
  /**
   * 2xx and the resumed body ended without a message after the server announced polling (SEP-1699: a
   * priming event, an `id` with empty data, or a `retry` field): a valid poll, the client comes back later.
   */
  POLL: 'poll',
  /** 400 or 409: the cursor is not (or no longer) known. */
  CURSOR_REJECTED: 'cursor_rejected',
  /** 404: the session is gone. */
  SESSION_NOT_FOUND: 'session_not_found',
  /** Any other status, a network error, or a resume refused by the guard. */
  ERROR: 'error',
  /**
   * 2xx and messages arrived on the resumed stream (a continuation by them), and then the request ended
   * without its terminal: its deadline passed, or the client aborted it, while the stream it was resumed
   * on stayed open. The replay carried some of what was missed, not the result. Known only at the
   * request's end, never from silence; a request the client cancelled keeps its `continuation`.
   */
  PARTIAL_REPLAY: 'partial_replay',
} as const;
export type ResumeOutcome = ValuesOf<typeof ResumeOutcome>;

/** What the wire showed that decided a resume's outcome (`mcp.resume.evidence`). */
export const ResumeEvidence = {
  /** A JSON-RPC message on the resumed stream. */
  MESSAGE: 'message',
  /** The HTTP status of the resume (or no response at all: a network error, a refusal). */
  STATUS: 'status',
  /** The end of the resumed body (clean, broken or cancelled). */
  BODY_END: 'body_end',
  /**
   * The request's deadline passed without its terminal while the resumed stream stayed silent (or, for
   * a `partial_replay`, silent after the messages it replayed).
   */
  DEADLINE: 'deadline',
  /**
   * The client gave the request up (cancelled it, closed the transport) while the resumed stream was
   * silent; or, for a `partial_replay`, aborted it (closed its stream or its session) after the replay.
   */
  REQUEST_END: 'request_end',
} as const;
export type ResumeEvidence = ValuesOf<typeof ResumeEvidence>;

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
  /**
   * A terminal that differs from the one already delivered for the request was removed from the
   * stream and reported to the application (which may hold the wrong result).
   */
  CONFLICTING_TERMINAL_REPORTED: 'conflicting_terminal_reported',
  /**
   * 2026-07-28 era: the application was told that it is re-issuing (or about to re-issue) a call whose
   * first attempt's stream broke, so the first attempt may have run.
   */
  REISSUE_REPORTED: 'reissue_reported',
} as const;
export type GuardAction = ValuesOf<typeof GuardAction>;

/**
 * What showed that a client holds a request's result: the only ground on which a guard refuses a resume
 * or removes a replayed result. A proxy knows what it wrote, not what its client read, so only the
 * client's own behaviour proves receipt.
 */
export const GuardProof = {
  /** In the client's own process: the application read the event that carried the result. */
  READ: 'application_read',
  /** The client's cursor (`Last-Event-ID`) named the result's event, or a later event of the same stream. */
  CURSOR: 'cursor',
  /**
   * The client's next request arrived on the same connection after the response that carried the result
   * ended (HTTP/1.1 reuses a connection only once the previous response was read whole; not pipelined).
   */
  NEXT_REQUEST: 'next_request',
  /** No proof: the action (a report) needed none; nothing was withheld from the client. */
  NONE: 'not_needed',
} as const;
export type GuardProof = ValuesOf<typeof GuardProof>;

export const FindingKind = {
  DUPLICATE_TERMINAL: 'duplicate_terminal',
  RESUME_AFTER_TERMINAL: 'resume_after_terminal',
  RECONNECT_STORM: 'reconnect_storm',
  SIGNATURE: 'signature',
  AMBIGUOUS_EMPTY_REPLAY: 'ambiguous_empty_replay',
  CURSOR_LOST: 'cursor_lost',
  /**
   * Server defect: a terminal arrived on a stream that never carried its request (`mcp.terminal.foreign`):
   * the server's event store replayed across streams. Blames the server (`server.address`), not the client.
   */
  FOREIGN_REPLAY: 'foreign_replay',
  /**
   * Server defect: a second terminal for one (session, request) whose content differs from the first
   * (`mcp.terminal.conflict`): the application may hold another request's or another session's result.
   */
  CONFLICTING_TERMINAL: 'conflicting_terminal',
  /**
   * The client cancelled a request (`notifications/cancelled`: its request span ended with `error.type`
   * `cancelled`) and the request's terminal arrived after that all the same: the application was told
   * the call failed while it ran to completion, so a retry runs its side effect twice.
   */
  COMPLETED_AFTER_CANCELLATION: 'completed_after_cancellation',
  /**
   * 2026-07-28 era: a request was re-issued (`mcp.request.reissue_of.*`) after its first attempt's
   * stream broke, and the first attempt ran to completion on the server all the same
   * (`mcp.request.completed_after_cancellation` true on a server or gateway span of the first attempt's
   * trace): the side effect ran twice. The era's successor of the replay loop.
   */
  DUPLICATE_EXECUTION: 'duplicate_execution',
  /**
   * 2026-07-28 era: a request was re-issued after its first attempt's stream broke, and nothing says
   * whether the first attempt stopped or completed (no server or gateway span of it within the window):
   * the side effect may have run twice. Lower severity than duplicate_execution.
   */
  POSSIBLE_DUPLICATE_EXECUTION: 'possible_duplicate_execution',
  /**
   * A request whose result never came after its stream ended without it: the client resumed it (with
   * an outcome no other finding tells: a continuation or partial replay, an error), could not resume it
   * (no event id), did not resume it, or (2026-07-28 era) re-issued nothing; then the request ended
   * without its result: its deadline passed, the client aborted it, or (2026-07-28) its stream broke.
   * Rests on the request's end, never on silence; a request the client cancelled is not one. Retracted
   * by its terminal, or (2026-07-28) by its re-issue.
   */
  LOST_RESULT: 'lost_result',
  /** A task-augmented call re-issued after its first attempt's reply was lost; the idempotency key ties both. */
  DUPLICATE_TASK: 'duplicate_task',
  /** The same, tied by client, method, name and arguments digest only. */
  POSSIBLE_DUPLICATE_TASK: 'possible_duplicate_task',
  /** A task reached completed or failed and its client never got the outcome: see TaskLostReason. */
  LOST_TASK_RESULT: 'lost_task_result',
  /** One task polled faster than its announced interval, or after the server said it is gone. */
  TASK_POLL_STORM: 'task_poll_storm',
  /** A client keeps sending a session id the server refused (404, or 400), with no new session initialized between. */
  DEAD_SESSION_LOOP: 'dead_session_loop',
  /** A client keeps re-opening its GET listening stream after a 405, or after streams closed at once with no event. */
  LISTENING_STREAM_LOOP: 'listening_stream_loop',
} as const;
export type FindingKind = ValuesOf<typeof FindingKind>;
export const FINDING_KINDS: readonly FindingKind[] = Object.values(FindingKind);
/** The finding kinds that blame the MCP server rather than the client; counted per server too. */
export const SERVER_DEFECT_KINDS: readonly FindingKind[] = [
  FindingKind.FOREIGN_REPLAY,
  FindingKind.CONFLICTING_TERMINAL,
];
/**
 * The finding kinds a later span can retract: a failed resumption contradicted by a continuation or
 * terminal; a lost result contradicted by its terminal, or (2026-07-28 era) followed by its re-issue.
 */
/** The findings of tasks: kept by task, not by request (no flag of the request table). */
export const TASK_FINDING_KINDS: readonly FindingKind[] = [
  FindingKind.DUPLICATE_TASK,
  FindingKind.POSSIBLE_DUPLICATE_TASK,
  FindingKind.LOST_TASK_RESULT,
  FindingKind.TASK_POLL_STORM,
];
export const RETRACTABLE_KINDS: readonly FindingKind[] = [
  FindingKind.AMBIGUOUS_EMPTY_REPLAY,
  FindingKind.CURSOR_LOST,
  FindingKind.LOST_RESULT,
  FindingKind.LOST_TASK_RESULT,
];

/**
 * What the client did about a request whose stream ended without its result (`mcp.request.recovery` on
 * its request span, and `recovery` of a `lost_result` finding).
 */
export const RequestRecovery = {
  /** It resumed the request's stream with Last-Event-ID (the resume's outcome tells the rest). */
  RESUMED: 'resumed',
  /** It could not resume: the stream carried no event id (a server that sends none), so there is no cursor. */
  NO_EVENT_ID: 'no_event_id',
  /** The stream carried an event id, and the client never resumed with it. */
  NOT_RESUMED: 'not_resumed',
  /** 2026-07-28 era (no resumption): the client did not re-issue the request (so far: a re-issue retracts it). */
  NOT_REISSUED: 'not_reissued',
} as const;
export type RequestRecovery = ValuesOf<typeof RequestRecovery>;

/**
 * The `record` of a line in the detector's findings stream (stdout, `/findings`, `onFinding`) that is
 * not itself a finding; a finding has no `record`. The line's `kind` is the finding kind it concerns.
 */
export const FindingRecord = {
  /** A reconnect storm ended (its `ended_by` says how); one for every `reconnect_storm` reported. */
  STORM_ENDED: 'storm_ended',
  /**
   * A failed-resumption finding was contradicted by a later span (a continuation or a terminal); a
   * lost_result by the request's terminal or its re-issue.
   */
  RETRACTION: 'retraction',
  /**
   * kind `lost_result`: a resume of the request counted as `continuation` (`resumewatch_resume_attempts_total`)
   * whose request then ended without its result: it was a `partial_replay` (`outcome`). `span_ids` the resume.
   */
  OUTCOME_CORRECTED: 'outcome_corrected',
} as const;
export type FindingRecord = ValuesOf<typeof FindingRecord>;

/** How a reconnect storm ended (`ended_by` of the storm-ended record and of its metric). */
export const StormEnd = {
  /** Its latest attempt was answered with an empty replay, a rejected cursor or a lost session. */
  EVICTED: 'evicted',
  /** The storm window passed without an attempt. */
  QUIET: 'quiet',
  /** Still running when the detector's input ended (`flush()`, shutdown). */
  SHUTDOWN: 'shutdown',
  /** Still running when the detector dropped the request's state at its cap. */
  DROPPED: 'dropped',
} as const;
export type StormEnd = ValuesOf<typeof StormEnd>;

export const SpanReceivedResult = {
  ACCEPTED: 'accepted',
  DUPLICATE: 'duplicate',
  INVALID: 'invalid',
  IGNORED: 'ignored',
} as const;
export type SpanReceivedResult = ValuesOf<typeof SpanReceivedResult>;

/** Why `resumewatch gateway` answered a request itself instead of forwarding it (`reason` of its refusals metric). */
export const GatewayRefusal = {
  /** The POST body was larger than --max-body (413). */
  BODY_TOO_LARGE: 'body_too_large',
  /** The request's header block was larger than --max-header-bytes (431). */
  HEADERS_TOO_LARGE: 'headers_too_large',
  /** --max-streams exchanges were already open (503). */
  TOO_MANY_STREAMS: 'too_many_streams',
  /** Not a request for the upstream: an absolute-form target (400), CONNECT (405). */
  NOT_PROXIED: 'not_proxied',
  /** The upstream could not be reached, or its response broke before its headers (502). */
  UPSTREAM_UNREACHABLE: 'upstream_unreachable',
  /** No response headers from the upstream within --upstream-timeout (504). */
  UPSTREAM_TIMEOUT: 'upstream_timeout',
  /** A stream silent in both directions for --stream-idle-timeout was closed. */
  STREAM_IDLE: 'stream_idle',
  /**
   * The request's `Host` is missing or not an allowed name (403): by default on a loopback address only
   * loopback names, else --allowed-hosts. A rebound DNS name (DNS rebinding) gets this.
   */
  HOST_NOT_ALLOWED: 'host_not_allowed',
  /** The request's `Origin` is neither the request's own origin nor an allowed one (403, --allowed-origins). */
  ORIGIN_NOT_ALLOWED: 'origin_not_allowed',
  /**
   * The gateway failed on an exchange in a way it did not foresee (502 with a generic message; the
   * detail goes to its stderr), e.g. a response it cannot relay: a status below 100.
   */
  INTERNAL_ERROR: 'internal_error',
  /** The request's header block did not arrive within --header-timeout (408, connection closed). */
  HEADERS_TIMEOUT: 'headers_timeout',
  /** The request's body did not arrive whole within --body-timeout (408, connection closed). */
  BODY_TIMEOUT: 'body_timeout',
  /** --max-connections client connections were already open: a new one is closed at once, unanswered. */
  TOO_MANY_CONNECTIONS: 'too_many_connections',
} as const;
export type GatewayRefusal = ValuesOf<typeof GatewayRefusal>;

/**
 * What the gateway passed to its client unparsed, the `kind` of `resumewatch_gateway_unparsed_total`:
 * too large to hold (over its own bound), or past the bytes held across exchanges.
 */
export const UnparsedKind = {
  /** A JSON response body. */
  JSON_BODY: 'json_body',
  /** An SSE event (passed as it arrived; it cannot be removed, and a terminal in it is not seen). */
  SSE_EVENT: 'sse_event',
  /**
   * A request body of more JSON-RPC messages than --max-batch-messages: forwarded unobserved, and its
   * response with it (no record, span or timer for any of its messages, so no finding either).
   */
  REQUEST_BATCH: 'request_batch',
  /**
   * A response body in a `Content-Encoding` the gateway could not read (unknown or stacked codings,
   * corrupt data, a decompression bomb; under --enforce, an SSE body the upstream encoded though asked
   * for identity): passed as it came, unobserved and unfiltered, its requests not judged.
   */
  ENCODED_BODY: 'encoded_body',
} as const;
export type UnparsedKind = ValuesOf<typeof UnparsedKind>;

/**
 * JSON-RPC error codes of the gateway's own answers, the MCP SDKs' codes for the same conditions
 * (`ErrorCode.ConnectionClosed`, `ErrorCode.RequestTimeout`).
 */
export const GatewayErrorCode = {
  /** The upstream is unreachable, refused the exchange, or the gateway is at a limit. */
  UNAVAILABLE: -32000,
  /** The upstream did not answer in time, or the client did not send its request in time. */
  TIMEOUT: -32001,
} as const;

/**
 * `error.type` values the instrumentation sets on request spans besides HTTP status codes, JSON-RPC
 * error codes and exception names.
 */
export const ErrorType = {
  /** The request's deadline passed without its terminal event. */
  TIMEOUT: 'timeout',
  /** The client aborted the request, or its session's transport closed, before its terminal event. */
  ABORTED: 'aborted',
  /** The client sent `notifications/cancelled` for the request. */
  CANCELLED: 'cancelled',
  /** A tools/call whose result says `isError`. */
  TOOL_ERROR: 'tool_error',
  /**
   * The request's response stream ended (the network, a proxy or the server closed it) before its
   * terminal event, and the client did not close it: in the 2026-07-28 era the result is lost. In the
   * session era, only a break of a stream that gave no event id (`mcp.request.recovery` `no_event_id`):
   * no cursor exists, no resume can bring the result.
   */
  STREAM_BROKEN: 'stream_broken',
  OTHER: '_OTHER',
} as const;
export type ErrorType = ValuesOf<typeof ErrorType>;
/** The `error.type` of a client request span that ended without its terminal event: the client gave the request up. */
export const REQUEST_GIVEN_UP_ERRORS: readonly string[] = [ErrorType.TIMEOUT, ErrorType.ABORTED, ErrorType.CANCELLED];
/** The `error.type` of a client request span whose result is lost without the client giving it up: it may re-issue it. */
export const REQUEST_BROKEN_ERRORS: readonly string[] = [ErrorType.STREAM_BROKEN];

/**
 * The two eras of MCP's Streamable HTTP transport. `sessions`: every revision up to 2025-11-25, with
 * `Mcp-Session-Id`, the standalone GET stream and `Last-Event-ID` resumption (where the replay loop
 * lives). `stateless`: 2026-07-28 and later, one response stream per request and no resumption.
 */
export const ProtocolEra = {
  SESSIONS: 'sessions',
  STATELESS: 'stateless',
} as const;
export type ProtocolEra = ValuesOf<typeof ProtocolEra>;

/** The first protocol revision without sessions and resumption. */
export const STATELESS_PROTOCOL_VERSION = '2026-07-28';

/**
 * The `_meta` key of a 2026-07-28 request's protocol version claim (the transport derives the
 * `MCP-Protocol-Version` header from it): an exchange's version when the header is missing.
 */
export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';

/** The era of a negotiated protocol version (`mcp.protocol.version`, YYYY-MM-DD); undefined when none is known. */
export function protocolEra(version: unknown): ProtocolEra | undefined {
  // Called for every request span the detector reads: the shape of a date, checked without a regex.
  if (typeof version !== 'string' || version.length !== 10 || version[4] !== '-' || version[7] !== '-')
    return undefined;
  return version >= STATELESS_PROTOCOL_VERSION ? ProtocolEra.STATELESS : ProtocolEra.SESSIONS;
}

/**
 * JSON-RPC error codes that say the caller sent a request the server could not serve (parse error,
 * invalid request, method not found, invalid params, which is also an unknown tool, resource not
 * found): the MCP conventions do not count them as the server's errors, so a server operation answered
 * with one has `rpc.response.status_code` and no `error.type` (mcp.server.status.attributes).
 */
export const CALLER_ERROR_CODES: readonly string[] = ['-32700', '-32600', '-32601', '-32602', '-32002'];
/** `mcp.method.name` of a tool call: the operations that carry `gen_ai.tool.name`. */
export const MCP_METHOD_TOOLS_CALL = 'tools/call';
