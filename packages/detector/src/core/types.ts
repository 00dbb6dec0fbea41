import type {
  FindingKind,
  FindingRecord,
  ProtocolEra,
  RequestRecovery,
  ResumeOutcome,
  SpanReceivedResult,
  StormEnd,
  TaskShape,
} from '@resumewatch/semconv';
import type { Operation } from './operations.js';

/** OTLP span kind numbering: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
export type SpanKindCode = 0 | 1 | 2 | 3 | 4 | 5;
/** OTLP's span kinds the rules read. */
export const SPAN_KIND_SERVER: SpanKindCode = 2;
export const SPAN_KIND_CLIENT: SpanKindCode = 3;

export type AttributeValue = string | number | boolean;

/** One finished span, as every door hands it to the core. Ids are lowercase hex; times are Unix milliseconds (fractional). */
export interface SpanRecord {
  traceId: string;
  spanId: string;
  parentSpanId?: string | undefined;
  name: string;
  kind: SpanKindCode;
  startTimeUnixMs: number;
  endTimeUnixMs: number;
  /**
   * The span's attributes by key, as plain data (every key enumerable). Their shape matters to the
   * core's speed: on `{}` records built key by key V8's lookups are megamorphic and slowest for a
   * missing key, so the core finds a span's rarely present attributes in one pass over its keys
   * (marks.ts) and reads only those; a null-prototype record (Object.create(null), a dictionary in V8) answers any
   * lookup in one probe and is read directly. docs/benchmarks.md measures both shapes.
   */
  attributes: Readonly<Record<string, AttributeValue | undefined>>;
  /** The resource's service.name. */
  service: string;
}

/**
 * What the OTLP/protobuf decoder hands each span to: its record, and its span id's 8 bytes as two
 * big-endian 32-bit words at [0] and [1], for Detector.ingest's `spanIdWords`. The array is the
 * decoder's, filled again for the next span: read it during the call. A sink of one parameter ignores
 * it. (The JSON decoder hands the record alone: reading the words off the body's 16 hex digits cost it
 * as much as the core's parse of the text, about 240 instructions a word either way.)
 */
export type SpanSink = (span: SpanRecord, spanIdWords: Uint32Array) => void;

/**
 * One line of the findings stream. A finding has no `record`; a line with `record` is about an earlier
 * finding of its `kind` for the same (service, session, request): `storm_ended` (how a reported storm
 * ended) or `retraction` (a failed-resumption finding contradicted by a later span).
 */
export interface Finding {
  kind: FindingKind;
  record?: FindingRecord;
  service: string;
  session_id: string;
  request_id: string;
  trace_id: string;
  /** Event time (Unix ms) of the earliest and latest evidence. */
  first_time_unix_ms: number;
  last_time_unix_ms: number;
  /** Spans the finding rests on, earliest evidence first. */
  span_ids: string[];
  /** duplicate_terminal, signature: terminal deliveries beyond the first (at emission). */
  duplicates?: number;
  /** reconnect_storm and signature (at emission), storm_ended (whole storm): distinct reattach/resume attempts. */
  attempts?: number;
  /** storm_ended: how the storm ended. */
  ended_by?: StormEnd;
  /** storm_ended: the storm ended with an empty replay, a rejected cursor or a lost session (`ended_by` = evicted). */
  ended_by_eviction?: boolean;
  /** foreign_replay, conflicting_terminal: the server blamed (its ATTR_SERVER_ADDRESS, `unknown_server` when absent). */
  server?: string;
  /** foreign_replay, conflicting_terminal: the stream that carried the defective terminal. */
  stream_id?: string;
  /** conflicting_terminal (and foreign_replay when known): the stream whose terminal reached the application first. */
  first_stream_id?: string;
  /**
   * duplicate_execution, possible_duplicate_execution: the trace of the first attempt the request
   * re-issued (`trace_id` is the re-issue's).
   */
  first_trace_id?: string;
  /**
   * ambiguous_empty_replay, cursor_lost: how the resume was answered. lost_result: the outcome of the
   * request's last resume, when it was resumed; outcome_corrected: the outcome the resume really had.
   */
  outcome?: ResumeOutcome;
  status_code?: number;
  /**
   * listening_stream_loop of a stream that names no session (a stateless server's; `session_id` empty):
   * the client whose re-opens they were, its client.address (gateway) or mcp.client.instance_id.
   */
  client?: string;
  /** lost_result: what the client did about the stream that ended without the result. */
  recovery?: RequestRecovery;
  /** lost_result: how the request ended without its result (its error type: timeout, aborted, stream_broken). */
  request_end?: string;
  /**
   * The task findings (duplicate_task, possible_duplicate_task, lost_task_result, task_poll_storm): the task
   * concerned (its ATTR_MCP_TASK_ID); of a duplicate, the first attempt's task. Their `session_id` and `request_id`
   * are the creating call's (the re-issue's, for a duplicate).
   */
  task_id?: string;
  /** lost_task_result: TaskLostReason (`gone`, `ttl_passed`); task_poll_storm: TaskStormReason. */
  reason?: string;
  /** duplicate_task, possible_duplicate_task: the second task's id, when a span showed it. */
  duplicate_task_id?: string;
  /** task_poll_storm: the early polls of the window (faster_than_interval), or the polls after gone. */
  polls?: number;
}

