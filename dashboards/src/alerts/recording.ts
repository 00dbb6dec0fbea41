// alerts/rules/recording.yaml: the recording rules shared by the alerts and the dashboards.
import { LABEL_ACCEPTED, LABEL_DUPLICATE, LABEL_RESULT, SpanReceivedResult } from '@resumewatch/semconv';
import type { RuleFile } from './model.js';

export const recordingRules: RuleFile = {
  file: 'recording.yaml',
  header: `Recording rules shared by the alerts (failure.yaml, detector.yaml) and the dashboards.

Naming follows level:metric:operations. Every rule aggregates away \`instance\`, so the two
detector replicas behind the collector's load-balancing exporter add up to one figure per service.

The \`:increase10m\` rules count findings and duplicate terminals over the last 10 minutes, and they
count a series that appeared inside the window too: the detector creates a labelled series on its
first increment (value 1), and increase() alone would miss that first event, which for a service
with a single duplicate terminal is the only one. So a series that did not exist 10 minutes ago
counts with its whole value, and every other series with increase():
  ((x unless x offset 10m) and on (job, instance) (up offset 10m)) or increase(x[10m])
(\`or\` keeps the left side where both have a series: vector matching ignores the metric name.)
The \`up offset 10m\` guard counts a series as new only on a target Prometheus already scraped
10 minutes ago: after a Prometheus cold start (or a gap in its data) every old counter looks new,
and without the guard each one that ever counted a duplicate would page. The price: on a target
younger than 10 minutes, a series' very first event is seen only once its counter moves again.`,
  groups: [
    {
      name: 'resumewatch.recording',
      rules: [
        {
          record: 'service_kind:resumewatch_findings:increase10m',
          expr: `sum by (service, kind) (
    (
        (resumewatch_findings_total unless resumewatch_findings_total offset 10m)
      and on (job, instance)
        (up offset 10m)
    )
  or
    increase(resumewatch_findings_total[10m])
)
`,
        },
        {
          comment: `Retractions of failed-resumption findings (a later continuation or terminal contradicted them),
counted like the findings; the standing findings are the findings minus their retractions
(a kind without retractions minus 0), never below 0.`,
          record: 'service_kind:resumewatch_findings_retracted:increase10m',
          expr: `sum by (service, kind) (
    (
        (resumewatch_findings_retracted_total unless resumewatch_findings_retracted_total offset 10m)
      and on (job, instance)
        (up offset 10m)
    )
  or
    increase(resumewatch_findings_retracted_total[10m])
)
`,
        },
        {
          record: 'service_kind:resumewatch_findings_standing:increase10m',
          expr: `clamp_min(
    service_kind:resumewatch_findings:increase10m
  -
    (service_kind:resumewatch_findings_retracted:increase10m or service_kind:resumewatch_findings:increase10m * 0),
  0
)
`,
        },
        {
          comment: `Server defects (foreign_replay, conflicting_terminal) per MCP server (server.address), summed over
replicas and services, counted like the findings.`,
          record: 'server_kind:resumewatch_server_defects:increase10m',
          expr: `sum by (server, kind) (
    (
        (resumewatch_server_defects_total unless resumewatch_server_defects_total offset 10m)
      and on (job, instance)
        (up offset 10m)
    )
  or
    increase(resumewatch_server_defects_total[10m])
)
`,
        },
        {
          record: 'service_kind:resumewatch_findings:rate5m',
          expr: `sum by (service, kind) (rate(resumewatch_findings_total[5m]))`,
        },
        {
          record: 'service:resumewatch_duplicate_terminal_events:increase10m',
          expr: `sum by (service) (
    (
        (
            resumewatch_terminal_events_total{${LABEL_DUPLICATE}="true"}
          unless
            resumewatch_terminal_events_total{${LABEL_DUPLICATE}="true"} offset 10m
        )
      and on (job, instance)
        (up offset 10m)
    )
  or
    increase(resumewatch_terminal_events_total{${LABEL_DUPLICATE}="true"}[10m])
)
`,
        },
        {
          record: 'service_ended_by:resumewatch_reconnect_storms_ended:increase1h',
          expr: `sum by (service, ended_by) (increase(resumewatch_reconnect_storms_ended_total[1h]))`,
        },
        {
          record: 'service:resumewatch_reconnect_storms:active',
          expr: `sum by (service) (resumewatch_reconnect_storms_active)`,
        },
        {
          record: 'service_outcome:resumewatch_resume_attempts:rate5m',
          expr: `sum by (service, outcome) (rate(resumewatch_resume_attempts_total[5m]))`,
        },
        {
          record: 'service:resumewatch_session_reattach_accepted:ratio_rate5m',
          expr: `sum by (service) (rate(resumewatch_session_reattach_total{${LABEL_ACCEPTED}="true"}[5m]))
  /
sum by (service) (rate(resumewatch_session_reattach_total[5m]))
`,
        },
        {
          record: 'instance:resumewatch_spans_received:rate5m',
          expr: `sum by (job, instance) (rate(resumewatch_spans_received_total[5m]))`,
        },
        {
          record: 'instance:resumewatch_spans_invalid:ratio_rate5m',
          expr: `sum by (job, instance) (rate(resumewatch_spans_received_total{${LABEL_RESULT}="${SpanReceivedResult.INVALID}"}[5m]))
  /
sum by (job, instance) (rate(resumewatch_spans_received_total[5m]))
`,
        },
        {
          record: 'instance:resumewatch_state_evictions:increase10m',
          expr: `sum by (job, instance) (increase(resumewatch_state_evictions_total[10m]))`,
        },
        {
          record: 'job:resumewatch_detection_lag_seconds:p99_rate10m',
          expr: `histogram_quantile(0.99, sum by (job, le) (rate(resumewatch_detection_lag_seconds_bucket[10m])))`,
        },
      ],
    },
  ],
};
