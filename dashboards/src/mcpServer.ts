// resumewatch — MCP server: rate, errors and latency of the MCP servers' operations, by method and by
// tool, from mcp_server_operation_duration_seconds (the OpenTelemetry MCP conventions' histogram).
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS } from '@resumewatch/semconv';
import { percentileName } from './alerts/recorded.js';
import type { MonitoringConfig } from './config.js';
import { mcpServerQueries } from './mcpServerQueries.js';
import { resumewatchDashboard, row, serviceVariable, series } from './panels.js';

const MCP_SERVER_UID = 'resumewatch-mcp-server';

export function mcpServerDashboard(config: MonitoringConfig): dashboard.Dashboard {
  const q = mcpServerQueries();
  const errors = config.alerts.McpServerErrorRatioHigh;
  const latency = config.alerts.McpServerLatencyHigh;
  const errorPercent = Number((errors.threshold * 100).toPrecision(12));
  return resumewatchDashboard({
    title: 'resumewatch — MCP server',
    uid: MCP_SERVER_UID,
    description:
      'Requests, errors and latency of MCP servers, by method and by tool, as a gateway in front of them (or their own ' +
      'spans sent to resumewatch serve) times them: the OpenTelemetry MCP conventions’ mcp.server.operation.duration.',
    tags: ['resumewatch', 'mcp'],
    runbooks: config.runbookBaseUrl,
    dashboardsLink: 'resumewatch',
  })
    .withVariable(
      serviceVariable(
        `${METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS}_count`,
        "service.name of the gateway in front of an MCP server, or of the server's own spans",
      ),
    )
    .withRow(row(100, 'By method'))
    .withPanel(
      series({
        id: 1,
        title: 'Requests by method',
        description: 'MCP operations per second, by mcp.method.name, each counted once when its result is sent.',
        unit: 'reqps',
        queries: [{ expr: q.requestsByMethod, legend: '{{mcp_method_name}}' }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 2,
        title: 'Errors by method and error type',
        description:
          'Failed operations per second: a JSON-RPC error code of the server, tool_error (a tool result with isError), ' +
          'timeout, cancelled, stream_broken. A request the caller got wrong (unknown method or tool, invalid params) is ' +
          'not an error of the server.',
        unit: 'reqps',
        queries: [{ expr: q.errorsByMethod, legend: '{{mcp_method_name}} {{error_type}}' }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 3,
        title: 'Error ratio by service',
        description: `Share of each service's operations that failed. The alert threshold is ${errorPercent}% (McpServerErrorRatioHigh).`,
        unit: 'percentunit',
        queries: [{ expr: q.errorRatioByService, legend: '{{service}}' }],
        at: { w: 8, h: 8 },
        max: 1,
      }),
    )
    .withPanel(
      series({
        id: 4,
        title: 'Latency p50 and p99 by method',
        description:
          `From a request's arrival to its result. McpServerLatencyHigh fires on the ${percentileName(latency.quantile)} of a ` +
          `service's method above ${latency.threshold} s. Exemplars link to the trace of a bucket's latest request.`,
        unit: 's',
        queries: [
          { expr: q.latencyP50ByMethod, legend: '{{mcp_method_name}} p50', exemplar: true },
          { expr: q.latencyP99ByMethod, legend: '{{mcp_method_name}} p99', exemplar: true },
        ],
        at: { w: 24, h: 8 },
      }),
    )
    .withRow(row(101, 'By tool (tools/call)'))
    .withPanel(
      series({
        id: 5,
        title: 'Tool calls by tool',
        description:
          'tools/call per second, by gen_ai.tool.name. Tool names past the detector’s --max-tools are counted as other.',
        unit: 'reqps',
        queries: [{ expr: q.toolCallsByTool, legend: '{{gen_ai_tool_name}}' }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 6,
        title: 'Tool errors by tool and error type',
        description: 'Failed tool calls per second, by tool and error_type (tool_error: a result with isError).',
        unit: 'reqps',
        queries: [{ expr: q.toolErrorsByTool, legend: '{{gen_ai_tool_name}} {{error_type}}' }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 7,
        title: 'Tool latency p99 by tool',
        description: "The slowest tools' tail. Exemplars link to the trace of a bucket's latest call.",
        unit: 's',
        queries: [{ expr: q.toolLatencyP99ByTool, legend: '{{gen_ai_tool_name}}', exemplar: true }],
        at: { w: 8, h: 8 },
      }),
    )
    .build();
}
