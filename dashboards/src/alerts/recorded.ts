// The names of the recording rules of alerts/rules/recording.yaml, for the file that defines them and
// for the alerts and dashboards that read them. A name says its window (level:metric:operations), so
// it follows the windows of the configuration.
import type { MonitoringConfig } from '../config.js';

/** `0.99` → `p99`, `0.5` → `p50`, `0.999` → `p999`: the quantile as a recording rule's name spells it. */
export function percentileName(quantile: number): string {
  if (!(quantile > 0 && quantile < 1)) throw new Error(`a quantile is between 0 and 1, not ${quantile}`);
  const percent = quantile * 100;
  return `p${Number.isInteger(percent) ? percent : String(quantile).slice(2)}`;
}

/** `0.99` → `99th`, `0.999` → `99.9th`: the quantile as a description spells it. */
export function percentile(quantile: number): string {
  return `${Number((quantile * 100).toPrecision(12))}th`;
}

export function recordedNames(config: MonitoringConfig) {
  const counted = config.findingsWindow;
  const rate = config.rateWindow;
  const evictions = config.alerts.ResumewatchDetectorEvictingState.window;
  const taskEvictions = config.alerts.ResumewatchDetectorEvictingTasks.window;
  const lag = config.alerts.ResumewatchDetectionLagHigh;
  return {
    findings: `service_kind:resumewatch_findings:increase${counted}`,
    findingsRetracted: `service_kind:resumewatch_findings_retracted:increase${counted}`,
    findingsStanding: `service_kind:resumewatch_findings_standing:increase${counted}`,
    serverDefects: `server_kind:resumewatch_server_defects:increase${counted}`,
    findingsRate: `service_kind:resumewatch_findings:rate${rate}`,
    duplicateTerminals: `service:resumewatch_duplicate_terminal_events:increase${counted}`,
    stormsEnded: `service_ended_by:resumewatch_reconnect_storms_ended:increase${config.stormsEndedWindow}`,
    stormsActive: 'service:resumewatch_reconnect_storms:active',
    resumeAttemptsRate: `service_outcome:resumewatch_resume_attempts:rate${rate}`,
    reattachAcceptedRatio: `service:resumewatch_session_reattach_accepted:ratio_rate${rate}`,
    spansReceivedRate: `instance:resumewatch_spans_received:rate${rate}`,
    spansInvalidRatio: `instance:resumewatch_spans_invalid:ratio_rate${rate}`,
    stateEvictions: `instance:resumewatch_state_evictions:increase${evictions}`,
    taskEvictions: `instance:resumewatch_task_evictions:increase${taskEvictions}`,
    detectionLag: `job:resumewatch_detection_lag_seconds:${percentileName(lag.quantile)}_rate${lag.window}`,
    requests: `service:resumewatch_mcp_requests:increase${counted}`,
    lostResultsRatio: `service:resumewatch_lost_results:ratio_increase${counted}`,
  } as const;
}
