// Synthetic spans of the client loops (issue 39), for the end-to-end test of their alerts and panels
// (test/e2e-prometheus.test.ts). Each round writes, with the attributes of the contract, the spans an
// instrumented client (service LOOP_CLIENT) records for:
// - a session started (initialize answered with a session id), then deleted, then ten calls on the
//   dead session id, each answered 404 (dead_session_loop; resumewatch_sessions_started_total);
// - six GETs of the listening stream of another session, each answered 405 (listening_stream_loop).
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_SERVICE_NAME,
  MCP_METHOD_TOOLS_CALL,
  METHOD_INITIALIZE,
  SPAN_LISTENING_REFUSED,
  StreamKind,
  TRACER_SCOPE,
} from '@resumewatch/semconv';
import { otlpAttributes } from './traffic.js';

/** service.name of the synthetic client whose loops the alerts report. */
export const LOOP_CLIENT = 'e2e-loops';
const CLIENT = 3;

/** One round (OTLP/JSON) of the loop spans above, with sessions and traces of its own. */
export function loopSpansBody(round: number, nowMs = Date.now()): string {
  const dead = `e2e-dead-${round}`;
  const listening = `e2e-listening-${round}`;
  // Trace ids start with 7, span ids with f: apart from the other synthetic traffic's.
  const traceId = '7' + (round + 1).toString(16).padStart(31, '0');
  let n = 0;
  const span = (name: string, offsetMs: number, attrs: Record<string, string | number | boolean>) => ({
    traceId,
    spanId: 'f' + ((round * 64 + ++n) >>> 0).toString(16).padStart(15, '0'),
    name,
    kind: CLIENT,
    startTimeUnixNano: `${Math.round(nowMs + offsetMs)}000000`,
    endTimeUnixNano: `${Math.round(nowMs + offsetMs + 1)}000000`,
    attributes: otlpAttributes(attrs),
  });
  const spans = [
    span(METHOD_INITIALIZE, 0, {
      [ATTR_MCP_METHOD_NAME]: METHOD_INITIALIZE,
      [ATTR_JSONRPC_REQUEST_ID]: 0,
      [ATTR_MCP_SESSION_ID]: dead,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
    }),
  ];
  for (let i = 1; i <= 10; i++)
    spans.push(
      span(MCP_METHOD_TOOLS_CALL, 10 * i, {
        [ATTR_MCP_METHOD_NAME]: MCP_METHOD_TOOLS_CALL,
        [ATTR_JSONRPC_REQUEST_ID]: i,
        [ATTR_MCP_SESSION_ID]: dead,
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: 404,
        [ATTR_ERROR_TYPE]: '404',
      }),
    );
  for (let i = 0; i < 6; i++)
    spans.push(
      span(SPAN_LISTENING_REFUSED, 10 * i, {
        [ATTR_HTTP_REQUEST_METHOD]: 'GET',
        [ATTR_MCP_SESSION_ID]: listening,
        [ATTR_MCP_STREAM_KIND]: StreamKind.LISTENING,
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: 405,
        [ATTR_ERROR_TYPE]: '405',
      }),
    );
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: otlpAttributes({ [ATTR_SERVICE_NAME]: LOOP_CLIENT }) },
        scopeSpans: [{ scope: { name: TRACER_SCOPE }, spans }],
      },
    ],
  });
}
