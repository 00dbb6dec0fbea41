// alerts/rules/gateway.yaml: the alerts on `resumewatch gateway`, per scraped replica.
import { GatewayRefusal, LABEL_REASON, METRIC_GATEWAY_REFUSALS_TOTAL } from '@resumewatch/semconv';
import { spelled } from '../config.js';
import type { MonitoringConfig } from '../config.js';
import type { RuleFile } from './model.js';

export function gatewayRules(config: MonitoringConfig): RuleFile {
  const failing = config.alerts.ResumewatchGatewayUpstreamFailing;
  const atLimit = config.alerts.ResumewatchGatewayAtStreamLimit;
  const atConnections = config.alerts.ResumewatchGatewayAtConnectionLimit;
  const internal = config.alerts.ResumewatchGatewayInternalError;
  const timeouts = config.alerts.ResumewatchGatewayClientTimeouts;
  return {
    file: 'gateway.yaml',
    header: `Alerts on \`resumewatch gateway\` replicas, the reverse proxies in front of MCP servers. They serve the
detector's metrics too, so scrape them with ${config.detectorSelector} (\`detectorSelector\` of
dashboards/src/config.ts) and the detector's alerts apply to them as well.`,
    groups: [
      {
        name: 'resumewatch.gateway',
        rules: [
          {
            alert: 'ResumewatchGatewayUpstreamFailing',
            expr: `sum by (job, instance) (
  rate(${METRIC_GATEWAY_REFUSALS_TOTAL}{${LABEL_REASON}=~"${GatewayRefusal.UPSTREAM_UNREACHABLE}|${GatewayRefusal.UPSTREAM_TIMEOUT}"}[${config.rateWindow}])
) > ${failing.threshold}
`,
            for: failing.for,
            severity: 'critical',
            summary: `resumewatch gateway {{ $labels.instance }} cannot reach its MCP server`,
            description: `{{ $labels.instance }} answered {{ $value | humanize }} requests per second itself with 502 or 504
over ${spelled(config.rateWindow)}: its upstream MCP server refuses connections, resets them or does not answer in time.
Every client behind this gateway is failing.`,
          },
          {
            alert: 'ResumewatchGatewayAtStreamLimit',
            expr: `sum by (job, instance) (
  increase(${METRIC_GATEWAY_REFUSALS_TOTAL}{${LABEL_REASON}="${GatewayRefusal.TOO_MANY_STREAMS}"}[${atLimit.window}])
) > ${atLimit.threshold}
`,
            for: atLimit.for,
            severity: 'warning',
            summary: `resumewatch gateway {{ $labels.instance }} turns clients away at --max-streams`,
            description: `{{ $labels.instance }} answered {{ $value | printf "%.0f" }} requests with 503 in the last ${spelled(atLimit.window)}
because --max-streams exchanges were open. Clients retry, but their requests wait.`,
          },
          {
            alert: 'ResumewatchGatewayAtConnectionLimit',
            expr: `sum by (job, instance) (
  increase(${METRIC_GATEWAY_REFUSALS_TOTAL}{${LABEL_REASON}="${GatewayRefusal.TOO_MANY_CONNECTIONS}"}[${atConnections.window}])
) > ${atConnections.threshold}
`,
            for: atConnections.for,
            severity: 'warning',
            summary: `resumewatch gateway {{ $labels.instance }} closes connections at --max-connections`,
            description: `{{ $labels.instance }} closed {{ $value | printf "%.0f" }} client connections unanswered in the last ${spelled(atConnections.window)}
because --max-connections were open. Those clients saw a reset, not an answer.`,
          },
          {
            alert: 'ResumewatchGatewayInternalError',
            expr: `sum by (job, instance) (
  increase(${METRIC_GATEWAY_REFUSALS_TOTAL}{${LABEL_REASON}="${GatewayRefusal.INTERNAL_ERROR}"}[${internal.window}])
) > ${internal.threshold}
`,
            for: internal.for,
            severity: 'warning',
            summary: `resumewatch gateway {{ $labels.instance }} failed exchanges itself (internal_error)`,
            description: `{{ $labels.instance }} answered {{ $value | printf "%.0f" }} exchanges with 502 internal_error in the last ${spelled(internal.window)}:
a defect of the gateway, each one a client's request that did not reach its answer. Its stderr has the first lines.`,
          },
          {
            alert: 'ResumewatchGatewayClientTimeouts',
            expr: `sum by (job, instance) (
  rate(${METRIC_GATEWAY_REFUSALS_TOTAL}{${LABEL_REASON}=~"${GatewayRefusal.HEADERS_TIMEOUT}|${GatewayRefusal.BODY_TIMEOUT}"}[${config.rateWindow}])
) > ${timeouts.threshold}
`,
            for: timeouts.for,
            severity: 'warning',
            summary: `resumewatch gateway {{ $labels.instance }} answers many requests with 408`,
            description: `{{ $labels.instance }} answered {{ $value | humanize }} requests per second with 408 over ${spelled(config.rateWindow)}:
clients did not send their request's headers within --header-timeout or its body within --body-timeout.`,
          },
        ],
      },
    ],
  };
}
