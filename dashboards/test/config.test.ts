// Every threshold, `for:` and window of the generated rules, and every alert threshold a dashboard shows,
// comes from dashboards/src/config.ts. The rules and dashboards are generated with a configuration whose
// every number and duration is changed to a value of its own; a number left in an expression or a
// `for:` must then be one of those values (or PromQL's own, listed in STRUCTURAL), and each of those
// values must show up. A literal written into a rule instead of read from the config fails here.
import { describe, expect, it } from 'vitest';
import { renderedRuleFiles } from '../src/alerts/index.js';
import { config } from '../src/config.js';
import type { MonitoringConfig } from '../src/config.js';
import { dashboards, recordedByDashboards, render } from '../src/index.js';
import { loadRules, parseYaml } from '../../test/helpers/promql.js';

interface RenderedRule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  annotations?: Record<string, string>;
}

/** `config` with every number and duration replaced by a distinct value, and those values as PromQL writes them. */
function perturbed(base: MonitoringConfig): { config: MonitoringConfig; markers: Set<string> } {
  const markers: string[] = [];
  const change = (value: unknown, key: string): unknown => {
    if (typeof value === 'number') {
      // A quantile stays within (0, 1); every other number is a whole number no default uses.
      const marker = key === 'quantile' ? Number((0.5 + (markers.length + 1) / 1000).toFixed(3)) : 41 + markers.length;
      markers.push(String(marker));
      return marker;
    }
    if (typeof value === 'string' && /^\d+[smhd]$/.test(value)) {
      const marker = `${301 + markers.length}s`;
      markers.push(marker);
      return marker;
    }
    if (typeof value === 'object' && value !== null)
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, change(v, k)]));
    return value;
  };
  return { config: change(base, '') as MonitoringConfig, markers: new Set(markers) };
}

/** The numbers of PromQL itself, not tunings: `up == 0` (down), `up == 1` (up), `x * 0` and `clamp_min(x, 0)`. */
const STRUCTURAL = [/\bup\{[^}]*\} == [01]\b/g, / \* 0\b/g, /,\s+0\s*\)/g];

/** The number and duration literals of a PromQL expression, outside strings and names. */
function numberLiterals(expr: string): string[] {
  let s = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  for (const pattern of STRUCTURAL) s = s.replace(pattern, ' ');
  const tokens = s.match(/[A-Za-z_:][A-Za-z0-9_:]*|\d+(?:\.\d+)?(?:ms|[smhdwy])?/g) ?? [];
  return tokens.filter((t) => /^\d/.test(t));
}

const { config: changed, markers } = perturbed(config);

function rulesOf(c: MonitoringConfig): { files: Map<string, string>; rules: RenderedRule[] } {
  const files = renderedRuleFiles(c);
  const rules = [...files.values()].flatMap((text) =>
    (parseYaml(text) as { groups: { rules: RenderedRule[] }[] }).groups.flatMap((g) => g.rules),
  );
  return { files, rules };
}

describe('dashboards/src/config.ts', () => {
  const { files, rules } = rulesOf(changed);

  it('changes every number and duration of the test configuration', () => {
    expect(markers.size).toBeGreaterThan(30);
  });

  it('is the only source of the numbers of every rule expression and for:', () => {
    for (const rule of rules) {
      const name = rule.alert ?? rule.record;
      for (const literal of numberLiterals(rule.expr))
        expect(markers, `${name}: ${literal} in ${rule.expr}`).toContain(literal);
      if (rule.for !== undefined) expect(markers, `${name}: for: ${rule.for}`).toContain(rule.for);
    }
  });

  it('reaches the rules with every value it holds', () => {
    const used = new Set(rules.flatMap((r) => [...numberLiterals(r.expr), ...(r.for === undefined ? [] : [r.for])]));
    for (const marker of markers) expect(used, `config value ${marker} is read by no rule`).toContain(marker);
  });

  it('names the windows of recording rules and annotations after the configuration', () => {
    // A duration spelled out for a reader (`10 minutes`) must be one of the configuration's too.
    const spelledOut = [...files.values()].flatMap((text) => [
      ...text.matchAll(/\b(\d+) (second|minute|hour|day)s?\b/g),
    ]);
    expect(spelledOut.length).toBeGreaterThan(0);
    for (const m of spelledOut) expect(markers, m[0]).toContain(`${m[1]}s`);
    const records = rules.flatMap((r) => (r.record === undefined ? [] : [r.record]));
    for (const record of records) expect(record, 'a window in a name is a configured one').not.toMatch(/\d+[mhd]\b/);
  });

  it('reads the recording rules the dashboards read under their configured names', () => {
    const records = rules.flatMap((r) => (r.record === undefined ? [] : [r.record]));
    for (const name of Object.values(recordedByDashboards(changed))) expect(records).toContain(name);
  });

  it('tunes exactly the alerts of alerts/rules', () => {
    const alertNames = loadRules()
      .flatMap((r) => (r.alert === undefined ? [] : [r.alert]))
      .sort();
    expect(Object.keys(config.alerts).sort()).toEqual(alertNames);
  });
});

interface StatPanel {
  type: string;
  title: string;
  description: string;
  options?: unknown;
  fieldConfig: { defaults: { thresholds?: { steps: { value: number | null; color: string }[] } } };
}

describe('the dashboards under dashboards/src/config.ts', () => {
  const json = dashboards(changed).map((d) => JSON.parse(render(d.dashboard)) as { panels: StatPanel[] });
  const panels = json.flatMap((d) => d.panels);
  const thresholds = changed.alerts as Record<string, { threshold?: number }>;

  it('turns a stat red where the alert it names fires', () => {
    const checked = panels.filter((p) => p.type === 'stat' && /Alerts?: /.test(p.description));
    let withThreshold = 0;
    for (const panel of checked) {
      const named = [...panel.description.matchAll(/\b((?:Mcp|Resumewatch)[A-Za-z]+)\b/g)].map((m) => m[1]!);
      const limits = named.flatMap((a) => (thresholds[a]?.threshold === undefined ? [] : [thresholds[a].threshold]));
      if (limits.length === 0) continue;
      withThreshold += 1;
      const red = panel.fieldConfig.defaults.thresholds!.steps.find((s) => s.color === 'red')!.value;
      expect(red, panel.title).toBe(Math.min(...limits.map((t) => Math.floor(t) + 1)));
    }
    expect(withThreshold).toBeGreaterThan(0);
  });

  it('titles and describes the alert values with the configured ones', () => {
    const text = JSON.stringify(json);
    expect(text).toContain(`last ${changed.findingsWindow}`);
    expect(text).not.toMatch(/last \d+m\b/);
    expect(text).toContain(
      `The alert threshold is ${changed.alerts.ResumewatchDetectorRejectingSpans.threshold * 100}%`,
    );
  });
});
