// Runs promtool on the shipped rules and their unit tests, and checks the conventions every alert must
// follow: CamelCase name, severity, a `for:` that does not flap, templated summary and description, and
// a runbook_url whose anchor exists in docs/runbooks.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { config } from '../../dashboards/src/config.js';
import { requireTools } from '../../test/helpers/required-tools.js';
import {
  durationSeconds,
  loadRules,
  markdownAnchors,
  metricNames,
  parseYaml,
  recordedNames,
  repoRoot,
  ruleFiles,
  semconv,
} from '../../test/helpers/promql.js';

// The runbook base and the detectors' selector are the generator's configuration (rules/*.yaml are
// generated from dashboards/src/alerts with dashboards/src/config.ts).
const RUNBOOK_BASE = `${config.runbookBaseUrl}#`;
const promtoolTestsDir = join(repoRoot, 'alerts/test/promtool');
const promtoolTests = readdirSync(promtoolTestsDir)
  .filter((f) => f.endsWith('.test.yaml'))
  .sort()
  .map((f) => join(promtoolTestsDir, f));

function promtool(args: string[]): { status: number | null; output: string } {
  requireTools('promtool');
  const r = spawnSync('promtool', args, { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw r.error;
  return { status: r.status, output: `${r.stdout}\n${r.stderr}` };
}

const rules = loadRules();
const alerts = rules.filter((r) => r.alert);

describe('alerts/rules with promtool', () => {
  it('has promtool on the PATH (apt-get install prometheus)', () => {
    requireTools('promtool');
    expect(execFileSync('promtool', ['--version'], { encoding: 'utf8' })).toMatch(/promtool, version/);
  });

  it('passes promtool check rules', () => {
    const r = promtool(['check', 'rules', ...ruleFiles()]);
    expect(r.output).not.toMatch(/FAILED|WARNING/);
    expect(r.status, r.output).toBe(0);
  });

  it('passes promtool test rules', () => {
    const r = promtool(['test', 'rules', ...promtoolTests]);
    expect(r.status, r.output).toBe(0);
  });
});

describe('alert conventions', () => {
  const runbook = readFileSync(join(repoRoot, 'docs/runbooks.md'), 'utf8');
  const anchors = markdownAnchors(runbook);

  it('covers the failure and the detector', () => {
    const names = alerts.map((a) => a.alert);
    for (const required of [
      'McpDuplicateTerminalDelivered',
      'McpResumeLoopSignature',
      'McpReconnectStorm',
      'McpResumeAfterTerminal',
      'McpAmbiguousEmptyReplay',
      'McpResumeCursorLost',
      'McpCompletedAfterCancellation',
      'McpDuplicateTask',
      'McpPossibleDuplicateTask',
      'McpTaskResultLost',
      'McpTaskPollStorm',
      'McpDeadSessionLoop',
      'McpListeningStreamLoop',
      'ResumewatchDetectorDown',
      'ResumewatchDetectorNoSpans',
      'ResumewatchDetectorRejectingSpans',
      'ResumewatchDetectorEvictingState',
      'ResumewatchDetectorEvictingTasks',
    ]) {
      expect(names).toContain(required);
    }
    expect(new Set(names).size).toBe(names.length);
  });

  it.each(alerts.map((a) => [a.alert!, a] as const))('%s follows the conventions', (name, alert) => {
    expect(name).toMatch(/^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+$/);
    expect(['critical', 'warning', 'info']).toContain(alert.labels?.severity);
    expect(alert.for, 'a for: duration').toBeDefined();
    expect(durationSeconds(alert.for!)).toBeGreaterThanOrEqual(60);
    const ann = alert.annotations ?? {};
    expect(Object.keys(ann).sort()).toEqual(['description', 'runbook_url', 'summary']);
    expect(ann.summary!.length).toBeGreaterThan(10);
    // the description says which series and which value
    expect(ann.description).toMatch(/\{\{[^}]*\$labels\.[a-z_]+[^}]*\}\}/);
    expect(ann.description).toMatch(/\{\{[^}]*\$value[^}]*\}\}/);
    expect(ann.runbook_url!.startsWith(RUNBOOK_BASE)).toBe(true);
    const anchor = ann.runbook_url!.slice(RUNBOOK_BASE.length);
    expect(anchor).toBe(name.toLowerCase());
    expect(anchors.has(anchor), `docs/runbooks.md has a heading for #${anchor}`).toBe(true);
  });

  it('each runbook section says how to confirm and what to do', () => {
    for (const alert of alerts) {
      const start = runbook.indexOf(`\n## ${alert.alert}\n`);
      expect(start, alert.alert).toBeGreaterThan(0);
      const end = runbook.indexOf('\n## ', start + 4);
      const section = runbook.slice(start, end < 0 ? undefined : end);
      expect(section, alert.alert).toMatch(/What it means/);
      expect(section, alert.alert).toMatch(/What to do/);
      expect(section, alert.alert).toContain(alert.labels!.severity!);
    }
  });

  it('uses only series the detector exports, recording rules, and up', () => {
    const known = new Set([
      ...semconv.exportedSeriesNames([...semconv.METRICS, ...semconv.GATEWAY_METRICS]),
      ...recordedNames(),
      'up',
    ]);
    for (const rule of rules) {
      for (const name of metricNames(rule.expr)) expect(known, `${rule.alert ?? rule.record}: ${name}`).toContain(name);
    }
  });

  it('selects the detectors only with the configured selector', () => {
    const selectors = rules.flatMap((rule) => [...rule.expr.matchAll(/\bup\{([^}]*)\}/g)].map((m) => m[1]));
    expect(selectors.length).toBeGreaterThan(0);
    for (const selector of selectors) expect(selector).toBe(config.detectorSelector);
  });

  it('uses only label values the contract defines', () => {
    const kinds = new Set<string>(semconv.FINDING_KINDS);
    const results = new Set<string>(Object.values(semconv.SpanReceivedResult));
    for (const rule of rules) {
      for (const m of rule.expr.matchAll(/\bkind="([^"]+)"/g)) expect(kinds).toContain(m[1]);
      for (const m of rule.expr.matchAll(/\bresult="([^"]+)"/g)) expect(results).toContain(m[1]);
    }
  });

  it('has a promtool case where each alert fires and one where it must not', () => {
    const fires = new Map<string, number>();
    const silent = new Map<string, number>();
    for (const file of promtoolTests) {
      const doc = parseYaml(readFileSync(file, 'utf8')) as {
        tests: { alert_rule_test?: { alertname: string; exp_alerts?: { exp_labels?: Record<string, string> }[] }[] }[];
      };
      for (const test of doc.tests) {
        for (const t of test.alert_rule_test ?? []) {
          const exp = t.exp_alerts ?? [];
          const map = exp.length > 0 ? fires : silent;
          map.set(t.alertname, (map.get(t.alertname) ?? 0) + 1);
          const alert = alerts.find((a) => a.alert === t.alertname);
          expect(alert, `promtool test names an existing alert: ${t.alertname}`).toBeDefined();
          for (const e of exp) expect(e.exp_labels?.severity).toBe(alert!.labels!.severity);
        }
      }
    }
    for (const alert of alerts) {
      expect(fires.get(alert.alert!) ?? 0, `${alert.alert} fires in a promtool test`).toBeGreaterThan(0);
      expect(silent.get(alert.alert!) ?? 0, `${alert.alert} stays silent in a promtool test`).toBeGreaterThan(0);
    }
  });
});
