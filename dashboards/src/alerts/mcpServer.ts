// alerts/rules/mcp-server.yaml: the alerts on the MCP servers themselves, per service, from
// mcp_server_operation_duration_seconds (the OpenTelemetry MCP conventions' mcp.server.operation.duration):
// the gateways time the servers behind them, and serve the servers that export their own spans.
import {
  LABEL_ERROR_TYPE,
  LABEL_MCP_METHOD_NAME,
  LABEL_SERVICE,
  METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS,
} from '@resumewatch/semconv';
import { spelled } from '../config.js';
import type { MonitoringConfig } from '../config.js';
import type { RuleFile } from './model.js';
import { percentile, percentileName } from './recorded.js';

const OPERATIONS = METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS;

export function mcpServerRules(config: MonitoringConfig): RuleFile {
  const errors = config.alerts.McpServerErrorRatioHigh;
  const latency = config.alerts.McpServerLatencyHigh;
  return {
    file: 'mcp-server.yaml',
    header: `Alerts on the MCP servers, per \`service\`: their operations as mcp_server_operation_duration_seconds
times them (the conventions' mcp.server.operation.duration), from a gateway in front of a server (its
service.name, OTEL_SERVICE_NAME) or from the spans a server exports to \`resumewatch serve\`.`,
    groups: [
      {
        name: 'resumewatch.mcp_server',
        rules: [
          {
            comment: `An operation failed when it carries error_type: a JSON-RPC error of the server's, a tool result
with isError (tool_error), a timeout, a cancelled or broken stream. A request the caller got wrong
(an unknown method or tool, invalid params) has its rpc_response_status_code and no error_type.`,
            alert: 'McpServerErrorRatioHigh',
            expr: `(
  sum by (${LABEL_SERVICE}) (rate(${OPERATIONS}_count{${LABEL_ERROR_TYPE}!=""}[${errors.window}]))
/
  sum by (${LABEL_SERVICE}) (rate(${OPERATIONS}_count[${errors.window}]))
) > ${errors.threshold}
`,
            for: errors.for,
            severity: 'critical',
            summary: `MCP server {{ $labels.${LABEL_SERVICE} }} fails {{ $value | humanizePercentage }} of its requests`,
            description: `{{ $value | humanizePercentage }} of the MCP operations of {{ $labels.${LABEL_SERVICE} }} over the last
${spelled(errors.window)} ended in an error. Its error_type label says which: a JSON-RPC error code, tool_error,
timeout, cancelled, stream_broken.`,
          },
          {
            alert: 'McpServerLatencyHigh',
            expr: `histogram_quantile(${latency.quantile},
  sum by (${LABEL_SERVICE}, ${LABEL_MCP_METHOD_NAME}, le) (rate(${OPERATIONS}_bucket[${latency.window}]))
) > ${latency.threshold}
`,
            for: latency.for,
            severity: 'warning',
            summary: `MCP server {{ $labels.${LABEL_SERVICE} }} is slow on {{ $labels.${LABEL_MCP_METHOD_NAME} }} (${percentileName(latency.quantile)} {{ $value | humanizeDuration }})`,
            description: `The ${percentile(latency.quantile)} percentile of the {{ $labels.${LABEL_MCP_METHOD_NAME} }} operations of {{ $labels.${LABEL_SERVICE} }} took
{{ $value | humanizeDuration }} over the last ${spelled(latency.window)}, from the request's arrival to its result.`,
          },
        ],
      },
    ],
  };
}
