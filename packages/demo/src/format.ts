import { formatFindingGroups, groupFindings } from '@resumewatch/detector';
import { formatRequestTimeline } from '@resumewatch/lab';
import { ProtocolEra } from '@resumewatch/semconv';
import type { DemoRun } from './demo.js';

/**
 * What the client saw. Resumes are told apart: sent (and how they were answered) or refused in the
 * process by the guard, which the lab's own one-line finding does not distinguish from a reconnect.
 */
function clientLines(run: DemoRun): string[] {
  const s = run.summary;
  const refused = Array.isArray(s.details.resumeErrors) ? (s.details.resumeErrors as unknown[]).length : 0;
  const sent = s.resumeStatuses.length;
  const resumes =
    refused > 0
      ? `${s.reconnects} attempted with the stale cursor: ${sent} sent${sent ? ` (answered ${s.resumeStatuses.join(', ')})` : ''}, ${refused} refused in the process by the guard`
      : `${sent} sent with the stale cursor${sent ? `, answered ${s.resumeStatuses.join(', ')}` : ''}`;
  return [
    `  session                ${s.sessionId ?? '-'}`,
    `  terminal deliveries    ${s.terminalDeliveries} on ${s.distinctTerminalStreams} distinct HTTP response(s) (${Math.max(0, s.terminalDeliveries - 1)} duplicate(s))`,
    `  resumes                ${resumes}`,
    `  duration               ${s.durationMs} ms`,
  ];
}

function findingLines(run: DemoRun): string {
  if (run.findings.length > 0) return formatFindingGroups(groupFindings(run.findings), { indent: '  ', times: false });
  return run.guarded ? '  none: the stale resume never left the process, so nothing was replayed' : '  none';
}

/** The third act (2026-07-28): no session and no resume; the call broken, re-issued, and its side effects. */
function modernLines(run: DemoRun): string[] {
  const s = run.summary;
  const first = (s.details.firstAttempt ?? {}) as { serverOutcome?: string; completedAfterCancellation?: boolean };
  const executions = Array.isArray(s.details.serverExecutions)
    ? (s.details.serverExecutions as Array<{ requestId: unknown; outcome: string }>)
    : [];
  return [
    `  protocol version       ${String(s.details.protocolVersion)} (no session, nothing to resume)`,
    `  first attempt          its stream broke mid-call; the server ${first.completedAfterCancellation ? 'finished it anyway' : `ended it (${String(first.serverOutcome)})`}`,
    `  re-issue               ${String(s.details.reissues)} by the application, with the first attempt's idempotency key (the guard)`,
    `  server executions      ${executions.map((e) => `request ${String(e.requestId)}: ${e.outcome}`).join(', ')}`,
    `  side effects           ${s.sideEffectCount ?? 0}`,
    `  duration               ${s.durationMs} ms`,
  ];
}

export function formatRun(run: DemoRun): string {
  if (run.era === ProtocolEra.STATELESS) {
    return [
      '== modern-broken-reissue (MCP 2026-07-28) with instrumentFetch({ guard: { idempotencyKey: true } }) and instrumentMcpServer',
      '',
      'the client (the real v2 SDK; the application re-issues the call the SDK failed) and the v2 server (it checks the key)',
      ...modernLines(run),
      '',
      "findings of the in-process detector (the client's and the server's spans, one trace per attempt)",
      findingLines(run),
      '  the detector says the first attempt ran after its stream closed and was re-issued; the key made the re-issue a no-op',
      '',
    ].join('\n');
  }
  const title = run.guarded
    ? 'seed-loop with instrumentFetch({ guard: true }): the guard enforced on the same wire'
    : 'seed-loop with instrumentFetch(): the failure, as the detector sees it';
  const timelines = run.timelines.length > 0 ? `\n${run.timelines.map(formatRequestTimeline).join('\n\n')}\n` : '';
  return [
    `== ${title}`,
    '',
    "the client (the lab's seed client: it reconnects on every clean close)",
    ...clientLines(run),
    timelines,
    'findings of the in-process detector, by request (counts stated once per request)',
    findingLines(run),
    '',
  ].join('\n');
}
