// PromQL of the MCP server dashboard: mcp_server_operation_duration_seconds, the OpenTelemetry MCP
// conventions' mcp.server.operation.duration, by method and by tool.
import {
  LABEL_ERROR_TYPE,
  LABEL_GEN_AI_TOOL_NAME,
  LABEL_MCP_METHOD_NAME,
  LABEL_SERVICE,
  MCP_METHOD_TOOLS_CALL,
  METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS,
} from '@resumewatch/semconv';
import { VAR_SERVICE, quantile, rate } from './queries.js';

const OPERATIONS = METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS;
/** One series per operation: the histogram's count. */
const COUNT = `${OPERATIONS}_count`;
const service = `${LABEL_SERVICE}=~"$${VAR_SERVICE}"`;
/** An operation that failed carries error_type (the conventions: if and only if it fails). */
const failed = `${LABEL_ERROR_TYPE}!=""`;
const toolCalls = `${service}, ${LABEL_MCP_METHOD_NAME}="${MCP_METHOD_TOOLS_CALL}"`;

export function mcpServerQueries() {
  return {
    requestsByMethod: `sum by (${LABEL_MCP_METHOD_NAME}) (${rate(COUNT, service)})`,
    errorsByMethod: `sum by (${LABEL_MCP_METHOD_NAME}, ${LABEL_ERROR_TYPE}) (${rate(COUNT, `${service}, ${failed}`)})`,
    // The ratio McpServerErrorRatioHigh alerts on, per service.
    errorRatioByService:
      `sum by (${LABEL_SERVICE}) (${rate(COUNT, `${service}, ${failed}`)})` +
      ` / sum by (${LABEL_SERVICE}) (${rate(COUNT, service)})`,
    latencyP50ByMethod: quantile(0.5, OPERATIONS, service, [LABEL_MCP_METHOD_NAME]),
    latencyP99ByMethod: quantile(0.99, OPERATIONS, service, [LABEL_MCP_METHOD_NAME]),
    toolCallsByTool: `sum by (${LABEL_GEN_AI_TOOL_NAME}) (${rate(COUNT, toolCalls)})`,
    toolErrorsByTool: `sum by (${LABEL_GEN_AI_TOOL_NAME}, ${LABEL_ERROR_TYPE}) (${rate(COUNT, `${toolCalls}, ${failed}`)})`,
    toolLatencyP99ByTool: quantile(0.99, OPERATIONS, toolCalls, [LABEL_GEN_AI_TOOL_NAME]),
  };
}
