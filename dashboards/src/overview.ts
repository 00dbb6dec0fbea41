// resumewatch — overview: is the resumption failure happening, to whom, and how badly.
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import type { MonitoringConfig } from './config.js';
import { resumewatchDashboard, firingCount, row, serviceVariable, series, single } from './panels.js';
import { overviewQueries } from './queries.js';

const OVERVIEW_UID = 'resumewatch-overview';

export function overviewDashboard(config: MonitoringConfig): dashboard.Dashboard {
  const q = overviewQueries(config);
  const alerts = config.alerts;
  return resumewatchDashboard({
    title: 'resumewatch — overview',
    uid: OVERVIEW_UID,
    description:
      'MCP Streamable HTTP: session reattachment treated as stream continuation. Duplicate terminal events ' +
      'under distinct streams, reconnect storms, ambiguous empty replays and lost cursors, per service; and MCP ' +
      'tasks: duplicate tasks, lost task results and poll storms.',
    tags: ['resumewatch', 'mcp'],
    runbooks: config.runbookBaseUrl,
    dashboardsLink: 'Detector health',
  })
    .withVariable(serviceVariable())
    .withRow(row(100, 'The damage'))
    .withPanel(
      single({
        id: 1,
        title: `Duplicate terminal events, last ${config.findingsWindow}`,
        description:
          'Terminal events (JSON-RPC results and errors) delivered again for a (session, request) that already had one. ' +
          'Each one can run a side effect twice. Alert: McpDuplicateTerminalDelivered.',
        unit: 'short',
        query: { expr: q.duplicateTerminalsInWindow, legend: 'duplicates' },
        at: { w: 6, h: 5 },
        red: firingCount(alerts.McpDuplicateTerminalDelivered.threshold),
      }),
    )
    .withPanel(
      single({
        id: 2,
        title: `Full signatures, last ${config.findingsWindow}`,
        description:
          'Duplicate terminals under distinct stream identities and a reconnect storm of the same request, reported as soon ' +
          'as both are seen (while the loop runs). Alert: McpResumeLoopSignature.',
        unit: 'short',
        query: { expr: q.signaturesInWindow, legend: 'signatures' },
        at: { w: 6, h: 5 },
        red: firingCount(alerts.McpResumeLoopSignature.threshold),
      }),
    )
    .withPanel(
      single({
        id: 3,
        title: 'Reconnect storms active',
        description: 'Storms in progress now, all replicas. Alert: McpReconnectStorm.',
        unit: 'short',
        query: { expr: q.stormsActiveNow, legend: 'storms' },
        at: { w: 6, h: 5 },
        red: firingCount(alerts.McpReconnectStorm.threshold),
      }),
    )
    .withPanel(
      series({
        id: 4,
        title: 'Reconnect storm size (p50, p90)',
        description:
          'Reattach and resume attempts per ended storm: how long clients loop before the cursor is evicted.',
        unit: 'short',
        queries: [
          { expr: q.stormAttemptsP50, legend: 'p50 {{service}}' },
          { expr: q.stormAttemptsP90, legend: 'p90 {{service}}' },
        ],
        at: { w: 6, h: 5 },
      }),
    )
    .withPanel(
      series({
        id: 5,
        title: 'Duplicate terminal events by service',
        description: 'Rate of terminal events that were duplicates (duplicate="true"), by service.',
        unit: 'cps',
        queries: [{ expr: q.duplicateTerminalRate, legend: '{{service}}' }],
        at: { w: 8, h: 8 },
      }),
    )
    .withPanel(
      series({
        id: 6,
        title: 'Signatures by service',
        description: 'Rate of full-signature findings by service. Exemplar dots link to the trace of the finding.',
        unit: 'cps',
        queries: [{ expr: q.signatureRate, legend: '{{service}}', exemplar: true }],
        at: { w: 8, h: 8 },
      }),
    )
    .withPanel(
      series({
        id: 7,
        title: 'Reconnect storms active by service',
        description: 'Storms in progress, by service, summed over detector replicas.',
        unit: 'short',
        queries: [{ expr: q.stormsActive, legend: '{{service}}' }],
        at: { w: 8, h: 8 },
      }),
    )
    .withPanel(
      series({
        id: 22,
        title: `Requests that lost their result, share by service (last ${config.findingsWindow})`,
        description:
          "Of each service's MCP requests, the share that ended (its deadline, an abort) without its result after its " +
          'stream had ended without it: resumed and the replay brought progress, not the result; no event id to resume ' +
          'from; or, 2026-07-28, a broken stream not re-issued. Net of retractions (a late result, a re-issue). ' +
          'Alert: McpResultsLost.',
        unit: 'percentunit',
        queries: [{ expr: q.lostResultsShare, legend: '{{service}}' }],
        at: { w: 24, h: 7 },
      }),
    )
    .withRow(row(101, 'Resumption'))
    .withPanel(
      series({
        id: 8,
        title: 'Findings by kind',
        description:
          'Every finding of the detector by kind. Exemplar dots carry the trace_id of the span that completed the finding ' +
          'and open the trace in the trace backend.',
        unit: 'cps',
        queries: [{ expr: q.findingsByKind, legend: '{{kind}}', exemplar: true }],
        at: { w: 12, h: 9 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 9,
        title: 'Resume outcomes',
        description:
          'Requests carrying Last-Event-ID by outcome: continuation, poll, empty_replay, cursor_rejected, session_not_found, ' +
          'error (listening-stream resumes apart, below).',
        unit: 'reqps',
        queries: [{ expr: q.resumeOutcomes, legend: '{{outcome}}' }],
        at: { w: 12, h: 9 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 10,
        title: 'Session reattaches by acceptance',
        description:
          'Requests that re-presented an existing Mcp-Session-Id on a new stream, by whether the server accepted it.',
        unit: 'reqps',
        queries: [{ expr: q.reattachByAcceptance, legend: 'accepted={{accepted}}' }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 11,
        title: 'Reattach acceptance ratio',
        description:
          'Share of reattaches the server accepted. A high ratio with duplicate terminals means servers keep cursors of ' +
          'finished streams; a drop after a server restart means sessions were lost.',
        unit: 'percentunit',
        queries: [{ expr: q.reattachAcceptedRatio, legend: '{{service}}' }],
        at: { w: 8, h: 8 },
        max: 1,
      }),
    )
    .withPanel(
      series({
        id: 12,
        title: 'Terminal events: first vs duplicate',
        description: 'All terminal events seen, split by duplicate="false" (first delivery) and duplicate="true".',
        unit: 'cps',
        queries: [{ expr: q.terminalEventsByDuplicate, legend: 'duplicate={{duplicate}}' }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withRow(row(103, 'Server defects and outcomes of findings'))
    .withPanel(
      single({
        id: 14,
        title: `Server defects, last ${config.findingsWindow}`,
        description:
          'Terminal events that show an MCP server replaying what it must not (foreign_replay, conflicting_terminal), all ' +
          'servers. Alerts: McpServerConflictingTerminal, McpServerForeignReplay.',
        unit: 'short',
        query: { expr: q.serverDefectsInWindow, legend: 'defects' },
        at: { w: 6, h: 8 },
        red: Math.min(
          firingCount(alerts.McpServerConflictingTerminal.threshold),
          firingCount(alerts.McpServerForeignReplay.threshold),
        ),
      }),
    )
    .withPanel(
      series({
        id: 15,
        title: 'Server defects by server',
        description:
          'Foreign replays (a terminal on a stream that never carried its request) and conflicting terminals (a second, ' +
          'different result for one request), by MCP server (server.address). Tell the owner: scope the event store to ' +
          'the session, key streams by stream id, never replay across streams.',
        unit: 'cps',
        queries: [{ expr: q.serverDefectsByServer, legend: '{{server}} {{kind}}' }],
        at: { w: 18, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 16,
        title: 'Reconnect storms ended by reason',
        description:
          'How storms ended: evicted (the cursor or session was gone), quiet (the window passed without an attempt), ' +
          'shutdown or dropped (still running when the detector stopped or dropped the state). Signatures with no storm ' +
          'ending are endless loops.',
        unit: 'cps',
        queries: [{ expr: q.stormsEndedByReason, legend: '{{ended_by}}' }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 17,
        title: 'Findings retracted by kind',
        description:
          'Failed-resumption findings (ambiguous_empty_replay, cursor_lost) that a later continuation or terminal of the ' +
          'request contradicted. Alerts count findings net of these.',
        unit: 'cps',
        queries: [{ expr: q.findingsRetracted, legend: '{{kind}}' }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 18,
        title: 'Listening-stream resumes by outcome',
        description:
          "Resumes of the sessions' standalone GET streams: no request's resume, no request state, never a finding.",
        unit: 'reqps',
        queries: [{ expr: q.listeningResumes, legend: '{{outcome}}' }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 19,
        title: 'Requests still in the session era, share by service',
        description:
          "Of each service's MCP requests the server accepted, the share on protocol revisions up to 2025-11-25 " +
          '(sessions, Last-Event-ID resumption): the traffic the replay loop can still reach. Falls towards 0 as ' +
          "clients and servers move to 2026-07-28, which has no resumption. From the request spans' " +
          'mcp.protocol.version and how the server answered: a 2026-07-28 probe the server refused (the client then ' +
          'falls back to the session era) is not 2026-07-28 traffic; see the next panel.',
        unit: 'percentunit',
        queries: [{ expr: q.sessionEraShare, legend: '{{service}}' }],
        at: { w: 8, h: 8 },
      }),
    )
    .withPanel(
      series({
        id: 23,
        title: 'Negotiations refused by version',
        description:
          'Clients that asked for a protocol version their server refused, by the version asked: a server/discover ' +
          'probe, an initialize or a 2026-07-28 request answered 4xx or with a JSON-RPC error. Clients probing for ' +
          '2026-07-28 against servers that refuse it stay in the session era: their servers are the ones to upgrade ' +
          'before the share of the previous panel can fall.',
        unit: 'reqps',
        queries: [{ expr: q.negotiationsRefused, legend: '{{service}} {{version}}' }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 20,
        title: 'Duplicate executions by service (2026-07-28 era)',
        description:
          'Calls re-issued after their response stream broke, where the server ran the first attempt to completion all ' +
          'the same (duplicate_execution: the side effect ran twice) or no span told its fate (possible_duplicate_execution). ' +
          'The successor of the replay loop once traffic leaves the session era. Alerts: McpDuplicateExecution, ' +
          'McpPossibleDuplicateExecution.',
        unit: 'cps',
        queries: [{ expr: q.duplicateExecutions, legend: '{{service}} {{kind}}', exemplar: true }],
        at: { w: 8, h: 8 },
        stacked: true,
      }),
    )
    .withRow(row(104, 'MCP tasks'))
    .withPanel(
      single({
        id: 24,
        title: `Task findings, last ${config.findingsWindow}`,
        description:
          'Findings of MCP tasks (both shapes), net of retractions: a task-augmented call re-issued while its first ' +
          "task exists (duplicate_task, possible_duplicate_task), a task's outcome that never reached its client " +
          '(lost_task_result), a task polled far faster than announced or after it was gone (task_poll_storm). ' +
          'Alerts: McpDuplicateTask, McpPossibleDuplicateTask, McpTaskResultLost, McpTaskPollStorm.',
        unit: 'short',
        query: { expr: q.taskFindingsInWindow, legend: 'task findings' },
        at: { w: 6, h: 8 },
        red: Math.min(
          firingCount(alerts.McpDuplicateTask.threshold),
          firingCount(alerts.McpPossibleDuplicateTask.threshold),
          firingCount(alerts.McpTaskResultLost.threshold),
          firingCount(alerts.McpTaskPollStorm.threshold),
        ),
      }),
    )
    .withPanel(
      series({
        id: 25,
        title: 'Task findings by service and kind',
        description:
          'Rate of the findings of MCP tasks by service and kind. Exemplar dots link to the trace of the finding; ' +
          'search its mcp.task.id for the life of the task.',
        unit: 'cps',
        queries: [{ expr: q.taskFindings, legend: '{{service}} {{kind}}', exemplar: true }],
        at: { w: 18, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 26,
        title: 'Tasks created by shape',
        description:
          'Calls answered with a task handle, by service and shape: augmented (2025-11-25: the client asked with ' +
          'params.task) or extension (2026-07-28, io.modelcontextprotocol/tasks: the server decided).',
        unit: 'cps',
        queries: [{ expr: q.tasksCreatedByShape, legend: '{{service}} {{shape}}' }],
        at: { w: 6, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 27,
        title: 'Task polls by service',
        description: 'Rate of tasks/get polls, by service.',
        unit: 'reqps',
        queries: [{ expr: q.taskPolls, legend: '{{service}}' }],
        at: { w: 6, h: 8 },
      }),
    )
    .withPanel(
      series({
        id: 28,
        title: 'Task polls per task created',
        description:
          "Polls for each task created, by service. Far above a task's duration over its announced pollInterval is " +
          'clients that ignore the interval, before any poll storm is reported.',
        unit: 'short',
        queries: [{ expr: q.taskPollsPerTask, legend: '{{service}}' }],
        at: { w: 6, h: 8 },
      }),
    )
    .withPanel(
      series({
        id: 29,
        title: 'Live tasks',
        description:
          'Task records each detector replica holds now, all services together, and each service on the replica ' +
          'where it holds the most. The cap is per service and replica (--max-tasks, 10,000 by default); records ' +
          'dropped at the cap are counted on the detector-health dashboard. Alert: ResumewatchDetectorEvictingTasks.',
        unit: 'short',
        queries: [
          { expr: q.liveTasks, legend: '{{instance}}' },
          { expr: q.liveTasksNearestCap, legend: '{{service}} (highest replica)' },
        ],
        at: { w: 6, h: 8 },
      }),
    )
    .withRow(row(105, 'Client loops and sessions'))
    .withPanel(
      series({
        id: 30,
        title: 'Client loops by service and kind',
        description:
          'Clients that keep doing what the server refused: requests on a session id the server answered 404 (or 400) ' +
          'with no new initialize (dead_session_loop), GET listening streams re-opened after a 405 or after streams ' +
          'closed at once with no event (listening_stream_loop). Exemplar dots link to the trace of the first refusal. ' +
          'Alerts: McpDeadSessionLoop, McpListeningStreamLoop.',
        unit: 'cps',
        queries: [{ expr: q.loopFindings, legend: '{{service}} {{kind}}', exemplar: true }],
        at: { w: 12, h: 8 },
        stacked: true,
      }),
    )
    .withPanel(
      series({
        id: 31,
        title: 'Sessions started by service',
        description:
          'Sessions started (an initialize answered with a session id), by service. A client that starts a new session ' +
          'for every call is no finding, but its rate shows here next to its requests.',
        unit: 'ops',
        queries: [{ expr: q.sessionsStarted, legend: '{{service}}' }],
        at: { w: 12, h: 8 },
      }),
    )
    .withRow(row(102, 'Detection'))
    .withPanel(
      series({
        id: 13,
        title: 'Detection lag (p50, p99)',
        description: 'Seconds from the end of the span that completed a finding to the finding.',
        unit: 's',
        queries: [
          { expr: q.detectionLagP50, legend: 'p50' },
          { expr: q.detectionLagP99, legend: 'p99' },
        ],
        at: { w: 24, h: 7 },
      }),
    )
    .build();
}
