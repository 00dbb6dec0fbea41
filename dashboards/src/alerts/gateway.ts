// alerts/rules/gateway.yaml: the alerts on `resumewatch gateway`, per scraped replica.
import { GatewayRefusal, LABEL_REASON, METRIC_GATEWAY_REFUSALS_TOTAL } from '@resumewatch/semconv';
import type { MonitoringConfig } from '../config.js';
import type { RuleFile } from './model.js';

export const gatewayRules = (config: MonitoringConfig): RuleFile => ({
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
  rate(${METRIC_GATEWAY_REFUSALS_TOTAL}{${LABEL_REASON}=~"${GatewayRefusal.UPSTREAM_UNREACHABLE}|${GatewayRefusal.UPSTREAM_TIMEOUT}"}[5m])
) > 0
`,
          for: '5m',
          severity: 'critical',
          summary: `resumewatch gateway {{ $labels.instance }} cannot reach its MCP server`,
          description: `{{ $labels.instance }} answered {{ $value | humanize }} requests per second itself with 502 or 504
over 5 minutes: its upstream MCP server refuses connections, resets them or does not answer in time.
Every client behind this gateway is failing.`,
        },
        {
          alert: 'ResumewatchGatewayAtStreamLimit',
          expr: `sum by (job, instance) (
  increase(${METRIC_GATEWAY_REFUSALS_TOTAL}{${LABEL_REASON}="${GatewayRefusal.TOO_MANY_STREAMS}"}[10m])
) > 0
`,
          for: '5m',
          severity: 'warning',
          summary: `resumewatch gateway {{ $labels.instance }} turns clients away at --max-streams`,
          description: `{{ $labels.instance }} answered {{ $value | printf "%.0f" }} requests with 503 in the last 10 minutes
because --max-streams exchanges were open. Clients retry, but their requests wait.`,
        },
      ],
    },
  ],
});
