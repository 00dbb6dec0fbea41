// resumewatch — detector health: are the detectors scraped, fed, and within their caps.
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { percentileName } from './alerts/recorded.js';
import type { MonitoringConfig } from './config.js';
import { resumewatchDashboard, instanceVariable, row, serviceVariable, series, single } from './panels.js';
import { detectorQueries } from './queries.js';

const DETECTOR_HEALTH_UID = 'resumewatch-detector-health';

export function detectorHealthDashboard(config: MonitoringConfig): dashboard.Dashboard {
  const q = detectorQueries(config);
  const lag = config.alerts.ResumewatchDetectionLagHigh;
  const invalidPercent = Number((config.alerts.ResumewatchDetectorRejectingSpans.threshold * 100).toPrecision(12));
  return resumewatchDashboard({
    title: 'resumewatch — detector health',
    uid: DETECTOR_HEALTH_UID,
    description: 'The detector replicas (resumewatch serve): scrape health, spans received, state held and evicted.',
    tags: ['resumewatch', 'detector'],
    dashboardsLink: 'Overview',
  })
    .withVariable(instanceVariable(config))
    .withVariable(serviceVariable())
    .withRow(row(100, 'Scrape and intake'))
    .withPanel(
      single({
        id: 1,
        title: 'Replicas up',
        description: 'up of each detector replica as Prometheus scrapes it. Alert: ResumewatchDetectorDown.',
        unit: 'none',
        query: { expr: q.up, legend: '{{instance}}' },
        at: { w: 8, h: 6 },
        red: 0,
        mappings: [
          {
            type: dashboard.MappingType.ValueToText,
            options: { '0': { text: 'DOWN', color: 'red' }, '1': { text: 'UP', color: 'green' } },
          },
        ],
      }),
    )
    .withPanel(
      series({
        id: 2,
        title: 'Spans received by result',
        description:
          'accepted, duplicate (same span id again), invalid (malformed: alert ResumewatchDetectorRejectingSpans), ' +
          'ignored (not part of the contract). Zero everywhere: alert ResumewatchDetectorNoSpans.',
        unit: 'cps',
        queries: [{ expr: q.spansByResult, legend: '{{result}}' }],
        at: { w: 8, h: 6 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 3,
        title: 'Spans received by replica',
        description: "How the collector's load-balancing exporter spreads spans (keyed by session) over the replicas.",
        unit: 'cps',
        queries: [{ expr: q.spansByReplica, legend: '{{instance}}' }],
        at: { w: 8, h: 6 },
      }),
    )
    .withPanel(
      series({
        id: 4,
        title: 'Invalid span ratio',
        description: `Share of received spans that were malformed. The alert threshold is ${invalidPercent}%.`,
        unit: 'percentunit',
        queries: [{ expr: q.invalidRatio, legend: '{{instance}}' }],
        at: { w: 8, h: 7 },
        max: 1,
      }),
    )
    .withPanel(
      series({
        id: 5,
        title: 'Terminal events seen by service',
        description: 'Which instrumented services the detectors hear from.',
        unit: 'cps',
        queries: [{ expr: q.terminalEventsByService, legend: '{{service}}' }],
        at: { w: 16, h: 7 },
      }),
    )
    .withRow(row(101, 'State'))
    .withPanel(
      series({
        id: 6,
        title: 'Tracked requests',
        description:
          'Requests (service, session, request) whose state each replica holds. Flat at the cap means evictions.',
        unit: 'short',
        queries: [{ expr: q.trackedRequests, legend: '{{instance}}' }],
        at: { w: 8, h: 8 },
      }),
    )
    .withPanel(
      series({
        id: 7,
        title: 'State evictions at the cap (requests, tasks)',
        description:
          'Request states evicted because the cap was reached (not released after retention), and MCP task records ' +
          "dropped at their service's cap before their task ended. Anything above zero means missed findings. " +
          'Alerts: ResumewatchDetectorEvictingState, ResumewatchDetectorEvictingTasks.',
        unit: 'cps',
        queries: [
          { expr: q.evictions, legend: '{{instance}} requests' },
          { expr: q.taskEvictions, legend: '{{instance}} tasks' },
        ],
        at: { w: 8, h: 8 },
      }),
    )
    .withPanel(
      series({
        id: 8,
        title: `Detection lag ${percentileName(lag.quantile)} by replica`,
        description:
          'Seconds from the end of the span that completed a finding to the finding. Alert: ResumewatchDetectionLagHigh.',
        unit: 's',
        queries: [{ expr: q.detectionLagAlerted, legend: '{{instance}}' }],
        at: { w: 8, h: 8 },
      }),
    )
    .withRow(row(102, 'Gateway'))
    .withPanel(
      series({
        id: 9,
        title: 'Answers the gateway gave itself, by reason',
        description:
          'resumewatch gateway replicas only: requests answered or connections closed by the gateway instead of its ' +
          'MCP server. Alerts: ResumewatchGatewayUpstreamFailing (upstream_unreachable, upstream_timeout), ' +
          'ResumewatchGatewayAtStreamLimit (too_many_streams), ResumewatchGatewayAtConnectionLimit ' +
          '(too_many_connections), ResumewatchGatewayInternalError (internal_error), ResumewatchGatewayClientTimeouts ' +
          '(headers_timeout, body_timeout).',
        unit: 'cps',
        queries: [{ expr: q.gatewayRefusals, legend: '{{instance}} {{reason}}' }],
        at: { w: 24, h: 8 },
        stacked: true,
      }),
    )
    .build();
}
