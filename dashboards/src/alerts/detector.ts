// alerts/rules/detector.yaml: the alerts on the detectors themselves, per scraped replica.
import { spelled } from '../config.js';
import type { MonitoringConfig } from '../config.js';
import type { RuleFile } from './model.js';
import { percentile, percentileName, recordedNames } from './recorded.js';

export function detectorRules(config: MonitoringConfig): RuleFile {
  const names = recordedNames(config);
  const alerts = config.alerts;
  return {
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
            for: alerts.ResumewatchDetectorDown.for,
            severity: 'critical',
            summary: `resumewatch detector {{ $labels.instance }} is down`,
            description: `Prometheus cannot scrape {{ $labels.instance }} (job {{ $labels.job }}, up = {{ $value }}) for ${spelled(alerts.ResumewatchDetectorDown.for)}. The
collector keeps routing the sessions that hash to this replica to it, so their resumption
failures go unseen.`,
          },
          {
            alert: 'ResumewatchDetectorAbsent',
            expr: `absent(up{${config.detectorSelector}})`,
            for: alerts.ResumewatchDetectorAbsent.for,
            severity: 'critical',
            summary: `No resumewatch detector is scraped`,
            description: `Prometheus has no target in job {{ $labels.job }} (absent = {{ $value }}): the detectors are
not discovered, so every alert of this file and of failure.yaml is silent.`,
          },
          {
            alert: 'ResumewatchDetectorNoSpans',
            expr: `up{${config.detectorSelector}} == 1
  unless on (job, instance)
${names.spansReceivedRate} > ${alerts.ResumewatchDetectorNoSpans.threshold}
`,
            for: alerts.ResumewatchDetectorNoSpans.for,
            severity: 'warning',
            summary: `resumewatch detector {{ $labels.instance }} receives no spans`,
            description: `{{ $labels.instance }} is up (up = {{ $value }}) but has received no span for ${spelled(alerts.ResumewatchDetectorNoSpans.for)}. Either nothing is
instrumented, the collector does not export to it, or its OTLP receiver is unreachable.`,
          },
          {
            alert: 'ResumewatchDetectorRejectingSpans',
            expr: `${names.spansInvalidRatio} > ${alerts.ResumewatchDetectorRejectingSpans.threshold}`,
            for: alerts.ResumewatchDetectorRejectingSpans.for,
            severity: 'warning',
            summary: `resumewatch detector {{ $labels.instance }} rejects spans as invalid`,
            description: `{{ $value | humanizePercentage }} of the spans received by {{ $labels.instance }} over
${spelled(config.rateWindow)} are malformed and dropped. Findings that depend on them are missed.`,
          },
          {
            alert: 'ResumewatchDetectorEvictingState',
            expr: `${names.stateEvictions} > ${alerts.ResumewatchDetectorEvictingState.threshold}`,
            for: alerts.ResumewatchDetectorEvictingState.for,
            severity: 'warning',
            summary: `resumewatch detector {{ $labels.instance }} evicts request state at its cap`,
            description: `{{ $labels.instance }} evicted {{ $value | printf "%.0f" }} request state(s) in the last
${spelled(alerts.ResumewatchDetectorEvictingState.window)} because its cap was reached, not because their retention ended. A duplicate or a
storm on an evicted request is not detected.`,
          },
          {
            alert: 'ResumewatchDetectorEvictingTasks',
            expr: `${names.taskEvictions} > ${alerts.ResumewatchDetectorEvictingTasks.threshold}`,
            for: alerts.ResumewatchDetectorEvictingTasks.for,
            severity: 'warning',
            summary: `resumewatch detector {{ $labels.instance }} drops MCP task records at its cap`,
            description: `{{ $labels.instance }} dropped {{ $value | printf "%.0f" }} live task record(s) in the last
${spelled(alerts.ResumewatchDetectorEvictingTasks.window)} because their service reached its cap of task records, before the task ended.
A lost result or a poll storm of a dropped task is not detected.`,
          },
          {
            alert: 'ResumewatchDetectionLagHigh',
            expr: `${names.detectionLag} > ${alerts.ResumewatchDetectionLagHigh.threshold}`,
            for: alerts.ResumewatchDetectionLagHigh.for,
            severity: 'warning',
            summary: `resumewatch findings arrive late (${percentileName(alerts.ResumewatchDetectionLagHigh.quantile)} {{ $value | humanizeDuration }})`,
            description: `The ${percentile(alerts.ResumewatchDetectionLagHigh.quantile)} percentile of the time from the span that completes a finding to the finding is
{{ $value | humanizeDuration }} in job {{ $labels.job }}: spans are batched or delayed upstream,
or the detector is saturated. Alerts fire that much later.`,
          },
        ],
      },
    ],
  };
}
