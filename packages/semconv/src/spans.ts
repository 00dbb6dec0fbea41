/** Instrumentation scope of every span in the contract. */
export const TRACER_SCOPE = '@resumewatch/instrumentation';

/** An HTTP request that re-presents an existing Mcp-Session-Id on a new stream. */
export const SPAN_SESSION_REATTACH = 'mcp.session.reattach';
/** A request carrying Last-Event-ID (client side) or a replay served for one (server side). */
export const SPAN_STREAM_RESUME = 'mcp.stream.resume';
/**
 * A GET for the listening stream (no Last-Event-ID; with a session or without) that the server refused:
 * answered other than 2xx (a 405 when it offers none), or answered with an event stream it ended within
 * LISTENING_CLOSED_AT_ONCE_MS with no JSON-RPC message (the span then runs from the GET to that end), unless
 * the client had sent its session's DELETE before that end (the server closes a deleted session's streams).
 * No reattach or resume span tells either: without it a refused GET leaves no span.
 */
export const SPAN_LISTENING_REFUSED = 'mcp.stream.listening_refused';
/** One terminal event (JSON-RPC result or error) seen for a request, duplicates included. */
export const SPAN_REQUEST_TERMINAL = 'mcp.request.terminal';

/** A task status notification (`notifications/tasks/status`, `notifications/tasks`) seen on a stream. */
export const SPAN_TASK_STATUS = 'mcp.task.status';

/**
 * Name of the MCP request span, as the OpenTelemetry MCP semantic conventions say:
 * `{mcp.method.name} {target}` where target is the tool, prompt or resource, if any.
 */
export function mcpRequestSpanName(method: string, target?: string): string {
  return target ? `${method} ${target}` : method;
}

/**
 * A listening stream the server ended within this long of its GET, with no JSON-RPC message, was "closed
 * at once": a stream offered in name only (cline/cline#12119). The instrumentation emits such a stream's
 * mcp.stream.listening_refused span; the detector's listening_stream_loop counts it.
 */
export const LISTENING_CLOSED_AT_ONCE_MS = 1_000;
