// Prometheus metrics exported by the detector. No session, request, event or trace id is ever a label.
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_RPC_RESPONSE_STATUS_CODE,
} from './attributes.js';

export const LABEL_KIND = 'kind';
export const LABEL_SERVICE = 'service';
export const LABEL_DUPLICATE = 'duplicate';
export const LABEL_OUTCOME = 'outcome';
export const LABEL_ACCEPTED = 'accepted';
export const LABEL_RESULT = 'result';
/** The MCP server (`server.address`) a server-defect finding blames, capped like `service`. */
export const LABEL_SERVER = 'server';
/** How a reconnect storm ended: see StormEnd. */
export const LABEL_ENDED_BY = 'ended_by';
/** The protocol era of a request (ProtocolEra). */
export const LABEL_ERA = 'era';
/** The MCP protocol version a client asked for (`mcp.protocol.version`, YYYY-MM-DD), capped like `service`. */
export const LABEL_VERSION = 'version';
/** What the gateway's guard did (GuardAction). */
export const LABEL_ACTION = 'action';
/** What a guard action rests on (GuardProof). */
export const LABEL_PROOF = 'proof';
/** Why the gateway answered a request itself (GatewayRefusal). */
export const LABEL_REASON = 'reason';
/** HTTP method of an exchange through the gateway. */
export const LABEL_METHOD = 'method';
/** Status class of the gateway's answer: 2xx, 3xx, 4xx, 5xx, or `none` (the connection broke first). */
export const LABEL_STATUS_CLASS = 'status_class';
/** The shape of an MCP task (TaskShape: augmented, extension). */
export const LABEL_SHAPE = 'shape';
/** Exemplar label on the findings counter (OpenMetrics only). */
export const EXEMPLAR_TRACE_ID = 'trace_id';

/**
 * The Prometheus label of an OpenTelemetry attribute, as the OpenTelemetry → Prometheus mapping writes
 * it: every character a label name cannot hold (the dots) becomes `_`.
 */
export function prometheusLabelName(attribute: string): string {
  return attribute.replace(/[^a-zA-Z0-9_]/g, '_');
}
// The attributes of mcp.server.operation.duration, as its Prometheus histogram's labels.
export const LABEL_MCP_METHOD_NAME = prometheusLabelName(ATTR_MCP_METHOD_NAME);
export const LABEL_GEN_AI_TOOL_NAME = prometheusLabelName(ATTR_GEN_AI_TOOL_NAME);
export const LABEL_ERROR_TYPE = prometheusLabelName(ATTR_ERROR_TYPE);
export const LABEL_MCP_PROTOCOL_VERSION = prometheusLabelName(ATTR_MCP_PROTOCOL_VERSION);
export const LABEL_RPC_RESPONSE_STATUS_CODE = prometheusLabelName(ATTR_RPC_RESPONSE_STATUS_CODE);

export const METRIC_FINDINGS_TOTAL = 'resumewatch_findings_total';
export const METRIC_TERMINAL_EVENTS_TOTAL = 'resumewatch_terminal_events_total';
export const METRIC_RESUME_ATTEMPTS_TOTAL = 'resumewatch_resume_attempts_total';
export const METRIC_SESSION_REATTACH_TOTAL = 'resumewatch_session_reattach_total';
export const METRIC_RECONNECT_STORMS_ACTIVE = 'resumewatch_reconnect_storms_active';
export const METRIC_RECONNECT_STORM_ATTEMPTS = 'resumewatch_reconnect_storm_attempts';
export const METRIC_SPANS_RECEIVED_TOTAL = 'resumewatch_spans_received_total';
export const METRIC_TRACKED_REQUESTS = 'resumewatch_tracked_requests';
export const METRIC_STATE_EVICTIONS_TOTAL = 'resumewatch_state_evictions_total';
export const METRIC_DETECTION_LAG_SECONDS = 'resumewatch_detection_lag_seconds';
export const METRIC_SERVER_DEFECTS_TOTAL = 'resumewatch_server_defects_total';
export const METRIC_RECONNECT_STORMS_ENDED_TOTAL = 'resumewatch_reconnect_storms_ended_total';
export const METRIC_FINDINGS_RETRACTED_TOTAL = 'resumewatch_findings_retracted_total';
export const METRIC_LISTENING_RESUMES_TOTAL = 'resumewatch_listening_resumes_total';
export const METRIC_FINDINGS_DROPPED_TOTAL = 'resumewatch_findings_dropped_total';
export const METRIC_REQUESTS_SHED_TOTAL = 'resumewatch_requests_shed_total';
export const METRIC_MCP_REQUESTS_TOTAL = 'resumewatch_mcp_requests_total';
export const METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL = 'resumewatch_mcp_negotiations_refused_total';
export const METRIC_EVIDENCE_BYTES = 'resumewatch_evidence_bytes';
export const METRIC_EVIDENCE_REQUESTS = 'resumewatch_evidence_requests';
export const METRIC_EVIDENCE_WINDOW_BYTES = 'resumewatch_evidence_window_bytes';
export const METRIC_PAGE_RENDERS_TOTAL = 'resumewatch_page_renders_total';
export const METRIC_TASKS_CREATED_TOTAL = 'resumewatch_tasks_created_total';
export const METRIC_TASK_POLLS_TOTAL = 'resumewatch_task_polls_total';
export const METRIC_LIVE_TASKS = 'resumewatch_live_tasks';
export const METRIC_TASK_EVICTIONS_TOTAL = 'resumewatch_task_evictions_total';
export const METRIC_SESSIONS_STARTED_TOTAL = 'resumewatch_sessions_started_total';
/**
 * The OpenTelemetry MCP conventions' `mcp.server.operation.duration` (semantic-conventions-genai,
 * model/mcp/metrics.yaml: a histogram in seconds), by its Prometheus name.
 */
