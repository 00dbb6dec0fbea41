// Attributes defined by the OpenTelemetry MCP, RPC, HTTP and GenAI semantic conventions. Not among them:
// `jsonrpc.protocol.version`, which the conventions record only when it is not "2.0" (MCP's always is);
// the negotiated MCP revision is ATTR_MCP_PROTOCOL_VERSION.
export const ATTR_MCP_METHOD_NAME = 'mcp.method.name';
export const ATTR_MCP_SESSION_ID = 'mcp.session.id';
export const ATTR_MCP_PROTOCOL_VERSION = 'mcp.protocol.version';
export const ATTR_MCP_RESOURCE_URI = 'mcp.resource.uri';
export const ATTR_JSONRPC_REQUEST_ID = 'jsonrpc.request.id';
export const ATTR_RPC_RESPONSE_STATUS_CODE = 'rpc.response.status_code';
export const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
export const ATTR_GEN_AI_PROMPT_NAME = 'gen_ai.prompt.name';
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const ATTR_SERVER_ADDRESS = 'server.address';
/**
 * The address of the client a request came from (OpenTelemetry's general convention): the gateway's
 * client identity (the peer's address, or behind a trusted proxy the forwarded one). Set on the spans of
 * a listening stream that names no session, where it is what keeps one client's re-opens apart.
 */
export const ATTR_CLIENT_ADDRESS = 'client.address';
export const ATTR_SERVER_PORT = 'server.port';
export const ATTR_NETWORK_TRANSPORT = 'network.transport';
export const ATTR_NETWORK_PROTOCOL_NAME = 'network.protocol.name';
/** Resource attribute; the detector's `service` label. */
export const ATTR_SERVICE_NAME = 'service.name';

// Attributes of the resumewatch extension.
/** Why a session id was presented again: see ReattachTrigger. */
export const ATTR_MCP_REATTACH_TRIGGER = 'mcp.reattach.trigger';
/** The stream of this session that ended before the reattach. */
export const ATTR_MCP_STREAM_PREVIOUS_ID = 'mcp.stream.previous.id';
/** Whether the server accepted the session id (2xx). */
export const ATTR_MCP_REATTACH_ACCEPTED = 'mcp.reattach.accepted';
/** Identity of one HTTP response body, assigned by the instrumentation; a resumed stream gets a new one. */
export const ATTR_MCP_STREAM_ID = 'mcp.stream.id';
/** The stream the Last-Event-ID cursor was taken from. */
export const ATTR_MCP_STREAM_RESUMED_FROM_ID = 'mcp.stream.resumed_from.id';
/** The Last-Event-ID sent (client) or received (server). */
export const ATTR_MCP_RESUME_LAST_EVENT_ID = 'mcp.resume.last_event_id';
/**
 * Client: a terminal event for the request had already been seen when the cursor was sent.
 * Server: the stream had already delivered its terminal response before the replay.
 */
export const ATTR_MCP_REQUEST_TERMINAL_OBSERVED = 'mcp.request.terminal_observed';
/** See ResumeOutcome. */
export const ATTR_MCP_RESUME_OUTCOME = 'mcp.resume.outcome';
/**
 * Events carrying at least one JSON-RPC message delivered on the resumed stream when the span was
 * emitted (priming events are not messages).
 */
export const ATTR_MCP_RESUME_REPLAYED_EVENTS = 'mcp.resume.replayed_events';
/** Whether a terminal event was among the replayed events. */
export const ATTR_MCP_RESUME_REPLAYED_TERMINAL = 'mcp.resume.replayed_terminal';
/** The SSE `id:` of the event, when it had one. */
export const ATTR_MCP_EVENT_ID = 'mcp.event.id';
/** See TerminalOutcome. */
export const ATTR_MCP_TERMINAL_OUTCOME = 'mcp.terminal.outcome';
/** A terminal event for this (session, request) had already been seen. */
export const ATTR_MCP_TERMINAL_DUPLICATE = 'mcp.terminal.duplicate';
/** See TerminalDelivery. */
export const ATTR_MCP_TERMINAL_DELIVERY = 'mcp.terminal.delivery';
/**
 * Which stream a span concerns: a request's stream (a POST response, or a resumption of one) or the
 * session's listening stream (the standalone GET and its resumptions): see StreamKind.
 */
export const ATTR_MCP_STREAM_KIND = 'mcp.stream.kind';
/**
 * The reconnection delay (ms) the stream announced with an SSE `retry:` field, the last one it carried:
 * set on the spans of a listening stream (its resume, or mcp.stream.listening_refused). A client that
 * waits at least that long before it re-opens the stream keeps the server's pace (not a loop).
 */
export const ATTR_MCP_STREAM_RETRY_MS = 'mcp.stream.retry_ms';
/**
 * Which instrumented client (one span recorder: one process's instrumented fetch) made a span of a
 * listening stream that names no session and no client.address: with neither, it is what keeps one
 * client's re-opens apart from another's (random per recorder; the resource's service.instance.id is
 * optional, and most resources lack it).
 */
