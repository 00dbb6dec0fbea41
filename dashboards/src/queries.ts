// PromQL of the dashboards, built from the names of the telemetry contract (@resumewatch/semconv) and
// the recording rules of alerts/rules/recording.yaml. No metric name is spelled here as a literal.
import {
  FindingKind,
  LABEL_ACCEPTED,
  LABEL_DUPLICATE,
  LABEL_ENDED_BY,
  LABEL_ERA,
  LABEL_KIND,
  LABEL_SERVER,
  LABEL_OUTCOME,
  LABEL_REASON,
  LABEL_RESULT,
  LABEL_SERVICE,
  LABEL_SHAPE,
  LABEL_VERSION,
  METRIC_DETECTION_LAG_SECONDS,
  METRIC_FINDINGS_RETRACTED_TOTAL,
  METRIC_FINDINGS_TOTAL,
  METRIC_GATEWAY_REFUSALS_TOTAL,
  METRIC_LISTENING_RESUMES_TOTAL,
  METRIC_MCP_REQUESTS_TOTAL,
  METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL,
  METRIC_RECONNECT_STORMS_ENDED_TOTAL,
  METRIC_SERVER_DEFECTS_TOTAL,
  METRIC_RECONNECT_STORM_ATTEMPTS,
  METRIC_RECONNECT_STORMS_ACTIVE,
  METRIC_RESUME_ATTEMPTS_TOTAL,
  METRIC_SESSION_REATTACH_TOTAL,
  METRIC_SPANS_RECEIVED_TOTAL,
  METRIC_STATE_EVICTIONS_TOTAL,
  METRIC_TERMINAL_EVENTS_TOTAL,
  METRIC_TRACKED_REQUESTS,
  METRIC_LIVE_TASKS,
  METRIC_TASK_EVICTIONS_TOTAL,
  METRIC_TASK_POLLS_TOTAL,
  METRIC_SESSIONS_STARTED_TOTAL,
  METRIC_TASKS_CREATED_TOTAL,
  ProtocolEra,
  SpanReceivedResult,
  TASK_FINDING_KINDS,
} from '@resumewatch/semconv';
import type { MonitoringConfig } from './config.js';
import { recordedNames } from './alerts/recorded.js';

/** Recording rules of alerts/rules/recording.yaml that the dashboards read (checked by a test). */
export function recordedByDashboards(config: MonitoringConfig) {
  const names = recordedNames(config);
  return {
    duplicateTerminals: names.duplicateTerminals,
    findings: names.findings,
    findingsStanding: names.findingsStanding,
    stormsActive: names.stormsActive,
    serverDefects: names.serverDefects,
    lostResultsRatio: names.lostResultsRatio,
  } as const;
}

/** Dashboard variables. */
export const VAR_DATASOURCE = 'datasource';
export const VAR_SERVICE = 'service';
export const VAR_INSTANCE = 'instance';

const RATE = '$__rate_interval';
/** The finding kinds of MCP tasks, as one label matcher. */
const taskKinds = `${LABEL_KIND}=~"${TASK_FINDING_KINDS.join('|')}"`;
const service = `${LABEL_SERVICE}=~"$${VAR_SERVICE}"`;
/** The loops of clients that ignore the server's refusal (issue 39). */
const loopKinds = `${LABEL_KIND}=~"${FindingKind.DEAD_SESSION_LOOP}|${FindingKind.LISTENING_STREAM_LOOP}"`;

/** The detectors as the alerts select them (`detectorSelector`), narrowed to the replica variable. */
function instanceOf(config: MonitoringConfig): string {
  return `${config.detectorSelector}, instance=~"$${VAR_INSTANCE}"`;
}

export function rate(metric: string, matchers: string): string {
  return `rate(${metric}{${matchers}}[${RATE}])`;
}

export function quantile(q: number, histogram: string, matchers: string, by: string[] = []): string {
  const labels = ['le', ...by].join(', ');
  return `histogram_quantile(${q}, sum by (${labels}) (${rate(`${histogram}_bucket`, matchers)}))`;
}

