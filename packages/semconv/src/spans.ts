/** Instrumentation scope of every span in the contract. */
export const TRACER_SCOPE = '@resumewatch/instrumentation';

/** An HTTP request that re-presents an existing Mcp-Session-Id on a new stream. */
export const SPAN_SESSION_REATTACH = 'mcp.session.reattach';
/** A request carrying Last-Event-ID (client side) or a replay served for one (server side). */
export const SPAN_STREAM_RESUME = 'mcp.stream.resume';
/**
 * A GET for the session's listening stream that the server refused (answered other than 2xx, a 405 when
 * it offers none) and that no reattach or resume span tells: without it a refused GET leaves no span.
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