export const MCP_SERVER_OPERATION_DURATION = 'mcp.server.operation.duration';
export const METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS = 'mcp_server_operation_duration_seconds';
export const METRIC_RESUME_OUTCOMES_CORRECTED_TOTAL = 'resumewatch_resume_outcomes_corrected_total';

export const METRIC_GATEWAY_EXCHANGES_TOTAL = 'resumewatch_gateway_exchanges_total';
export const METRIC_GATEWAY_OPEN_EXCHANGES = 'resumewatch_gateway_open_exchanges';
export const METRIC_GATEWAY_REFUSALS_TOTAL = 'resumewatch_gateway_refusals_total';
export const METRIC_GATEWAY_GUARD_ACTIONS_TOTAL = 'resumewatch_gateway_guard_actions_total';
export const METRIC_GATEWAY_HELD_BYTES = 'resumewatch_gateway_held_bytes';
export const METRIC_GATEWAY_UNPARSED_TOTAL = 'resumewatch_gateway_unparsed_total';
export const METRIC_GATEWAY_LATE_UPSTREAM_ERRORS_TOTAL = 'resumewatch_gateway_late_upstream_errors_total';
export const METRIC_GATEWAY_OBSERVATION_FAILURES_TOTAL = 'resumewatch_gateway_observation_failures_total';
export const METRIC_GATEWAY_SSE_HEARTBEATS_TOTAL = 'resumewatch_gateway_sse_heartbeats_total';
export const METRIC_GATEWAY_UNACCEPTED_SESSIONS = 'resumewatch_gateway_unaccepted_sessions';
export const METRIC_GATEWAY_UNACCEPTED_SESSION_EVICTIONS_TOTAL =
  'resumewatch_gateway_unaccepted_session_evictions_total';
export const METRIC_GATEWAY_UNKEPT_IDS_TOTAL = 'resumewatch_gateway_unkept_ids_total';
export const METRIC_GATEWAY_TASK_HANDLES_REPEATED_TOTAL = 'resumewatch_gateway_task_handles_repeated_total';

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface MetricDescriptor {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly buckets?: readonly number[];
  /**
   * The OpenTelemetry semantic conventions' name of a metric they define; its Prometheus name is that
   * name as the OpenTelemetry → Prometheus mapping writes it, with its unit (`_seconds`).
   */
  readonly convention?: string;
}

