// Test helpers shared by alerts/test, dashboards/test and test/ (the root's own dependencies resolve
// them). A small, deliberately conservative reader of PromQL used by the tests: it finds the metric names an
// expression selects, so tests can check that alerts and dashboards only use series that exist.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
  'atan2',
]);

/** Metric names selected by a PromQL expression (function names, keywords and labels excluded). */
export function metricNames(expr: string): string[] {
  let s = expr;
  s = s.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""'); // string literals
  s = s.replace(/\{[^}]*\}/g, ' '); // label matchers
  s = s.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' '); // label lists
  s = s.replace(/\[[^\]]*\]/g, ' '); // ranges and subqueries
  s = s.replace(/\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/g, ' '); // Grafana variables
  const out = new Set<string>();
  for (const m of s.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)) {
    const name = m[1]!;
    if (m[2]) continue; // function or aggregation call
    if (KEYWORDS.has(name.toLowerCase())) continue;
    const before = s.slice(0, m.index);
    if (/[0-9.]$/.test(before)) continue; // part of a number or duration (10m, 1e3)
    out.add(name);
  }
  return [...out];
}

interface RuleFileRule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface LoadedRule extends RuleFileRule {
  file: string;
  group: string;
}

export const repoRoot = join(import.meta.dirname, '../..');
const rulesDir = join(repoRoot, 'alerts/rules');

export function ruleFiles(): string[] {
  return readdirSync(rulesDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(rulesDir, f));
}

export function loadRules(): LoadedRule[] {
  const out: LoadedRule[] = [];
  for (const file of ruleFiles()) {
    const doc = parse(readFileSync(file, 'utf8')) as { groups: { name: string; rules: RuleFileRule[] }[] };
    for (const group of doc.groups) for (const rule of group.rules) out.push({ ...rule, file, group: group.name });
  }
  return out;
}

/** Names of the recording rules shipped in alerts/rules. */
export function recordedNames(): string[] {
  return loadRules().flatMap((r) => (r.record ? [r.record] : []));
}

/** The anchor GitHub gives a Markdown heading. */
function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

export function markdownAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inFence = !inFence;
    if (inFence) continue;
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (m) anchors.add(githubAnchor(m[1]!));
  }
  return anchors;
}

export function durationSeconds(d: string): number {
  let total = 0;
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
  const re = /(\d+)(ms|s|m|h|d|w|y)/g;
  let consumed = '';
  for (const m of d.matchAll(re)) {
    total += Number(m[1]) * units[m[2]!]!;
    consumed += m[0];
  }
  if (consumed !== d) throw new Error(`not a Prometheus duration: ${d}`);
  return total;
}

// The contract and the YAML reader, for the tests of alerts/, dashboards/ and test/ that read rules.
export * as semconv from '@resumewatch/semconv';
export { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
