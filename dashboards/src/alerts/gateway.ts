// alerts/rules/gateway.yaml: the alerts on `resumewatch gateway`, per scraped replica.
import { GatewayRefusal, LABEL_REASON, METRIC_GATEWAY_REFUSALS_TOTAL } from '@resumewatch/semconv';
import { spelled } from '../config.js';
import type { MonitoringConfig } from '../config.js';
import type { RuleFile } from './model.js';

export function gatewayRules(config: MonitoringConfig): RuleFile {
  const failing = config.alerts.ResumewatchGatewayUpstreamFailing;
  const atLimit = config.alerts.ResumewatchGatewayAtStreamLimit;
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
        ],
      },
    ],
  };
}
