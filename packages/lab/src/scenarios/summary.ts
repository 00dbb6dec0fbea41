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

export const SCENARIO_NAMES = [...LAB_SERVER_SCENARIO_NAMES, ...V2_SERVER_SCENARIO_NAMES] as const;

export type ScenarioName = (typeof SCENARIO_NAMES)[number];
export type LabServerScenarioName = (typeof LAB_SERVER_SCENARIO_NAMES)[number];

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
  lines.push(`duration               ${summary.durationMs} ms`, '', summary.finding);
  return lines.join('\n');
}
