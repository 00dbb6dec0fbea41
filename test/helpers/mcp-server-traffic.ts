// Synthetic spans of an instrumented MCP server (kind SERVER, as instrumentMcpServer records them) for the
// end-to-end test of the MCP server dashboard and alerts (test/e2e-prometheus.test.ts): the lab servers
// of the traffic are not instrumented, and these spans need a failing tool and a slow one. Each round
// is one OTLP/JSON body of six operations: two quick echo calls, a JSON-RPC error of the server (-32603),
// an unknown tool (-32602: the caller's error, not the server's), a 30 s report and a tools/list. One in
// six fails (McpServerErrorRatioHigh) and the tail of tools/call is 30 s (McpServerLatencyHigh).
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_SERVICE_NAME,
  MCP_METHOD_TOOLS_CALL,
  TRACER_SCOPE,
  mcpRequestSpanName,
} from '@resumewatch/semconv';
import { otlpAttributes } from './traffic.js';

/** service.name of the synthetic MCP server. */
export const MCP_SERVER_SERVICE = 'e2e-mcp-server';

const SERVER_KIND = 2;

interface Operation {
  method: string;
  tool?: string;
  ms: number;
  /** A JSON-RPC error code the server answered with. */
  code?: string;
}

const ROUND: Operation[] = [
  { method: MCP_METHOD_TOOLS_CALL, tool: 'echo', ms: 20 },
  { method: MCP_METHOD_TOOLS_CALL, tool: 'echo', ms: 40 },
  { method: MCP_METHOD_TOOLS_CALL, tool: 'fail', ms: 5, code: '-32603' },
  { method: MCP_METHOD_TOOLS_CALL, tool: 'no_such_tool', ms: 2, code: '-32602' },
  { method: MCP_METHOD_TOOLS_CALL, tool: 'report', ms: 30_000 },
  { method: 'tools/list', ms: 3 },
];

export function mcpServerSpansBody(round: number, nowMs = Date.now()): string {
  const spans = ROUND.map((op, i) => {
    const n = round * ROUND.length + i + 1;
    const attrs: Record<string, string> = {
      [ATTR_MCP_METHOD_NAME]: op.method,
      [ATTR_JSONRPC_REQUEST_ID]: String(n),
      [ATTR_MCP_PROTOCOL_VERSION]: '2025-11-25',
    };
    if (op.tool) attrs[ATTR_GEN_AI_TOOL_NAME] = op.tool;
    // As the server instrumentation records a JSON-RPC error: its code as both.
    if (op.code) Object.assign(attrs, { [ATTR_ERROR_TYPE]: op.code, [ATTR_RPC_RESPONSE_STATUS_CODE]: op.code });
    return {
      traceId: n.toString(16).padStart(32, 'f'),
      spanId: n.toString(16).padStart(16, 'f'),
      name: mcpRequestSpanName(op.method, op.tool),
      kind: SERVER_KIND,
      startTimeUnixNano: `${Math.round(nowMs - op.ms)}000000`,
      endTimeUnixNano: `${Math.round(nowMs)}000000`,
      attributes: otlpAttributes(attrs),
    };
  });
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: otlpAttributes({ [ATTR_SERVICE_NAME]: MCP_SERVER_SERVICE }) },
        scopeSpans: [{ scope: { name: TRACER_SCOPE }, spans }],
      },
    ],
  });
}
