// alerts/rules/detector.yaml: the alerts on the detectors themselves, per scraped replica.
import type { MonitoringConfig } from '../config.js';
import type { RuleFile } from './model.js';

export const detectorRules = (config: MonitoringConfig): RuleFile => ({
  file: 'detector.yaml',
  header: `Alerts on the health of the detector itself (\`resumewatch serve\`), per scraped replica.
The detectors are the targets of ${config.detectorSelector} (\`detectorSelector\` of dashboards/src/config.ts).`,
  groups: [
    {
      name: 'resumewatch.detector',
      rules: [
        {
          alert: 'ResumewatchDetectorDown',
          expr: `up{${config.detectorSelector}} == 0`,
          for: '3m',
          severity: 'critical',
          summary: `resumewatch detector {{ $labels.instance }} is down`,
          description: `Prometheus cannot scrape {{ $labels.instance }} (job {{ $labels.job }}, up = {{ $value }}) for 3 minutes. The
collector keeps routing the sessions that hash to this replica to it, so their resumption
failures go unseen.`,
        },
        {
          alert: 'ResumewatchDetectorAbsent',
          expr: `absent(up{${config.detectorSelector}})`,
          for: '5m',
          severity: 'critical',
          summary: `No resumewatch detector is scraped`,
          description: `Prometheus has no target in job {{ $labels.job }} (absent = {{ $value }}): the detectors are
not discovered, so every alert of this file and of failure.yaml is silent.`,
        },
        {
          alert: 'ResumewatchDetectorNoSpans',
          expr: `up{${config.detectorSelector}} == 1
  unless on (job, instance)
instance:resumewatch_spans_received:rate5m > 0
`,
          for: '10m',
          severity: 'warning',
          summary: `resumewatch detector {{ $labels.instance }} receives no spans`,
          description: `{{ $labels.instance }} is up (up = {{ $value }}) but has received no span for 10 minutes. Either nothing is
instrumented, the collector does not export to it, or its OTLP receiver is unreachable.`,
        },
        {
          alert: 'ResumewatchDetectorRejectingSpans',
          expr: `instance:resumewatch_spans_invalid:ratio_rate5m > 0.01`,
          for: '10m',
          severity: 'warning',
          summary: `resumewatch detector {{ $labels.instance }} rejects spans as invalid`,
          description: `{{ $value | humanizePercentage }} of the spans received by {{ $labels.instance }} over
5 minutes are malformed and dropped. Findings that depend on them are missed.`,
        },
        {
          alert: 'ResumewatchDetectorEvictingState',
          expr: `instance:resumewatch_state_evictions:increase10m > 0`,
          for: '10m',
          severity: 'warning',
          summary: `resumewatch detector {{ $labels.instance }} evicts request state at its cap`,
          description: `{{ $labels.instance }} evicted {{ $value | printf "%.0f" }} request state(s) in the last
10 minutes because its cap was reached, not because their retention ended. A duplicate or a
storm on an evicted request is not detected.`,
        },
        {
          alert: 'ResumewatchDetectionLagHigh',
          expr: `job:resumewatch_detection_lag_seconds:p99_rate10m > 30`,
          for: '15m',
          severity: 'warning',
          summary: `resumewatch findings arrive late (p99 {{ $value | humanizeDuration }})`,
          description: `The 99th percentile of the time from the span that completes a finding to the finding is
{{ $value | humanizeDuration }} in job {{ $labels.job }}: spans are batched or delayed upstream,
or the detector is saturated. Alerts fire that much later.`,
        },
      ],
    },
  ],
});