export const METRICS: readonly MetricDescriptor[] = [
  {
    name: METRIC_FINDINGS_TOTAL,
    type: 'counter',
    help: 'Findings emitted by the detector, by kind and service. Carries trace_id exemplars under OpenMetrics.',
    labelNames: [LABEL_KIND, LABEL_SERVICE],
  },
  {
    name: METRIC_TERMINAL_EVENTS_TOTAL,
    type: 'counter',
    help: 'Terminal events (JSON-RPC results and errors) seen, by service and whether one had already been seen for the same session and request.',
    labelNames: [LABEL_SERVICE, LABEL_DUPLICATE],
  },
  {
    name: METRIC_RESUME_ATTEMPTS_TOTAL,
    type: 'counter',
    help: 'Requests carrying Last-Event-ID, by service and outcome.',
    labelNames: [LABEL_SERVICE, LABEL_OUTCOME],
  },
  {
    name: METRIC_SESSION_REATTACH_TOTAL,
    type: 'counter',
    help: 'Requests that presented an existing Mcp-Session-Id on a new stream, by service and whether the server accepted it.',
    labelNames: [LABEL_SERVICE, LABEL_ACCEPTED],
  },
  {
    name: METRIC_RECONNECT_STORMS_ACTIVE,
    type: 'gauge',
    help: 'Reconnect storms in progress, by service.',
    labelNames: [LABEL_SERVICE],
  },
  {
    name: METRIC_RECONNECT_STORM_ATTEMPTS,
    type: 'histogram',
    help: 'Reattach and resume attempts per ended reconnect storm, by service.',
    labelNames: [LABEL_SERVICE],
    buckets: [3, 5, 10, 20, 50, 100, 200, 500, 1000],
  },
  {
    name: METRIC_SPANS_RECEIVED_TOTAL,
    type: 'counter',
    help: 'Spans received by the detector, by result: accepted, duplicate (same span id again), invalid (malformed), ignored (not part of the contract or missing attributes).',
    labelNames: [LABEL_RESULT],
  },
  {
    name: METRIC_TRACKED_REQUESTS,
    type: 'gauge',
    help: 'Requests (service, session, request) whose state the detector currently holds.',
    labelNames: [],
  },
  {
    name: METRIC_STATE_EVICTIONS_TOTAL,
    type: 'counter',
    help: 'Request states evicted because the cap was reached (rather than released after retention).',
    labelNames: [],
  },
  {
    name: METRIC_DETECTION_LAG_SECONDS,
    type: 'histogram',
    help: 'Seconds from the end of the span that completed a finding to the emission of the finding.',
    labelNames: [],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  },
  {
    name: METRIC_SERVER_DEFECTS_TOTAL,
    type: 'counter',
    help: 'Terminal events that show a server defect (foreign_replay, conflicting_terminal), by kind and server.address (capped); counted with or without the guard.',
    labelNames: [LABEL_KIND, LABEL_SERVER],
  },
  {
    name: METRIC_RECONNECT_STORMS_ENDED_TOTAL,
    type: 'counter',
    help: 'Reconnect storms ended, by service and how: evicted, quiet, shutdown, dropped.',
    labelNames: [LABEL_SERVICE, LABEL_ENDED_BY],
  },
  {
    name: METRIC_FINDINGS_RETRACTED_TOTAL,
    type: 'counter',
    help: 'Findings retracted because a later span contradicted them (a failed resumption or a lost result by a continuation, a terminal or a re-issue; a lost task result by its outcome delivered), by kind and service.',
    labelNames: [LABEL_KIND, LABEL_SERVICE],
  },
  {
    name: METRIC_LISTENING_RESUMES_TOTAL,
    type: 'counter',
    help: "Resumes of a session's listening stream (no request state is kept for them), by service and outcome.",
    labelNames: [LABEL_SERVICE, LABEL_OUTCOME],
  },
  {
    name: METRIC_FINDINGS_DROPPED_TOTAL,
    type: 'counter',
    help: 'Findings not written to stdout because its reader did not keep up (they are still counted and kept for /findings).',
    labelNames: [],
  },
  {
    name: METRIC_MCP_REQUESTS_TOTAL,
    type: 'counter',
    help: 'MCP requests the server accepted in their protocol era (request spans with mcp.protocol.version answered 2xx, or with a JSON-RPC answer that does not refuse the version), by service and era: sessions (up to 2025-11-25, exposed to the replay loop) or stateless (2026-07-28 and later). A refused negotiation is not counted here.',
    labelNames: [LABEL_SERVICE, LABEL_ERA],
  },
  {
    name: METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL,
    type: 'counter',
    help: 'Protocol negotiations the server refused, by service and the version the client asked for (capped): a server/discover probe, an initialize or a 2026-07-28 request answered with a 4xx (not 401, 403, 407, 408, 429) or a JSON-RPC error (any, to server/discover and initialize; -32022 Unsupported protocol version, to any request).',
    labelNames: [LABEL_SERVICE, LABEL_VERSION],
  },
  {
    name: METRIC_REQUESTS_SHED_TOTAL,
    type: 'counter',
    help: 'Export requests answered 429 / RESOURCE_EXHAUSTED because the bytes in flight reached --max-inflight.',
    labelNames: [],
  },
  {
    name: METRIC_EVIDENCE_BYTES,
    type: 'gauge',
    help: 'Bytes of timeline evidence held for reported requests (the page draws their timelines from it); --evidence-bytes caps it.',
    labelNames: [],
  },
  {
    name: METRIC_EVIDENCE_REQUESTS,
    type: 'gauge',
    help: 'Reported requests whose timeline evidence is held.',
    labelNames: [],
  },
  {
    name: METRIC_EVIDENCE_WINDOW_BYTES,
    type: 'gauge',
    help: 'Bytes of recent contract spans held for requests without a finding yet, moved to the evidence when one fires; --evidence-window-bytes caps it.',
    labelNames: [],
  },
  {
    name: METRIC_RESUME_OUTCOMES_CORRECTED_TOTAL,
    type: 'counter',
    help: 'Resumes counted in resumewatch_resume_attempts_total under an outcome (continuation) that their request ending without its result showed untrue (each was a partial_replay: a lost_result), by service and the outcome they were counted under.',
    labelNames: [LABEL_SERVICE, LABEL_OUTCOME],
  },
  {
    name: METRIC_PAGE_RENDERS_TOTAL,
    type: 'counter',
    help: 'Renders of the page (/) and its data (/page.json) with the data of the moment; one render is reused by every request for a second.',
    labelNames: [],
  },
  {
    name: METRIC_TASKS_CREATED_TOTAL,
    type: 'counter',
    help: 'MCP tasks created (a call answered with a task handle: a span that carries mcp.task.id and is no tasks/* request), by service and shape: augmented (2025-11-25, the client asked) or extension (2026-07-28, the server decided).',
    labelNames: [LABEL_SERVICE, LABEL_SHAPE],
  },
  {
    name: METRIC_TASK_POLLS_TOTAL,
    type: 'counter',
    help: 'Polls of MCP tasks (tasks/get request spans), by service.',
    labelNames: [LABEL_SERVICE],
  },
  {
    name: METRIC_SESSIONS_STARTED_TOTAL,
    type: 'counter',
    help: 'MCP sessions started (an initialize request span answered with a session id, each id once; or a success, of a server without sessions), by service. A client that starts a session for every call shows here, and is no finding.',
    labelNames: [LABEL_SERVICE],
  },
  {
    name: METRIC_LIVE_TASKS,
    type: 'gauge',
    help: "Task records the detector holds now, by service; each service's are capped (--max-tasks, 10,000 by default), the oldest dropped and counted in resumewatch_task_evictions_total.",
    labelNames: [LABEL_SERVICE],
  },
  {
    name: METRIC_TASK_EVICTIONS_TOTAL,
    type: 'counter',
    help: 'Task records dropped because their service reached its cap before the task ended: their lost results and poll storms can no longer be told.',
    labelNames: [],
  },
  {
    name: METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS,
    convention: MCP_SERVER_OPERATION_DURATION,
    type: 'histogram',
    help: "Seconds from an MCP request's arrival to its result, as the server's side sees it (the server's request spans; the gateway's own, for the server behind it), by service and the conventions' attributes (tool names past --max-tools, and the other labels past their caps, are `other`). Carries trace_id exemplars under OpenMetrics.",
    labelNames: [
      LABEL_SERVICE,
      LABEL_MCP_METHOD_NAME,
      LABEL_GEN_AI_TOOL_NAME,
      LABEL_ERROR_TYPE,
      LABEL_MCP_PROTOCOL_VERSION,
      LABEL_RPC_RESPONSE_STATUS_CODE,
    ],
    // The conventions' advice (ExplicitBucketBoundaries of mcp.server.operation.duration).
    buckets: [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
  },
];

/** The metrics `resumewatch gateway` adds to the detector's, on the same /metrics. */
export const GATEWAY_METRICS: readonly MetricDescriptor[] = [
  {
    name: METRIC_GATEWAY_EXCHANGES_TOTAL,
    type: 'counter',
    help: 'HTTP exchanges through the gateway, by method and the status class of its answer (none: the connection broke first).',
    labelNames: [LABEL_METHOD, LABEL_STATUS_CLASS],
  },
  {
    name: METRIC_GATEWAY_OPEN_EXCHANGES,
    type: 'gauge',
    help: 'Exchanges open now (waiting for the upstream, or streaming a body); --max-streams caps them.',
    labelNames: [],
  },
  {
    name: METRIC_GATEWAY_REFUSALS_TOTAL,
    type: 'counter',
    help: 'Requests the gateway answered itself instead of forwarding, and streams it closed, by reason.',
    labelNames: [LABEL_REASON],
  },
  {
    name: METRIC_GATEWAY_GUARD_ACTIONS_TOTAL,
    type: 'counter',
    help: 'What the gateway enforced with --enforce (resume refused, duplicate terminal dropped, conflicting terminal reported, failed resumption reported), by action and by the proof of receipt it rests on (cursor, next_request; not_needed for a report).',
    labelNames: [LABEL_ACTION, LABEL_PROOF],
  },
  {
    name: METRIC_GATEWAY_HELD_BYTES,
    type: 'gauge',
    help: 'Bytes the gateway holds now to parse JSON bodies and SSE events, across exchanges; --max-held-bytes caps them.',
    labelNames: [],
  },
  {
    name: METRIC_GATEWAY_UNPARSED_TOTAL,
    type: 'counter',
    help: 'JSON bodies and SSE events passed to the client unparsed (over --max-json-body-bytes or --max-held-event-bytes, or past --max-held-bytes), request batches forwarded unobserved with their response (over --max-batch-messages), and bodies in a Content-Encoding the gateway could not read: not observed, and never filtered, by kind.',
    labelNames: [LABEL_KIND],
  },
  {
    name: METRIC_GATEWAY_LATE_UPSTREAM_ERRORS_TOTAL,
    type: 'counter',
    help: "Errors of an upstream exchange after its response was over or had already failed (the connection reset while the request's body was still being sent after the upstream answered, a second error of a broken body): nothing is left to answer, so they are only counted.",
    labelNames: [],
  },
  {
    name: METRIC_GATEWAY_SSE_HEARTBEATS_TOTAL,
    type: 'counter',
    help: 'SSE comment lines the gateway wrote (--sse-heartbeat) between events of a stream quiet that long, so that an idle timeout on the way does not cut it; a comment dispatches no event.',
    labelNames: [],
  },
  {
    name: METRIC_GATEWAY_OBSERVATION_FAILURES_TOTAL,
    type: 'counter',
    help: 'Bodies whose observation failed (a defect of the gateway, logged on stderr at most five times a minute): each stood aside, its bytes passed to the client as they came, unobserved and never filtered from there.',
    labelNames: [],
  },
  {
    name: METRIC_GATEWAY_UNACCEPTED_SESSIONS,
    type: 'gauge',
    help: 'Sessions clients named (Mcp-Session-Id) that the server has not accepted yet, held apart from the accepted ones, so that made-up ids never push a real session out.',
    labelNames: [],
  },
  {
    name: METRIC_GATEWAY_UNACCEPTED_SESSION_EVICTIONS_TOTAL,
    type: 'counter',
    help: 'Unaccepted sessions pushed out by the cap of their own map (many session ids the server never accepted: a client reattaching dead sessions, or a flood of made-up ids).',
    labelNames: [],
  },
  {
    name: METRIC_GATEWAY_UNKEPT_IDS_TOTAL,
    type: 'counter',
    help: 'Session ids (over 1 KiB) and Last-Event-ID cursors (over 256 bytes) too long to keep: forwarded unchanged, never taken as proof of receipt.',
    labelNames: [],
  },
  {
    name: METRIC_GATEWAY_TASK_HANDLES_REPEATED_TOTAL,
    type: 'counter',
    help: 'Task-augmented calls answered by the gateway with the handle of the live task an earlier call of the same client and idempotency key created (--enforce), instead of forwarding them: each is a second task the server did not create.',
    labelNames: [],
  },
];

/**
 * Names of the series each metric exposes (histograms expose _bucket, _sum and _count): of the
 * detector's metrics (`serve`), or of another list (the gateway serves METRICS and GATEWAY_METRICS).
 */
export function exportedSeriesNames(metrics: readonly MetricDescriptor[] = METRICS): string[] {
  return metrics.flatMap((m) =>
    m.type === 'histogram' ? [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`] : [m.name],
  );
}
