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
  ATTR_MCP_TASK_REQUESTED,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  ErrorType,
  FindingKind,
  SPAN_TASK_STATUS,
  TaskGone,
  TaskMethod,
  TaskShape,
  TaskStatus,
} from '@resumewatch/semconv';
import type { AttributeValue, Finding, SpanRecord } from '@resumewatch/detector';

// Task spans as the instrumentation's contract (docs: the tasks design) has them, made by hand: the page
// draws from spans and a finding, whatever the detector's task rules are.

export const TASK_T0 = 1_800_000_000_000;
const SERVICE = 'task-client';
let counter = 0x7a000;

export interface TaskSpanOpts {
  service?: string;
  /** Absent: a span without a session (2026-07-28), kept by its trace as well. */
  session?: string;
  trace?: string;
  /** How long the span lasts (ms). */
  duration?: number;
}

function taskTrace(n: number): string {
  return n.toString(16).padStart(32, 'c');
}

/** One span of a task: the call that created it, a tasks/* request, or its status notification. */
function taskSpan(
  name: string,
  t: number,
  attributes: Record<string, AttributeValue>,
  o: TaskSpanOpts = {},
): SpanRecord {
  counter++;
  const attrs: Record<string, AttributeValue> = { ...attributes };
  if (o.session !== undefined) attrs[ATTR_MCP_SESSION_ID] = o.session;
  return {
    traceId: o.trace ?? taskTrace(counter),
    spanId: counter.toString(16).padStart(16, '0'),
    name,
    kind: 3,
    startTimeUnixMs: t,
    endTimeUnixMs: t + (o.duration ?? 10),
    attributes: attrs,
    service: o.service ?? SERVICE,
  };
}

/** The tools/call answered with a handle: the task's creation. */
export function created(
  task: string,
  t: number,
  o: TaskSpanOpts & { request?: number; ttl?: number; pollInterval?: number } = {},
): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_METHOD_NAME]: 'tools/call',
    [ATTR_JSONRPC_REQUEST_ID]: o.request ?? 1,
    [ATTR_MCP_TASK_ID]: task,
    [ATTR_MCP_TASK_STATUS]: TaskStatus.WORKING,
    [ATTR_MCP_TASK_SHAPE]: TaskShape.AUGMENTED,
    [ATTR_MCP_TASK_REQUESTED]: true,
  };
  if (o.ttl !== undefined) attrs[ATTR_MCP_TASK_TTL_MS] = o.ttl;
  if (o.pollInterval !== undefined) attrs[ATTR_MCP_TASK_POLL_INTERVAL_MS] = o.pollInterval;
  return taskSpan('tools/call', t, attrs, { duration: 20, ...o });
}

/** A tasks/get: its answer's status, or the server's word that the task is gone. */
export function poll(
  task: string,
  t: number,
  request: number,
  answer: { status?: string; gone?: string; delivered?: boolean },
  o: TaskSpanOpts = {},
): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_METHOD_NAME]: TaskMethod.GET,
    [ATTR_JSONRPC_REQUEST_ID]: request,
    [ATTR_MCP_TASK_ID]: task,
  };
  if (answer.status !== undefined) attrs[ATTR_MCP_TASK_STATUS] = answer.status;
  if (answer.gone !== undefined) attrs[ATTR_MCP_TASK_GONE] = answer.gone;
  if (answer.delivered) attrs[ATTR_MCP_TASK_OUTCOME_DELIVERED] = true;
  return taskSpan(TaskMethod.GET, t, attrs, { duration: 4, ...o });
}

/** A status notification seen on a stream (SPAN_TASK_STATUS). */
export function statusNotification(task: string, t: number, status: string, o: TaskSpanOpts = {}): SpanRecord {
  return taskSpan(
    SPAN_TASK_STATUS,
    t,
    { [ATTR_MCP_TASK_ID]: task, [ATTR_MCP_TASK_STATUS]: status },
    { duration: 0, ...o },
  );
}

