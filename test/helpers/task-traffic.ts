// Synthetic spans of MCP tasks, both shapes, for the end-to-end test of the task alerts and panels
// (test/e2e-prometheus.test.ts). The lab's task scenarios are not in this traffic; until they are, each
// round writes, with the attributes of the tasks contract (docs/architecture.md, packages/semconv), the
// spans an instrumented client (service TASK_CLIENT) and an instrumented server (TASK_SERVER) record for:
// - two healthy tasks, one of each shape, whose outcome is fetched within the ttl (no finding);
// - a task-augmented call whose reply was lost, re-issued with the same idempotency key while the
//   server's span shows the first attempt's task (duplicate_task), and one re-issued without a key
//   (possible_duplicate_task);
// - a task that completed, whose client asked for its result after it expired (lost_task_result);
// - a task polled every 10 ms against an announced interval of 1 s (task_poll_storm).
import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
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
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_SERVICE_NAME,
  ErrorType,
  MCP_METHOD_TOOLS_CALL,
  SPAN_TASK_STATUS,
  STATELESS_PROTOCOL_VERSION,
  TASK_NOT_FOUND_CODE,
  TRACER_SCOPE,
  TaskGone,
  TaskMethod,
  TaskShape,
  TaskStatus,
} from '@resumewatch/semconv';
import { otlpAttributes } from './traffic.js';

/** service.name of the synthetic task client, whose task findings the alerts report. */
export const TASK_CLIENT = 'e2e-tasks';
/** service.name of the synthetic MCP server whose span shows the first attempt's task of a re-issue. */
export const TASK_SERVER = 'e2e-tasks-server';

/** The revision of the augmented shape (SEP-1686); the extension's is STATELESS_PROTOCOL_VERSION. */
const AUGMENTED_VERSION = '2025-11-25';
const INTERNAL = 1;
const SERVER = 2;
const CLIENT = 3;

type Attrs = Record<string, string | number | boolean>;