/** Per-span observations for the metrics door; label values are already bounded by the core. */
export interface DetectorEvents {
  span(result: SpanReceivedResult): void;
  terminal(service: string, duplicate: boolean): void;
  resume(service: string, outcome: ResumeOutcome): void;
  reattach(service: string, accepted: boolean): void;
  /** A reported storm ended (after the settle delay): counts its attempts and how it ended. */
  stormFinalized(service: string, attempts: number, endedBy: StormEnd): void;
  /** A terminal span that shows a server defect (every occurrence, guard or not). */
  serverDefect(kind: FindingKind, server: string): void;
  /** A resume of the session's listening stream: counted, no request state. */
  listeningResume(service: string, outcome: ResumeOutcome): void;
  /** A request span the server accepted in the era its protocol version says (eraAnswer of @resumewatch/semconv). */
  request(service: string, era: ProtocolEra): void;
  /**
   * A request span whose protocol version the server refused (a `server/discover` probe or an `initialize`
   * answered 4xx or with a JSON-RPC error, ...): `version` is the one asked, shaped YYYY-MM-DD, not capped.
   */
  negotiationRefused(service: string, version: string): void;
  /**
   * Every request span (one that carries its MCP method name), whatever its kind, as it arrives: one MCP
   * operation, from its start to its end (operations.ts; the object is the core's, reused). The metrics
   * door times the server's operations with it (mcp.server.operation.duration); a door without them
   * leaves it out.
   */
  operation?(op: Operation): void;
  /** A task was created (a call answered with a task handle), by its shape (TaskShape of @resumewatch/semconv). */
  taskCreated?(service: string, shape: TaskShape): void;
  /** A `tasks/get` of a task: one poll. */
  taskPolled?(service: string): void;
  /** An `initialize` answered with a session id (or a success, of a server without sessions): one session started. */
  sessionStarted?(service: string): void;
}

export interface DetectorStats {
  tracked: number;
  evictions: number;
  released: number;
  activeStorms: number;
  /**
   * First attempts of the 2026-07-28 era tracked: re-issued, or whose fate a server told, or whose stream
   * broke (a lost_result its re-issue may retract).
   */
  reissues: number;
  /** Live tasks tracked (core/tasks.ts), across services; each is one bounded record. */
  tasks: number;
  /** Task records dropped by the per-service cap before their task ended (oldest first). */
  taskEvictions: number;
  /** Loop records held (core/loops.ts): sessions refused, listening streams refused or closed at once. */
  loops: number;
  spans: Record<SpanReceivedResult, number>;
}
