import { FindingKind } from '@resumewatch/semconv';

/** The scenarios that run against the lab's server (SDK 1.x, the session era; `--server`). */
export const LAB_SERVER_SCENARIO_NAMES = [
  'seed-loop',
  'per-stream-dedup',
  'network-cut',
  'server-restart',
  'cursor-evicted',
  'sdk-error-resume',
  'healthy',
  'quiet-resume',
  'polling',
  'listening-replay',
  'endless-loop',
  'cancellation',
  'cross-session-store',
  'resume-loses-result',
] as const;

/** The scenarios that start their own server on the v2 SDK (the 2026-07-28 era, or both eras at once). */
export const V2_SERVER_SCENARIO_NAMES = [
  'modern-healthy',
  'modern-broken-reissue',
  'modern-honours-cancel',
  'modern-input-round',
  'dual-era',
  'session-client-modern-server',
] as const;

/**
 * The scenarios of MCP tasks. Each starts its own server (in-process, loopback; `serverUrl` and the
 * control endpoint are not used): the `task-*` ones the SDK 1.x task server (2025-11-25, SEP-1686) with
 * the SDK 1.x client's task API, the `modern-task-*` ones the v2 lab server's 2026-07-28 extension
 * `io.modelcontextprotocol/tasks` with a plain fetch client, `task-legacy-client-extension-server` the
 * SDK 1.x client against the extension server. Listed apart from the two lists above, whose every name
 * has a row in the detector README's tables.
 */
export const TASK_SCENARIO_NAMES = [
  'task-healthy',
  'task-reissue-after-lost-reply',
  'task-result-after-expiry',
  'task-poll-storm',
  'task-rereads',
  'task-cancelled',
  'modern-task-healthy',
  'modern-task-duplicate',
  'modern-task-lost',
  'modern-task-poll-storm',
  'task-legacy-client-extension-server',
] as const;

/**
 * The loop scenarios of the field (issue 39), each with its healthy twin. Each starts its own server
 * (the SDK 1.x server, in process, loopback; `dead-session-loop-400` server-everything, in a child
 * process) and runs the SDK 1.x client; `serverUrl` and the control endpoint are not used.
 */
export const LOOP_SCENARIO_NAMES = [
  'dead-session-loop',
  'dead-session-reinit',
  'dead-session-loop-400',
  'listening-stream-loop',
  'listening-stream-loop-closed',
  'listening-stream-stops',
  'listening-stream-retry-pace',
] as const;

export const SCENARIO_NAMES = [
  ...LAB_SERVER_SCENARIO_NAMES,
  ...V2_SERVER_SCENARIO_NAMES,
  ...TASK_SCENARIO_NAMES,
  ...LOOP_SCENARIO_NAMES,
] as const;

export type ScenarioName = (typeof SCENARIO_NAMES)[number];
export type LabServerScenarioName = (typeof LAB_SERVER_SCENARIO_NAMES)[number];
export type TaskScenarioName = (typeof TASK_SCENARIO_NAMES)[number];
export type LoopScenarioName = (typeof LOOP_SCENARIO_NAMES)[number];

/**
 * The finding kinds each task scenario should give, as the instrumented client and server see its
 * traffic: the lab's promise, for the integration tests to hold the detector to. Where another vantage
 * point sees less or more, its test says so and why (the gateway behind the scenario's cut wrote the
 * first reply whole: it knows what it wrote, not what the client read; a re-issue's orphaned first task
 * is, past its ttl, a lost result where its completion was seen). The re-issue scenarios give
 * `duplicate_task` instead when they send an idempotency key (`tasks.idempotencyKey`; the run's
 * `expectedFindings` says which). A re-issue's first task is never fetched: after its ttl (60 s by
 * default, longer than the run) it would also be a lost result.
 */
export const TASK_SCENARIO_EXPECTED_FINDINGS: Readonly<Record<TaskScenarioName, readonly FindingKind[]>> = {
  'task-healthy': [],
  'task-reissue-after-lost-reply': [FindingKind.POSSIBLE_DUPLICATE_TASK],
  'task-result-after-expiry': [FindingKind.LOST_TASK_RESULT],
  'task-poll-storm': [FindingKind.TASK_POLL_STORM],
  'task-rereads': [],
  'task-cancelled': [],
  'modern-task-healthy': [],
  'modern-task-duplicate': [FindingKind.POSSIBLE_DUPLICATE_TASK],
  'modern-task-lost': [FindingKind.LOST_TASK_RESULT],
  'modern-task-poll-storm': [FindingKind.TASK_POLL_STORM],
  'task-legacy-client-extension-server': [],
};