/** One round (OTLP/JSON) of the task spans above, with task ids, traces and a session of its own. */
export function taskSpansBody(round: number, nowMs = Date.now()): string {
  const session = `e2e-tasks-${round}`;
  // Trace ids start with 1..6, span ids with e: apart from the other synthetic traffic's.
  const traceOf = (prefix: string) => prefix + (round + 1).toString(16).padStart(31, '0');
  let n = 0;
  const span = (traceId: string, name: string, kind: number, offsetMs: number, attrs: Attrs) => ({
    traceId,
    spanId: 'e' + ((round * 64 + ++n) >>> 0).toString(16).padStart(15, '0'),
    name,
    kind,
    startTimeUnixNano: `${Math.round(nowMs + offsetMs)}000000`,
    endTimeUnixNano: `${Math.round(nowMs + offsetMs + 1)}000000`,
    attributes: otlpAttributes(attrs),
  });
  let requestId = 0;
  // A request span: a call, or a tasks/* request, of one shape (the augmented one in the round's session).
  const request = (traceId: string, kind: number, offsetMs: number, method: string, shape: TaskShape, attrs: Attrs) =>
    span(traceId, method === MCP_METHOD_TOOLS_CALL ? `${method} research` : method, kind, offsetMs, {
      [ATTR_MCP_METHOD_NAME]: method,
      [ATTR_JSONRPC_REQUEST_ID]: ++requestId,
      ...(shape === TaskShape.AUGMENTED
        ? { [ATTR_MCP_SESSION_ID]: session, [ATTR_MCP_PROTOCOL_VERSION]: AUGMENTED_VERSION }
        : { [ATTR_MCP_PROTOCOL_VERSION]: STATELESS_PROTOCOL_VERSION }),
      ...attrs,
    });
  const taskId = (name: string) => `${name}-${round}`;
  /** The answer that is a task handle: its id, shape, status and what the server announced. */
  const handle = (id: string, shape: TaskShape, ttlMs: number, pollIntervalMs: number): Attrs => ({
    [ATTR_MCP_TASK_ID]: id,
    [ATTR_MCP_TASK_SHAPE]: shape,
    [ATTR_MCP_TASK_STATUS]: TaskStatus.WORKING,
    [ATTR_MCP_TASK_TTL_MS]: ttlMs,
    [ATTR_MCP_TASK_POLL_INTERVAL_MS]: pollIntervalMs,
    ...(shape === TaskShape.AUGMENTED ? { [ATTR_MCP_TASK_REQUESTED]: true } : {}),
  });
  const about = (id: string, shape: TaskShape, status?: TaskStatus): Attrs => ({
    [ATTR_MCP_TASK_ID]: id,
    [ATTR_MCP_TASK_SHAPE]: shape,
    ...(status ? { [ATTR_MCP_TASK_STATUS]: status } : {}),
  });
  const { AUGMENTED, EXTENSION } = TaskShape;
  const client: ReturnType<typeof span>[] = [];
  const server: ReturnType<typeof span>[] = [];

  // Healthy, augmented: created, polled once at its interval, its result fetched with tasks/result.
  const healthyA = taskId('healthy-augmented');
  client.push(
    request(traceOf('1'), CLIENT, 0, MCP_METHOD_TOOLS_CALL, AUGMENTED, handle(healthyA, AUGMENTED, 60_000, 100)),
    request(traceOf('1'), CLIENT, 150, TaskMethod.GET, AUGMENTED, about(healthyA, AUGMENTED, TaskStatus.COMPLETED)),
    request(traceOf('1'), CLIENT, 160, TaskMethod.RESULT, AUGMENTED, {
      ...about(healthyA, AUGMENTED, TaskStatus.COMPLETED),
      [ATTR_MCP_TASK_OUTCOME_DELIVERED]: true,
    }),
  );
  // Healthy, extension: the server decided; tasks/get polled at its interval, the result inline.
  const healthyE = taskId('healthy-extension');
  client.push(
    request(traceOf('2'), CLIENT, 0, MCP_METHOD_TOOLS_CALL, EXTENSION, handle(healthyE, EXTENSION, 60_000, 100)),
    request(traceOf('2'), CLIENT, 120, TaskMethod.GET, EXTENSION, about(healthyE, EXTENSION, TaskStatus.WORKING)),
    request(traceOf('2'), CLIENT, 240, TaskMethod.GET, EXTENSION, {
      ...about(healthyE, EXTENSION, TaskStatus.COMPLETED),
      [ATTR_MCP_TASK_OUTCOME_DELIVERED]: true,
    }),
  );

  // Re-issues of task-augmented calls whose reply the client never read (the stream broke before the
  // handle): the server's span of the first attempt shows its task. It does not say completed after
  // cancellation: the instrumentation says that of a 2026-07-28 request whose stream the client closed,
  // not of a session's call answered with a handle (the SDK 1.x server's span of the lab's lost reply,
  // packages/daemon/test/e2e-tasks.test.ts, has no such attribute). The tasks family reports the re-issue.
  const reissue = (firstTrace: string, secondTrace: string, name: string, sameKey: boolean) => {
    const first = request(firstTrace, CLIENT, 0, MCP_METHOD_TOOLS_CALL, AUGMENTED, {
      [ATTR_MCP_TASK_REQUESTED]: true,
      [ATTR_ERROR_TYPE]: ErrorType.STREAM_BROKEN,
    });
    client.push(first);
    server.push(
      request(
        firstTrace,
        SERVER,
        1,
        MCP_METHOD_TOOLS_CALL,
        AUGMENTED,
        handle(taskId(`${name}-first`), AUGMENTED, 60_000, 1000),
      ),
    );
    client.push(
      request(secondTrace, CLIENT, 20, MCP_METHOD_TOOLS_CALL, AUGMENTED, {
        ...handle(taskId(`${name}-second`), AUGMENTED, 60_000, 1000),
        [ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID]: first.traceId,
        [ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]: first.spanId,
        ...(sameKey ? { [ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY]: true } : {}),
      }),
    );
  };
  reissue(traceOf('3'), traceOf('4'), 'duplicate', true);
  reissue(traceOf('5'), traceOf('6'), 'possible-duplicate', false);

  // Lost: a 50 ms ttl; the server's status notification says completed; the client asks for the result
  // after it expired (-32602, "Task has expired").
  const lost = taskId('lost');
  client.push(
    request(traceOf('7'), CLIENT, 0, MCP_METHOD_TOOLS_CALL, AUGMENTED, handle(lost, AUGMENTED, 50, 10)),
    span(traceOf('7'), SPAN_TASK_STATUS, INTERNAL, 20, {
      [ATTR_MCP_SESSION_ID]: session,
      ...about(lost, AUGMENTED, TaskStatus.COMPLETED),
    }),
    request(traceOf('7'), CLIENT, 200, TaskMethod.RESULT, AUGMENTED, {
      ...about(lost, AUGMENTED),
      [ATTR_RPC_RESPONSE_STATUS_CODE]: String(TASK_NOT_FOUND_CODE),
      [ATTR_ERROR_TYPE]: String(TASK_NOT_FOUND_CODE),
      [ATTR_MCP_TASK_GONE]: TaskGone.EXPIRED,
    }),
  );

  // A poll storm: the extension's tasks/get every 10 ms against an interval of 1 s, 15 times.
  const stormed = taskId('storm');
  client.push(
    request(traceOf('8'), CLIENT, 0, MCP_METHOD_TOOLS_CALL, EXTENSION, handle(stormed, EXTENSION, 60_000, 1000)),
  );
  for (let i = 1; i <= 15; i++)
    client.push(
      request(traceOf('8'), CLIENT, 10 * i, TaskMethod.GET, EXTENSION, about(stormed, EXTENSION, TaskStatus.WORKING)),
    );

  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: otlpAttributes({ [ATTR_SERVICE_NAME]: TASK_CLIENT }) },
        scopeSpans: [{ scope: { name: TRACER_SCOPE }, spans: client }],
      },
      {
        resource: { attributes: otlpAttributes({ [ATTR_SERVICE_NAME]: TASK_SERVER }) },
        scopeSpans: [{ scope: { name: TRACER_SCOPE }, spans: server }],
      },
    ],
  });
}
