// alerts/rules/failure.yaml: the alerts on the resumption failure (per service) and on server defects (per server).
import { FindingKind, LABEL_KIND } from '@resumewatch/semconv';
import { spelled } from '../config.js';
import type { MonitoringConfig } from '../config.js';
import type { RuleFile } from './model.js';
import { recordedNames } from './recorded.js';

export function failureRules(config: MonitoringConfig): RuleFile {
  const names = recordedNames(config);
  const window = spelled(config.findingsWindow);
  const alerts = config.alerts;
  return {
    file: 'failure.yaml',
    header: `Alerts on the MCP Streamable HTTP resumption failure: a client that treats "session accepted +
event id known" as a continuation; its successors of the 2026-07-28 era (a re-issue that runs twice, a lost
result) and of MCP tasks (a second task, a lost task result, a poll storm). Each alert links to its section of docs/runbooks.md.
Inputs are the recording rules of recording.yaml (summed over detector replicas, per service).`,
    groups: [
      {
        name: 'resumewatch.failure',
        rules: [
          {
            alert: 'McpDuplicateTerminalDelivered',
            expr: `${names.duplicateTerminals} > ${alerts.McpDuplicateTerminalDelivered.threshold}`,
            for: alerts.McpDuplicateTerminalDelivered.for,
            severity: 'critical',
            summary: `Duplicate MCP terminal results delivered to clients of {{ $labels.service }}`,
            description: `{{ $value | printf "%.0f" }} terminal event(s) (JSON-RPC result or error) reached clients of
service {{ $labels.service }} in the last ${window} for a (session, request) that had already
received one. Each is a replay of a finished request on a new stream: a consumer that
deduplicates per stream runs its side effect again.`,
          },
          {
            alert: 'McpResumeLoopSignature',
            expr: `${names.findings}{${LABEL_KIND}="${FindingKind.SIGNATURE}"} > ${alerts.McpResumeLoopSignature.threshold}`,
            for: alerts.McpResumeLoopSignature.for,
            severity: 'critical',
            summary: `Resume-after-completion loop (full signature) on {{ $labels.service }}`,
            description: `The detector matched the full signature {{ $value | printf "%.0f" }} time(s) in the last
${window} on service {{ $labels.service }}: duplicate terminal events under distinct stream
identities and a reconnect storm for the same request, reported as soon as both are seen,
while the loop may still run (it ends only if the server evicts the cursor). A client
reconnects with Last-Event-ID after its request finished.`,
          },
          {
            alert: 'McpReconnectStorm',
            expr: `sum by (service) (${names.findings}{${LABEL_KIND}="${FindingKind.RECONNECT_STORM}"}) > ${alerts.McpReconnectStorm.threshold}
  or
${names.stormsActive} > ${alerts.McpReconnectStorm.threshold}
`,
            for: alerts.McpReconnectStorm.for,
            severity: 'warning',
            summary: `MCP reconnect storm on {{ $labels.service }}`,
            description: `Clients of service {{ $labels.service }} keep re-presenting their Mcp-Session-Id on new streams
({{ $value | printf "%.0f" }} storm(s) detected in the last ${window} or in progress). A storm
after a clean close ends only when the server's event buffer evicts the cursor.`,
          },
          {
            alert: 'McpResumeAfterTerminal',
            expr: `${names.findings}{${LABEL_KIND}="${FindingKind.RESUME_AFTER_TERMINAL}"} > ${alerts.McpResumeAfterTerminal.threshold}`,
            for: alerts.McpResumeAfterTerminal.for,
            severity: 'warning',
            summary: `MCP clients of {{ $labels.service }} resume requests that already finished`,
            description: `{{ $value | printf "%.0f" }} resume attempt(s) in the last ${window} on service
{{ $labels.service }} sent Last-Event-ID for a request whose terminal event had already been
delivered. The stream ended because the work completed; resuming it can only replay the
final result.`,
          },
          {
            comment: `Failed resumptions are counted net of their retractions (a later continuation or terminal).`,
            alert: 'McpAmbiguousEmptyReplay',
            expr: `${names.findingsStanding}{${LABEL_KIND}="${FindingKind.AMBIGUOUS_EMPTY_REPLAY}"} > ${alerts.McpAmbiguousEmptyReplay.threshold}`,
            for: alerts.McpAmbiguousEmptyReplay.for,
            severity: 'warning',
            summary: `Empty replays on unfinished MCP requests of {{ $labels.service }}`,
            description: `{{ $value | printf "%.0f" }} resume attempt(s) in the last ${window} on service
{{ $labels.service }} got 2xx and a body that ended with no message (no polling announced), or
stayed silent past the request's deadline, for a request that had not finished, and no later
continuation or terminal retracted it. The server accepted the session but no longer holds
the stream (restart, lost buffer); the client may believe it missed nothing.`,
          },
          {
            alert: 'McpResumeCursorLost',
            expr: `${names.findingsStanding}{${LABEL_KIND}="${FindingKind.CURSOR_LOST}"} > ${alerts.McpResumeCursorLost.threshold}`,
            for: alerts.McpResumeCursorLost.for,
            severity: 'warning',
            summary: `MCP resume cursors rejected for unfinished requests of {{ $labels.service }}`,
            description: `{{ $value | printf "%.0f" }} resume attempt(s) in the last ${window} on service
{{ $labels.service }} were answered 404, or 400/409 confirmed by a second rejection or by the
client giving the request up, for a request that had not finished, and no later continuation or
terminal retracted it: the cursor or the session is gone and the request's remaining events are lost.`,
          },
          {
            alert: 'McpCompletedAfterCancellation',
            expr: `${names.findings}{${LABEL_KIND}="${FindingKind.COMPLETED_AFTER_CANCELLATION}"} > ${alerts.McpCompletedAfterCancellation.threshold}`,
            for: alerts.McpCompletedAfterCancellation.for,
            severity: 'warning',
            summary: `MCP calls of {{ $labels.service }} completed after the client cancelled them`,
            description: `{{ $value | printf "%.0f" }} request(s) in the last ${window} on service {{ $labels.service }}
were cancelled by the client (notifications/cancelled), and their result arrived afterwards: the
server ran them to completion. The application was told the call failed; if it retries, the
side effect runs twice.`,
          },
          {
            comment: `The 2026-07-28 era: no session and no resumption, a broken stream loses the request and the client
re-issues it. The successor of the replay loop, paged like a duplicate terminal.`,
            alert: 'McpDuplicateExecution',
            expr: `${names.findings}{${LABEL_KIND}="${FindingKind.DUPLICATE_EXECUTION}"} > ${alerts.McpDuplicateExecution.threshold}`,
            for: alerts.McpDuplicateExecution.for,
            severity: 'critical',
            summary: `MCP calls of {{ $labels.service }} executed twice after a broken stream`,
            description: `{{ $value | printf "%.0f" }} request(s) in the last ${window} on service {{ $labels.service }}
were re-issued after their response stream broke (2026-07-28 era), and the server ran the first
attempt to completion all the same: its side effect ran twice.`,
          },
          {
            alert: 'McpPossibleDuplicateExecution',
            expr: `${names.findings}{${LABEL_KIND}="${FindingKind.POSSIBLE_DUPLICATE_EXECUTION}"} > ${alerts.McpPossibleDuplicateExecution.threshold}`,
            for: alerts.McpPossibleDuplicateExecution.for,
            severity: 'warning',
            summary: `MCP calls of {{ $labels.service }} re-issued after a broken stream, first attempt's fate unknown`,
            description: `{{ $value | printf "%.0f" }} request(s) in the last ${window} on service {{ $labels.service }}
were re-issued after their response stream broke (2026-07-28 era), and no span of the server or
the gateway told whether the first attempt stopped or completed: its side effect may have run twice.`,
          },
          {
            comment: `MCP tasks (both shapes: 2025-11-25's task-augmented calls, the 2026-07-28 extension's). A
re-issued task-augmented call whose first attempt's task exists: certain when the idempotency key
ties the two attempts, possible when only client, method, name and arguments do.`,
            alert: 'McpDuplicateTask',
            expr: `${names.findings}{${LABEL_KIND}="${FindingKind.DUPLICATE_TASK}"} > ${alerts.McpDuplicateTask.threshold}`,
            for: alerts.McpDuplicateTask.for,
            severity: 'critical',
            summary: `MCP task work of {{ $labels.service }} started twice after a lost reply`,
            description: `{{ $value | printf "%.0f" }} task-augmented call(s) in the last ${window} on service {{ $labels.service }}
were re-issued with the idempotency key of a first attempt whose task the server had already
created: the server now runs the same work as two tasks.`,
          },
          {
            alert: 'McpPossibleDuplicateTask',
            expr: `${names.findings}{${LABEL_KIND}="${FindingKind.POSSIBLE_DUPLICATE_TASK}"} > ${alerts.McpPossibleDuplicateTask.threshold}`,
            for: alerts.McpPossibleDuplicateTask.for,
            severity: 'warning',
            summary: `MCP task-augmented calls of {{ $labels.service }} re-issued while their first task exists`,
            description: `{{ $value | printf "%.0f" }} task-augmented call(s) in the last ${window} on service {{ $labels.service }}
were re-issued (same client, method, name and arguments, no idempotency key) after their first
attempt's reply was lost, and the first attempt's task exists: its work may run twice.`,
          },
          {
            comment: `Lost task results are counted net of their retractions (the outcome delivered after all).`,
            alert: 'McpTaskResultLost',
            expr: `${names.findingsStanding}{${LABEL_KIND}="${FindingKind.LOST_TASK_RESULT}"} > ${alerts.McpTaskResultLost.threshold}`,
            for: alerts.McpTaskResultLost.for,
            severity: 'warning',
            summary: `MCP tasks of {{ $labels.service }} finished and their clients never got the outcome`,
            description: `{{ $value | printf "%.0f" }} task(s) in the last ${window} on service {{ $labels.service }} reached
completed or failed and their outcome (the result, or the task's error) never reached the client:
it asked after the server had purged the task, or the ttl the server announced passed without a
fetch, and no later delivery retracted it.`,
          },
          {
            alert: 'McpTaskPollStorm',
            expr: `${names.findings}{${LABEL_KIND}="${FindingKind.TASK_POLL_STORM}"} > ${alerts.McpTaskPollStorm.threshold}`,
            for: alerts.McpTaskPollStorm.for,
            severity: 'warning',
            summary: `MCP clients of {{ $labels.service }} poll tasks faster than announced`,
            description: `{{ $value | printf "%.0f" }} task(s) in the last ${window} on service {{ $labels.service }} were polled
(tasks/get) much faster than the pollInterval the server announced, sustained, or polled on after
the server said the task is gone.`,
          },
          {
            alert: 'McpDeadSessionLoop',
            expr: `${names.findings}{${LABEL_KIND}="${FindingKind.DEAD_SESSION_LOOP}"} > ${alerts.McpDeadSessionLoop.threshold}`,
            for: alerts.McpDeadSessionLoop.for,
            severity: 'warning',
            summary: `MCP clients of {{ $labels.service }} keep a session the server refused`,
            description: `{{ $value | printf "%.0f" }} session(s) in the last ${window} on service {{ $labels.service }} were
refused by the server (404, or 400 for an unknown session) and their client kept sending the dead
Mcp-Session-Id without initializing a new session: every call fails until the client restarts.`,
          },
          {
            alert: 'McpListeningStreamLoop',
            expr: `${names.findings}{${LABEL_KIND}="${FindingKind.LISTENING_STREAM_LOOP}"} > ${alerts.McpListeningStreamLoop.threshold}`,
            for: alerts.McpListeningStreamLoop.for,
            severity: 'warning',
            summary: `MCP clients of {{ $labels.service }} re-open listening streams the server does not offer`,
            description: `{{ $value | printf "%.0f" }} session(s) in the last ${window} on service {{ $labels.service }} re-opened
their GET listening stream again and again after the server answered 405, or after streams it closed
at once with no event.`,
          },
          {
            comment: `Results lost after their stream ended without them (resumed, or not), as a share of the
service's requests, net of retractions (a late result, a re-issue).`,
            alert: 'McpResultsLost',
            expr: `${names.lostResultsRatio} > ${alerts.McpResultsLost.threshold}`,
            for: alerts.McpResultsLost.for,
            severity: 'warning',
            summary: `MCP requests of {{ $labels.service }} lost their results`,
            description: `{{ $value | humanizePercentage }} of the MCP requests of service {{ $labels.service }} in the last
${window} ended without their result after their stream had ended without it: the client resumed
and the replay brought progress but not the result, or it had no event id to resume from, or (2026-07-28)
it re-issued nothing; then the request reached its deadline or was aborted. A resume counted as a
continuation may be one of them.`,
          },
        ],
      },
      {
        name: 'resumewatch.server',
        comment: `Server defects: the MCP server's event store replays what it must not. Per server.address, so the
page goes to whoever runs that server. Counted with or without the client-side guard.`,
        rules: [
          {
            alert: 'McpServerConflictingTerminal',
            expr: `${names.serverDefects}{${LABEL_KIND}="${FindingKind.CONFLICTING_TERMINAL}"} > ${alerts.McpServerConflictingTerminal.threshold}`,
            for: alerts.McpServerConflictingTerminal.for,
            severity: 'critical',
            summary: `MCP server {{ $labels.server }} delivers conflicting results for one request`,
            description: `{{ $value | printf "%.0f" }} terminal event(s) in the last ${window} from MCP server
{{ $labels.server }} answered a (session, request) that already had a different result. Its
event store replayed another request's or another session's result: the application may hold
the wrong one, and another session's data may have leaked.`,
          },
          {
            alert: 'McpServerForeignReplay',
            expr: `${names.serverDefects}{${LABEL_KIND}="${FindingKind.FOREIGN_REPLAY}"} > ${alerts.McpServerForeignReplay.threshold}`,
            for: alerts.McpServerForeignReplay.for,
            severity: 'warning',
            summary: `MCP server {{ $labels.server }} replays events across streams`,
            description: `{{ $value | printf "%.0f" }} terminal event(s) in the last ${window} from MCP server
{{ $labels.server }} arrived on a stream that never carried their request (the listening
stream, or another request's stream). Its event store replays across streams, which the
transport forbids; clients without the guard see results twice.`,
          },
        ],
      },
    ],
  };
}
