// alerts/rules/recording.yaml: the recording rules shared by the alerts and the dashboards.
import {
  FindingKind,
  LABEL_ACCEPTED,
  LABEL_DUPLICATE,
  LABEL_KIND,
  LABEL_RESULT,
  METRIC_MCP_REQUESTS_TOTAL,
  METRIC_TASK_EVICTIONS_TOTAL,
  SpanReceivedResult,
} from '@resumewatch/semconv';
import { spelled } from '../config.js';
import type { MonitoringConfig } from '../config.js';
import type { RuleFile } from './model.js';
import { recordedNames } from './recorded.js';

export function recordingRules(config: MonitoringConfig): RuleFile {
  const names = recordedNames(config);
  const counted = config.findingsWindow;
  const rate = config.rateWindow;
  const evictions = config.alerts.ResumewatchDetectorEvictingState;
  const taskEvictions = config.alerts.ResumewatchDetectorEvictingTasks;
  const lag = config.alerts.ResumewatchDetectionLagHigh;
  const lost = `sum by (service) (${names.findingsStanding}{${LABEL_KIND}="${FindingKind.LOST_RESULT}"})`;
  return {
    file: 'recording.yaml',
    header: `Recording rules shared by the alerts (failure.yaml, detector.yaml) and the dashboards.

Naming follows level:metric:operations. Every rule aggregates away \`instance\`, so the two
detector replicas behind the collector's load-balancing exporter add up to one figure per service.

The \`:increase${counted}\` rules count findings and duplicate terminals over the last ${spelled(counted)}, and they
count a series that appeared inside the window too: the detector creates a labelled series on its
first increment (value 1), and increase() alone would miss that first event, which for a service
with a single duplicate terminal is the only one. So a series that did not exist ${spelled(counted)} ago
counts with its whole value, and every other series with increase():
  ((x unless x offset ${counted}) and on (job, instance) (up offset ${counted})) or increase(x[${counted}])
(\`or\` keeps the left side where both have a series: vector matching ignores the metric name.)
The \`up offset ${counted}\` guard counts a series as new only on a target Prometheus already scraped
${spelled(counted)} ago: after a Prometheus cold start (or a gap in its data) every old counter looks new,
and without the guard each one that ever counted a duplicate would page. The price: on a target
younger than ${spelled(counted)}, a series' very first event is seen only once its counter moves again.`,
    groups: [
      {
        name: 'resumewatch.recording',
        rules: [
          {
            record: names.findings,
            expr: `sum by (service, kind) (
    (
        (resumewatch_findings_total unless resumewatch_findings_total offset ${counted})
      and on (job, instance)
        (up offset ${counted})
    )
  or
    increase(resumewatch_findings_total[${counted}])
)
`,
          },
          {
            comment: `Retractions of failed-resumption findings (a later continuation or terminal contradicted them),
counted like the findings; the standing findings are the findings minus their retractions
(a kind without retractions minus 0), never below 0.`,
            record: names.findingsRetracted,
            expr: `sum by (service, kind) (
    (
        (resumewatch_findings_retracted_total unless resumewatch_findings_retracted_total offset ${counted})
      and on (job, instance)
        (up offset ${counted})
    )
  or
    increase(resumewatch_findings_retracted_total[${counted}])
)
`,
          },
          {
            record: names.findingsStanding,
            expr: `clamp_min(
    ${names.findings}
  -
    (${names.findingsRetracted} or ${names.findings} * 0),
  0
)
`,
          },
          {
            comment: `Server defects (foreign_replay, conflicting_terminal) per MCP server (server.address), summed over
replicas and services, counted like the findings.`,
            record: names.serverDefects,
            expr: `sum by (server, kind) (
    (
        (resumewatch_server_defects_total unless resumewatch_server_defects_total offset ${counted})
      and on (job, instance)
        (up offset ${counted})
    )
  or
    increase(resumewatch_server_defects_total[${counted}])
)
`,
          },
          {
            record: names.findingsRate,
            expr: `sum by (service, kind) (rate(resumewatch_findings_total[${rate}]))`,
          },
          {
            record: names.duplicateTerminals,
            expr: `sum by (service) (
    (
        (
            resumewatch_terminal_events_total{${LABEL_DUPLICATE}="true"}
          unless
            resumewatch_terminal_events_total{${LABEL_DUPLICATE}="true"} offset ${counted}
        )
      and on (job, instance)
        (up offset ${counted})
    )
  or
    increase(resumewatch_terminal_events_total{${LABEL_DUPLICATE}="true"}[${counted}])
)
`,
          },
          {
            record: names.stormsEnded,
            expr: `sum by (service, ended_by) (increase(resumewatch_reconnect_storms_ended_total[${config.stormsEndedWindow}]))`,
          },
          {
            record: names.stormsActive,
            expr: `sum by (service) (resumewatch_reconnect_storms_active)`,
          },
          {
            record: names.resumeAttemptsRate,
            expr: `sum by (service, outcome) (rate(resumewatch_resume_attempts_total[${rate}]))`,
          },
          {
            record: names.reattachAcceptedRatio,
            expr: `sum by (service) (rate(resumewatch_session_reattach_total{${LABEL_ACCEPTED}="true"}[${rate}]))
  /
sum by (service) (rate(resumewatch_session_reattach_total[${rate}]))
`,
          },
          {
            record: names.spansReceivedRate,
            expr: `sum by (job, instance) (rate(resumewatch_spans_received_total[${rate}]))`,
          },
          {
            record: names.spansInvalidRatio,
            expr: `sum by (job, instance) (rate(resumewatch_spans_received_total{${LABEL_RESULT}="${SpanReceivedResult.INVALID}"}[${rate}]))
  /
sum by (job, instance) (rate(resumewatch_spans_received_total[${rate}]))
`,
          },
          {
            record: names.stateEvictions,
            expr: `sum by (job, instance) (increase(resumewatch_state_evictions_total[${evictions.window}]))`,
          },
          {
            comment: `Task records dropped at the per-service cap (not ended by their task), per replica.`,
            record: names.taskEvictions,
            expr: `sum by (job, instance) (increase(${METRIC_TASK_EVICTIONS_TOTAL}[${taskEvictions.window}]))`,
          },
          {
            record: names.detectionLag,
            expr: `histogram_quantile(${lag.quantile}, sum by (job, le) (rate(resumewatch_detection_lag_seconds_bucket[${lag.window}])))`,
          },
          {
            comment: `MCP requests per service (every era), counted like the findings: the denominator of the share of
requests that lost their result.`,
            record: names.requests,
            expr: `sum by (service) (
    (
        (${METRIC_MCP_REQUESTS_TOTAL} unless ${METRIC_MCP_REQUESTS_TOTAL} offset ${counted})
      and on (job, instance)
        (up offset ${counted})
    )
  or
    increase(${METRIC_MCP_REQUESTS_TOTAL}[${counted}])
)
`,
          },
          {
            comment: `The share of a service's requests whose result was lost (standing lost_result findings: net of
the retractions by a late result or a re-issue), over the larger of its requests and its lost results:
a service whose request spans carry no protocol version (no requests counted) or too few of them counts
its lost results as all of its requests (1), never as none.`,
            record: names.lostResultsRatio,
            expr: `${lost}
  /
(
    ${names.requests} >= ${lost}
  or
    ${lost}
)
`,
          },
        ],
      },
    ],
  };
}