/** A finding of a task kind, as the detector's task rules make one (task_id; a duplicate's duplicate_task_id). */
function taskFinding(
  kind: FindingKind,
  task: string,
  spans: readonly SpanRecord[],
  extra: Partial<Finding> = {},
): Finding {
  const first = spans[0]!;
  const last = spans[spans.length - 1]!;
  const session = first.attributes[ATTR_MCP_SESSION_ID];
  return {
    kind,
    service: first.service,
    session_id: typeof session === 'string' ? session : '',
    request_id: String(first.attributes[ATTR_JSONRPC_REQUEST_ID] ?? ''),
    trace_id: first.traceId,
    first_time_unix_ms: first.endTimeUnixMs,
    last_time_unix_ms: last.endTimeUnixMs,
    span_ids: [first.spanId, last.spanId],
    task_id: task,
    ...extra,
  };
}

/**
 * A lost task result, the issue's second case: a task created with a ttl of 2 s and a poll interval of
 * 500 ms, polled twice while working, a status notification that it completed, a poll that sees it
 * completed, then, after its ttl, a poll answered "not found". Drawn: one creation, four poll ticks, one
 * change of status (working to completed), one gone answer, the ttl's end.
 */
export function lostResult(session = 's-task'): { spans: SpanRecord[]; finding: Finding } {
  const task = 'task-lost-1';
  const o = { session };
  const spans = [
    created(task, TASK_T0, { ...o, ttl: 2000, pollInterval: 500 }),
    poll(task, TASK_T0 + 500, 2, { status: TaskStatus.WORKING }, o),
    poll(task, TASK_T0 + 1000, 3, { status: TaskStatus.WORKING }, o),
    statusNotification(task, TASK_T0 + 1200, TaskStatus.COMPLETED, o),
    poll(task, TASK_T0 + 1500, 4, { status: TaskStatus.COMPLETED }, o),
    poll(task, TASK_T0 + 2600, 5, { gone: TaskGone.NOT_FOUND }, o),
  ];
  return { spans, finding: taskFinding(FindingKind.LOST_TASK_RESULT, task, spans) };
}

/** A poll storm: `polls` tasks/get every 10 ms against an announced interval of 500 ms (ttl 5 min). */
export function pollStorm(polls: number, session = 's-storm'): { spans: SpanRecord[]; finding: Finding } {
  const task = 'task-storm-1';
  const o = { session };
  const spans = [created(task, TASK_T0, { ...o, ttl: 300_000, pollInterval: 500 })];
  for (let i = 0; i < polls; i++)
    spans.push(poll(task, TASK_T0 + 100 + i * 10, i + 2, { status: TaskStatus.WORKING }, o));
  return { spans, finding: taskFinding(FindingKind.TASK_POLL_STORM, task, spans) };
}

/**
 * A duplicate task, 2026-07-28 (no session: each attempt its trace): the first attempt's call created a
 * task (the gateway's span says so) but its client's stream broke before the handle; the re-issue, with
 * the same idempotency key or not, created a second one.
 */
export function duplicateTask(sameKey: boolean): { spans: SpanRecord[]; finding: Finding } {
  const [firstTrace, secondTrace] = [taskTrace(0xd1), taskTrace(0xd2)];
  const firstCall = taskSpan(
    'tools/call',
    TASK_T0,
    { [ATTR_MCP_METHOD_NAME]: 'tools/call', [ATTR_JSONRPC_REQUEST_ID]: 1, [ATTR_ERROR_TYPE]: ErrorType.STREAM_BROKEN },
    { trace: firstTrace, duration: 80 },
  );
  const reissue: Record<string, AttributeValue> = {
    [ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID]: firstTrace,
    [ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]: firstCall.spanId,
  };
  if (sameKey) reissue[ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY] = true;
  const spans = [
    firstCall,
    created('task-first', TASK_T0 + 10, { trace: firstTrace, ttl: 60_000, pollInterval: 500 }),
    { ...created('task-second', TASK_T0 + 300, { trace: secondTrace, ttl: 60_000, pollInterval: 500 }) },
    poll('task-second', TASK_T0 + 900, 2, { status: TaskStatus.WORKING }, { trace: taskTrace(0xd3) }),
  ];
  Object.assign(spans[2]!.attributes, reissue);
  const finding = taskFinding(
    sameKey ? FindingKind.DUPLICATE_TASK : FindingKind.POSSIBLE_DUPLICATE_TASK,
    'task-first',
    spans.slice(1, 3),
    { duplicate_task_id: 'task-second', first_trace_id: firstTrace, trace_id: secondTrace },
  );
  return { spans, finding };
}