export function overviewQueries(config: MonitoringConfig) {
  const recorded = recordedByDashboards(config);
  const detectors = config.detectorSelector;
  return {
    duplicateTerminalsInWindow: `sum(${recorded.duplicateTerminals}{${service}}) or vector(0)`,
    signaturesInWindow: `sum(${recorded.findings}{${service}, ${LABEL_KIND}="${FindingKind.SIGNATURE}"}) or vector(0)`,
    stormsActiveNow: `sum(${recorded.stormsActive}{${service}}) or vector(0)`,
    duplicateTerminalRate: `sum by (${LABEL_SERVICE}) (${rate(METRIC_TERMINAL_EVENTS_TOTAL, `${service}, ${LABEL_DUPLICATE}="true"`)})`,
    signatureRate: `sum by (${LABEL_SERVICE}) (${rate(METRIC_FINDINGS_TOTAL, `${service}, ${LABEL_KIND}="${FindingKind.SIGNATURE}"`)})`,
    stormsActive: `sum by (${LABEL_SERVICE}) (${METRIC_RECONNECT_STORMS_ACTIVE}{${service}})`,
    stormAttemptsP50: quantile(0.5, METRIC_RECONNECT_STORM_ATTEMPTS, service, [LABEL_SERVICE]),
    stormAttemptsP90: quantile(0.9, METRIC_RECONNECT_STORM_ATTEMPTS, service, [LABEL_SERVICE]),
    terminalEventsByDuplicate: `sum by (${LABEL_DUPLICATE}) (${rate(METRIC_TERMINAL_EVENTS_TOTAL, service)})`,
    resumeOutcomes: `sum by (${LABEL_OUTCOME}) (${rate(METRIC_RESUME_ATTEMPTS_TOTAL, service)})`,
    reattachByAcceptance: `sum by (${LABEL_ACCEPTED}) (${rate(METRIC_SESSION_REATTACH_TOTAL, service)})`,
    reattachAcceptedRatio:
      `sum by (${LABEL_SERVICE}) (${rate(METRIC_SESSION_REATTACH_TOTAL, `${service}, ${LABEL_ACCEPTED}="true"`)})` +
      ` / sum by (${LABEL_SERVICE}) (${rate(METRIC_SESSION_REATTACH_TOTAL, service)})`,
    findingsByKind: `sum by (${LABEL_KIND}) (${rate(METRIC_FINDINGS_TOTAL, service)})`,
    // Server defects carry the MCP server (server.address), not the client's service: not filtered by $service.
    serverDefectsInWindow: `sum(${recorded.serverDefects}) or vector(0)`,
    serverDefectsByServer: `sum by (${LABEL_SERVER}, ${LABEL_KIND}) (${rate(METRIC_SERVER_DEFECTS_TOTAL, `${LABEL_KIND}=~".+"`)})`,
    stormsEndedByReason: `sum by (${LABEL_ENDED_BY}) (${rate(METRIC_RECONNECT_STORMS_ENDED_TOTAL, service)})`,
    findingsRetracted: `sum by (${LABEL_KIND}) (${rate(METRIC_FINDINGS_RETRACTED_TOTAL, service)})`,
    listeningResumes: `sum by (${LABEL_OUTCOME}) (${rate(METRIC_LISTENING_RESUMES_TOTAL, service)})`,
    // The share of each service's MCP requests still in the session era (up to 2025-11-25): the traffic
    // the replay loop can reach. It falls towards 0 as clients and servers move to 2026-07-28. Both counts
    // are of exchanges the server accepted in their era: a refused 2026-07-28 probe is in neither.
    sessionEraShare:
      `sum by (${LABEL_SERVICE}) (${rate(METRIC_MCP_REQUESTS_TOTAL, `${service}, ${LABEL_ERA}="${ProtocolEra.SESSIONS}"`)})` +
      ` / sum by (${LABEL_SERVICE}) (${rate(METRIC_MCP_REQUESTS_TOTAL, service)})`,
    // Clients asking for a version their server refuses (a 2026-07-28 probe against a session-era server).
    negotiationsRefused: `sum by (${LABEL_SERVICE}, ${LABEL_VERSION}) (${rate(METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL, service)})`,
    // The 2026-07-28 era's successor of the replay loop: calls re-issued after a broken stream whose first
    // attempt ran (duplicate_execution) or may have run (possible_duplicate_execution).
    duplicateExecutions: `sum by (${LABEL_SERVICE}, ${LABEL_KIND}) (${rate(
      METRIC_FINDINGS_TOTAL,
      `${service}, ${LABEL_KIND}=~"${FindingKind.DUPLICATE_EXECUTION}|${FindingKind.POSSIBLE_DUPLICATE_EXECUTION}"`,
    )})`,
    // The share of each service's requests that ended without their result after their stream did
    // (standing lost_result findings / requests, over the findings window): what McpResultsLost alerts on.
    lostResultsShare: `${recorded.lostResultsRatio}{${service}}`,
    // MCP tasks, both shapes. The findings in the window are net of retractions (a lost task result whose
    // outcome was delivered after all), as the alerts count them.
    taskFindingsInWindow: `sum(${recorded.findingsStanding}{${service}, ${taskKinds}}) or vector(0)`,
    taskFindings: `sum by (${LABEL_SERVICE}, ${LABEL_KIND}) (${rate(METRIC_FINDINGS_TOTAL, `${service}, ${taskKinds}`)})`,
    // Clients that keep doing what the server refused: a dead session id, a listening stream it does not offer.
    loopFindings: `sum by (${LABEL_SERVICE}, ${LABEL_KIND}) (${rate(METRIC_FINDINGS_TOTAL, `${service}, ${loopKinds}`)})`,
    // Session churn: a client that starts a session for every call is no finding, but shows here.
    sessionsStarted: `sum by (${LABEL_SERVICE}) (${rate(METRIC_SESSIONS_STARTED_TOTAL, service)})`,
    tasksCreatedByShape: `sum by (${LABEL_SERVICE}, ${LABEL_SHAPE}) (${rate(METRIC_TASKS_CREATED_TOTAL, service)})`,
    taskPolls: `sum by (${LABEL_SERVICE}) (${rate(METRIC_TASK_POLLS_TOTAL, service)})`,
    // Polls per task created, by service: far above a task's duration / its poll interval is a client
    // that ignores the interval, before a storm is reported.
    taskPollsPerTask:
      `sum by (${LABEL_SERVICE}) (${rate(METRIC_TASK_POLLS_TOTAL, service)})` +
      ` / sum by (${LABEL_SERVICE}) (${rate(METRIC_TASKS_CREATED_TOTAL, service)})`,
    // The task records each replica holds, all services together; and, since the cap (--max-tasks) is per
    // service and per replica, each service's count on the replica where it is highest: the one nearest its cap.
    liveTasks: `sum by (instance) (${METRIC_LIVE_TASKS}{${detectors}})`,
    liveTasksNearestCap: `max by (${LABEL_SERVICE}) (${METRIC_LIVE_TASKS}{${detectors}, ${service}})`,
    detectionLagP50: quantile(0.5, METRIC_DETECTION_LAG_SECONDS, detectors),
    detectionLagP99: quantile(0.99, METRIC_DETECTION_LAG_SECONDS, detectors),
  };
}