/**
 * The finding kinds each loop scenario should give, from every vantage point (the instrumented client,
 * `serve`, the gateway in front): the lab's promise, for the integration tests to hold the detector to.
 * The twins give none: a client that initializes anew after one refusal, one that stops after a 405, one
 * that re-opens at the server's `retry:` pace.
 */
export const LOOP_SCENARIO_EXPECTED_FINDINGS: Readonly<Record<LoopScenarioName, readonly FindingKind[]>> = {
  'dead-session-loop': [FindingKind.DEAD_SESSION_LOOP],
  'dead-session-reinit': [],
  'dead-session-loop-400': [FindingKind.DEAD_SESSION_LOOP],
  'listening-stream-loop': [FindingKind.LISTENING_STREAM_LOOP],
  'listening-stream-loop-closed': [FindingKind.LISTENING_STREAM_LOOP],
  'listening-stream-stops': [],
  'listening-stream-retry-pace': [],
};

/** The finding kinds a task scenario's run should give, given whether its re-issue carried an idempotency key. */
export function expectedTaskFindings(name: TaskScenarioName, keyed: boolean): FindingKind[] {
  const kinds = TASK_SCENARIO_EXPECTED_FINDINGS[name];
  return keyed
    ? kinds.map((kind) => (kind === FindingKind.POSSIBLE_DUPLICATE_TASK ? FindingKind.DUPLICATE_TASK : kind))
    : [...kinds];
}

export function isScenarioName(name: string): name is ScenarioName {
  return (SCENARIO_NAMES as readonly string[]).includes(name);
}

/** What one scenario run observed on the wire. */
export interface ScenarioSummary {
  scenario: ScenarioName;
  sessionId: string | undefined;
  /** Times the terminal response (result or error) of the scenario's main request reached the client. */
  terminalDeliveries: number;
  /** Distinct HTTP responses (streams) that carried that terminal response. */
  distinctTerminalStreams: number;
  /** Requests the client made to resume or reopen a stream after its first stream ended. */
  reconnects: number;
  /** HTTP status of every GET that carried Last-Event-ID, in order. */
  resumeStatuses: number[];
  /**
   * Responses (result or error) the client received per JSON-RPC request id, on every stream of the
   * scenario's session(s), initialize excluded. Set by the scenarios of issues 9 and 12.
   */
  resultsPerRequest?: Record<string, number>;
  /** Side effects the scenario's consumer ran (per-stream-dedup: the per-stream consumer). */
  sideEffectCount?: number;
  /** One line: what the run showed. */
  finding: string;
  /**
   * The task and loop scenarios: the finding kinds this run should give (`TASK_SCENARIO_EXPECTED_FINDINGS`,
   * `LOOP_SCENARIO_EXPECTED_FINDINGS`).
   */
  expectedFindings?: FindingKind[];
  durationMs: number;
  /** Scenario-specific facts. */
  details: Record<string, unknown>;
}

/** The human summary; it leaves the session id out (an Mcp-Session-Id is close to a credential), `--json` has it. */
export function formatSummary(summary: ScenarioSummary): string {
  const lines = [
    `scenario               ${summary.scenario}`,
    `terminal deliveries    ${summary.terminalDeliveries} on ${summary.distinctTerminalStreams} distinct stream(s)`,
    `reconnects             ${summary.reconnects}`,
    `resume statuses        ${summary.resumeStatuses.length > 0 ? summary.resumeStatuses.join(', ') : '-'}`,
  ];
  if (summary.resultsPerRequest !== undefined) {
    const entries = Object.entries(summary.resultsPerRequest);
    lines.push(
      `results per request    ${entries.length > 0 ? entries.map(([id, count]) => `${id}: ${count}`).join(', ') : '-'}`,
    );
  }
  if (summary.sideEffectCount !== undefined) lines.push(`side effects           ${summary.sideEffectCount}`);
  if (summary.expectedFindings !== undefined)
    lines.push(
      `expected findings      ${summary.expectedFindings.length > 0 ? summary.expectedFindings.join(', ') : '-'}`,
    );
  lines.push(`duration               ${summary.durationMs} ms`, '', summary.finding);
  return lines.join('\n');
}
