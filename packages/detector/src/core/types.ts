import type { FindingKind, ResumeOutcome, SpanReceivedResult } from '@resumewatch/semconv';

/** OTLP span kind numbering: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
export type SpanKindCode = 0 | 1 | 2 | 3 | 4 | 5;

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
  attributes: Readonly<Record<string, AttributeValue | undefined>>;
  /** The resource's service.name. */
  service: string;
}

export interface Finding {
  kind: FindingKind;
  service: string;
  session_id: string;
  request_id: string;
  trace_id: string;
  /** Event time (Unix ms) of the earliest and latest evidence. */
  first_time_unix_ms: number;
  last_time_unix_ms: number;
  /** Spans the finding rests on, earliest evidence first. */
  span_ids: string[];
  /** duplicate_terminal, signature: terminal deliveries beyond the first. */
  duplicates?: number;
  /** reconnect_storm (at detection), signature (whole storm): distinct reattach/resume attempts. */
  attempts?: number;
  /** signature: the storm ended with an empty replay, a rejected cursor or a lost session. */
  ended_by_eviction?: boolean;
  /** ambiguous_empty_replay, cursor_lost: how the resume was answered. */
  outcome?: ResumeOutcome;
  status_code?: number;
}

/** Per-span observations for the metrics door; label values are already bounded by the core. */
export interface DetectorEvents {
  span(result: SpanReceivedResult): void;
  terminal(service: string, duplicate: boolean): void;
  resume(service: string, outcome: ResumeOutcome): void;
  reattach(service: string, accepted: boolean): void;
  stormStarted(service: string): void;
  stormEnded(service: string): void;
  stormFinalized(service: string, attempts: number): void;
}

export interface DetectorStats {
  tracked: number;
  evictions: number;
  released: number;
  activeStorms: number;
  spans: Record<SpanReceivedResult, number>;
}