export const ATTR_MCP_CLIENT_INSTANCE_ID = 'mcp.client.instance_id';
/** What the wire showed that decided `mcp.resume.outcome`: see ResumeEvidence. */
export const ATTR_MCP_RESUME_EVIDENCE = 'mcp.resume.evidence';
/**
 * The terminal arrived on a stream that never carried its request (the listening stream, or a resumed
 * stream of another request): the server replayed across streams, which the transport forbids.
 */
export const ATTR_MCP_TERMINAL_FOREIGN = 'mcp.terminal.foreign';
/**
 * A second terminal for this (session, request) whose content differs from the first one's: not a
 * duplicate but a conflict (a server replayed another request's or another session's result).
 */
export const ATTR_MCP_TERMINAL_CONFLICT = 'mcp.terminal.conflict';
/** On a duplicate or conflicting terminal: the stream whose terminal reached the application first. */
export const ATTR_MCP_TERMINAL_FIRST_STREAM_ID = 'mcp.terminal.first_stream.id';
/** What the guard did on this request or event, when it was enforced: see GuardAction. */
export const ATTR_MCP_GUARD_ACTION = 'mcp.guard.action';
/** What the guard's action rests on (GuardProof): how the client showed it holds the result. */
export const ATTR_MCP_GUARD_PROOF = 'mcp.guard.proof';
/**
 * On a client request span that ended without its terminal (its deadline, an abort, or, session era, a
 * break of a stream that gave no event id: `stream_broken` with `no_event_id`) after its stream had
 * ended without it: what the client did about it (RequestRecovery): resumed it, could not (no event
 * id), or did not. With `resumed`, the span's `mcp.resume.outcome` is the outcome of its last resume.
 */
export const ATTR_MCP_REQUEST_RECOVERY = 'mcp.request.recovery';

// The 2026-07-28 era: one response stream per request, closing it cancels, a lost result is re-issued.
/**
 * A keyed digest of a request's method, name (`Mcp-Name`: the tool, prompt or resource) and arguments,
 * hex; keyed like the ids under the instrumentation's id policy (never the raw arguments). Two requests
 * of one client with the same digest asked for the same work.
 */
export const ATTR_MCP_REQUEST_ARGUMENTS_DIGEST = 'mcp.request.arguments.digest';
/**
 * On a client request span: this request re-issues an earlier request of the same client whose stream
 * broke before its result (same method, name and arguments digest, within the instrumentation's
 * re-issue window). The value is the earlier request's trace id; `mcp.request.reissue_of.span_id` is
 * its span. A Multi Round-Trip retry that carries `inputResponses` is never a re-issue.
 */
export const ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID = 'mcp.request.reissue_of.trace_id';
/** The span id of the request this one re-issues: see ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID. */
export const ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID = 'mcp.request.reissue_of.span_id';
/**
 * On a re-issue (`mcp.request.reissue_of.trace_id`): it carries the same idempotency key as its first
 * attempt (the guard's `_meta` key), so the two are one logical call for certain, not by digest alone.
 */
export const ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY = 'mcp.request.reissue_of.same_key';
/** A Multi Round-Trip round: the request carries `inputResponses` (the answer to the server's input request). */
export const ATTR_MCP_REQUEST_INPUT_ROUND = 'mcp.request.input_round';
/**
 * On a server's (or the gateway's) request span: whether the request's handler went on to produce its
 * result after its response stream was closed (the client's cancellation in the 2026-07-28 era). True:
 * the work was not stopped; false: the handler ended without a result (it threw, or its tool failed).
 * Absent when the stream was not closed early, or when nothing showed the handler's end: silence does
 * not say the work stopped.
 */
export const ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION = 'mcp.request.completed_after_cancellation';

// MCP tasks (both shapes: see tasks.ts). Set on the request spans that concern a task: the call answered
// with a handle, and `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`; and on the
// `mcp.task.status` span of a status notification.
/** The task id (a credential, like a session id: it passes the instrumentation's id policy). */
export const ATTR_MCP_TASK_ID = 'mcp.task.id';
/** The task's status as this answer (or notification) showed it: see TaskStatus. */
export const ATTR_MCP_TASK_STATUS = 'mcp.task.status';
/** See TaskShape: 2025-11-25's client-requested task, or the 2026-07-28 extension's server-decided one. */
export const ATTR_MCP_TASK_SHAPE = 'mcp.task.shape';
/** The ttl the server announced for the task, in milliseconds; absent when unlimited (null) or not said. */
export const ATTR_MCP_TASK_TTL_MS = 'mcp.task.ttl_ms';
/** The poll interval the server announced, in milliseconds; absent when not said. */
export const ATTR_MCP_TASK_POLL_INTERVAL_MS = 'mcp.task.poll_interval_ms';
/** On a call: the client asked for a task (2025-11-25 `params.task`; 2026-07-28 the extension declared). */
export const ATTR_MCP_TASK_REQUESTED = 'mcp.task.requested';
/**
 * This answer carried the task's outcome to the client: a `tasks/result` answer (its result, or the
 * task's own error), or a 2026-07-28 `tasks/get` whose status is `completed` or `failed` (inline).
 */
export const ATTR_MCP_TASK_OUTCOME_DELIVERED = 'mcp.task.outcome_delivered';
/** The server answered that it no longer serves the task: see TaskGone. */
export const ATTR_MCP_TASK_GONE = 'mcp.task.gone';