export function detectorQueries(config: MonitoringConfig) {
  const instance = instanceOf(config);
  return {
    up: `up{${instance}}`,
    spansByResult: `sum by (${LABEL_RESULT}) (${rate(METRIC_SPANS_RECEIVED_TOTAL, instance)})`,
    spansByReplica: `sum by (instance) (${rate(METRIC_SPANS_RECEIVED_TOTAL, instance)})`,
    invalidRatio:
      `sum by (instance) (${rate(METRIC_SPANS_RECEIVED_TOTAL, `${instance}, ${LABEL_RESULT}="${SpanReceivedResult.INVALID}"`)})` +
      ` / sum by (instance) (${rate(METRIC_SPANS_RECEIVED_TOTAL, instance)})`,
    trackedRequests: `sum by (instance) (${METRIC_TRACKED_REQUESTS}{${instance}})`,
    evictions: `sum by (instance) (${rate(METRIC_STATE_EVICTIONS_TOTAL, instance)})`,
    taskEvictions: `sum by (instance) (${rate(METRIC_TASK_EVICTIONS_TOTAL, instance)})`,
    // Gateway replicas serve the detector's metrics, so the same instance selector finds them.
    gatewayRefusals: `sum by (instance, ${LABEL_REASON}) (${rate(METRIC_GATEWAY_REFUSALS_TOTAL, instance)})`,
    // At the quantile ResumewatchDetectionLagHigh alerts on.
    detectionLagAlerted: quantile(
      config.alerts.ResumewatchDetectionLagHigh.quantile,
      METRIC_DETECTION_LAG_SECONDS,
      instance,
      ['instance'],
    ),
    terminalEventsByService: `sum by (${LABEL_SERVICE}) (${rate(METRIC_TERMINAL_EVENTS_TOTAL, `${instance}, ${service}`)})`,
  };
}
