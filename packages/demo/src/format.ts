import type { Finding } from '@resumewatch/detector';
import { formatSummary } from '@resumewatch/lab';
import type { DemoRun } from './demo.js';

function describeFinding(finding: Finding): string {
  const facts = [
    finding.duplicates !== undefined ? `${finding.duplicates} duplicate(s)` : undefined,
    finding.attempts !== undefined ? `${finding.attempts} attempt(s)` : undefined,
    finding.ended_by !== undefined ? `ended: ${finding.ended_by}` : undefined,
    finding.status_code !== undefined ? `status ${finding.status_code}` : undefined,
  ].filter((fact) => fact !== undefined);
  const label = finding.record === undefined ? finding.kind : `${finding.kind} ${finding.record}`;
  return `  ${label.padEnd(24)} request ${finding.request_id}  trace ${finding.trace_id}${facts.length ? `  (${facts.join(', ')})` : ''}`;
}

export function formatRun(run: DemoRun): string {
  const title = run.guarded
    ? 'seed-loop with instrumentFetch({ guard: true }): the guard enforced on the same wire'
    : 'seed-loop with instrumentFetch(): the failure, as the detector sees it';
  const findings = run.findings.length > 0 ? run.findings.map(describeFinding).join('\n') : '  none';
  return `== ${title}\n\n${formatSummary(run.summary)}\n\nfindings\n${findings}\n`;
}
