import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_TASK_GONE,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  SPAN_TASK_STATUS,
  TaskMethod,
  TaskShape,
  TaskStatus,
  type TaskGone,
} from '@resumewatch/semconv';
import type { AttributeValue, SpanRecord } from '../../src/index.js';

/*
 * Spans of a task's life as the instrumentation (client, kind 3), a server's instrumentation (kind 2) or
 * the gateway records them, with the attributes of the tasks design (docs: issue 38's design note).
 * Times are the span's start; each span lasts 5 ms unless `duration` says otherwise.
 */

let spans = 0;
let traces = 0;
function nextSpanId(): string {
  spans++;
  return (0x7a000000 + spans).toString(16).padStart(16, '0');
}
/** A fresh trace id: each call of a client is its own trace. */
export function newTrace(): string {
  traces++;
  return (0x7b000000 + traces).toString(16).padStart(32, '0');
}

export interface TaskSpanOpts {
  service?: string;
  kind?: SpanRecord['kind'];
  trace?: string;
  duration?: number;
  shape?: TaskShape;
  session?: string;
}

function taskSpan(name: string, t: number, attributes: Record<string, AttributeValue>, o: TaskSpanOpts): SpanRecord {
  const attrs: Record<string, AttributeValue> = { ...attributes };
  if (o.shape !== undefined) attrs[ATTR_MCP_TASK_SHAPE] = o.shape;
  if (o.session !== undefined) attrs[ATTR_MCP_SESSION_ID] = o.session;
  return {
    traceId: o.trace ?? newTrace(),
    spanId: nextSpanId(),
    name,
    kind: o.kind ?? 3,
    startTimeUnixMs: t,
    endTimeUnixMs: t + (o.duration ?? 5),
    attributes: attrs,
    service: o.service ?? 'app',
  };
}

export interface CallOpts extends TaskSpanOpts {
  /** Announced ttl (ms); null: unlimited (the attribute is absent). Default 60 s. */
  ttl?: number | null;
  /** Announced poll interval (ms); null: not said. Default 500. */
  interval?: number | null;
  status?: string;
  request?: number;
}

/** A tools/call answered with a task handle: the span that creates the task. */
export function createTask(t: number, taskId: string, o: CallOpts = {}): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_METHOD_NAME]: 'tools/call',
    [ATTR_JSONRPC_REQUEST_ID]: o.request ?? 1,
    [ATTR_MCP_TASK_ID]: taskId,
    [ATTR_MCP_TASK_STATUS]: o.status ?? TaskStatus.WORKING,
  };
  const ttl = o.ttl === undefined ? 60_000 : o.ttl;
  if (ttl !== null) attrs[ATTR_MCP_TASK_TTL_MS] = ttl;
  const interval = o.interval === undefined ? 500 : o.interval;
  if (interval !== null) attrs[ATTR_MCP_TASK_POLL_INTERVAL_MS] = interval;
  return taskSpan(`tools/call research`, t, attrs, { shape: TaskShape.AUGMENTED, ...o });
}

export interface GetOpts extends TaskSpanOpts {
  status?: string;
  gone?: TaskGone;
  /** 2026-07-28 tasks/get of a completed|failed task: the outcome inline. */
  delivered?: boolean;
  interval?: number;
}

/** A poll: tasks/get. */
export function getTask(t: number, taskId: string, o: GetOpts = {}): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_METHOD_NAME]: TaskMethod.GET,
    [ATTR_JSONRPC_REQUEST_ID]: 2,
    [ATTR_MCP_TASK_ID]: taskId,
  };
  if (o.status !== undefined) attrs[ATTR_MCP_TASK_STATUS] = o.status;
  if (o.gone !== undefined) attrs[ATTR_MCP_TASK_GONE] = o.gone;
  if (o.delivered !== undefined) attrs[ATTR_MCP_TASK_OUTCOME_DELIVERED] = o.delivered;
  if (o.interval !== undefined) attrs[ATTR_MCP_TASK_POLL_INTERVAL_MS] = o.interval;
  return taskSpan(TaskMethod.GET, t, attrs, o);
}

/** tasks/result (2025-11-25): the outcome delivered, or the task gone. */
export function taskResult(t: number, taskId: string, o: TaskSpanOpts & { gone?: TaskGone } = {}): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_METHOD_NAME]: TaskMethod.RESULT,
    [ATTR_JSONRPC_REQUEST_ID]: 3,
    [ATTR_MCP_TASK_ID]: taskId,
  };
  if (o.gone !== undefined) attrs[ATTR_MCP_TASK_GONE] = o.gone;
  else attrs[ATTR_MCP_TASK_OUTCOME_DELIVERED] = true;
  return taskSpan(TaskMethod.RESULT, t, attrs, o);
}

/** tasks/cancel, acknowledged (or refused: `refused`). */
export function cancelTask(t: number, taskId: string, o: TaskSpanOpts & { refused?: boolean } = {}): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_METHOD_NAME]: TaskMethod.CANCEL,
    [ATTR_JSONRPC_REQUEST_ID]: 4,
    [ATTR_MCP_TASK_ID]: taskId,
  };
  if (o.refused) attrs[ATTR_ERROR_TYPE] = '-32602';
  return taskSpan(TaskMethod.CANCEL, t, attrs, o);
}

/** A status notification seen on a stream: the mcp.task.status span (no method of its own). */
export function statusNotification(t: number, taskId: string, status: string, o: TaskSpanOpts = {}): SpanRecord {
  return taskSpan(
    SPAN_TASK_STATUS,
    t,
    { [ATTR_MCP_TASK_ID]: taskId, [ATTR_MCP_TASK_STATUS]: status },
    { kind: 1, ...o },
  );
}

export interface ReissueOpts extends TaskSpanOpts {
  sameKey?: boolean;
  /** The task id the re-issue's answer carried. */
  taskId?: string;
}

/** The client's re-issue of the call of `first` (its reply was never read). */
export function reissueCall(t: number, first: SpanRecord, o: ReissueOpts = {}): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_METHOD_NAME]: 'tools/call',
    [ATTR_JSONRPC_REQUEST_ID]: 9,
    [ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID]: first.traceId,
    [ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]: first.spanId,
  };
  if (o.sameKey !== undefined) attrs[ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY] = o.sameKey;
  if (o.taskId !== undefined) attrs[ATTR_MCP_TASK_ID] = o.taskId;
  return taskSpan('tools/call research', t, attrs, { kind: 3, ...o });
}
