import { formatFindingGroups, groupFindings } from '@resumewatch/detector';
import { formatRequestTimeline } from '@resumewatch/lab';
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

export function formatRun(run: DemoRun): string {
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
