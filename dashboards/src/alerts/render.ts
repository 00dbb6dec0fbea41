// Writes a RuleFile as the YAML committed in alerts/rules: the layout a person would write, comments
// kept, so a reader of the YAML never needs the TypeScript.
import { runbookUrl } from '../config.js';
import type { MonitoringConfig } from '../config.js';
import { isAlertingRule } from './model.js';
import type { Rule, RuleFile } from './model.js';

const GENERATED =
  'Generated from dashboards/src/alerts by `pnpm --filter @resumewatch/dashboards generate`: edit the TypeScript.';

function comment(text: string | undefined, indent: string): string[] {
  return text === undefined ? [] : text.split('\n').map((line) => (line === '' ? `${indent}#` : `${indent}# ${line}`));
}

function indented(text: string, indent: string): string[] {
  return text.split('\n').map((line) => (line === '' ? '' : `${indent}${line}`));
}

function expr(text: string, indent: string): string[] {
  if (!text.includes('\n')) return [`${indent}expr: ${text}`];
  return [`${indent}expr: |`, ...indented(text.replace(/\n$/, ''), `${indent}  `)];
}

/** A single-quoted YAML scalar (a summary starts with `{{`, which plain YAML would read as a mapping). */
function quoted(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

function rule(r: Rule, config: MonitoringConfig): string[] {
  const pad = '        ';
  if (!isAlertingRule(r)) return [...comment(r.comment, '      '), `      - record: ${r.record}`, ...expr(r.expr, pad)];
  return [
    ...comment(r.comment, '      '),
    `      - alert: ${r.alert}`,
    ...expr(r.expr, pad),
    `${pad}for: ${r.for}`,
    `${pad}labels:`,
    `${pad}  severity: ${r.severity}`,
    `${pad}annotations:`,
    `${pad}  summary: ${quoted(r.summary)}`,
    `${pad}  description: >-`,
    ...indented(r.description, `${pad}    `),
    `${pad}  runbook_url: ${runbookUrl(r.alert, config.runbookBaseUrl)}`,
  ];
}

/** The exact text written to alerts/rules/<file>. Alerts are separated by a blank line, recording rules are not. */
export function renderRuleFile(file: RuleFile, config: MonitoringConfig): string {
  const lines = [...comment(`${GENERATED}\n\n${file.header}`, ''), 'groups:'];
  file.groups.forEach((group, g) => {
    if (g > 0) lines.push('');
    lines.push(...comment(group.comment, '  '), `  - name: ${group.name}`, '    rules:');
    group.rules.forEach((r, i) => {
      if (i > 0 && isAlertingRule(r)) lines.push('');
      lines.push(...rule(r, config));
    });
  });
  return `${lines.join('\n')}\n`;
}
