// Every query of every panel selects only series the detector exports, recording rules of alerts/rules,
// or up; and the dashboards follow the conventions (datasource and service variables, units,
// $__rate_interval, exemplars on the findings counter).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  METRIC_FINDINGS_TOTAL,
  METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS,
  exportedSeriesNames,
  GATEWAY_METRICS,
  METRICS,
} from '@resumewatch/semconv';
import { config } from '../src/config.js';
import { VAR_DATASOURCE, VAR_SERVICE, dashboards, recordedByDashboards } from '../src/index.js';
import { metricNames, recordedNames, repoRoot } from '../../test/helpers/promql.js';

interface Target {
  expr: string;
  refId: string;
  exemplar?: boolean;
  datasource?: { type: string; uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Target[];
  fieldConfig?: { defaults?: { unit?: string } };
  datasource?: { type: string; uid: string };
}
interface Json {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: unknown; datasource?: { uid: string } }[] };
}

const generated: { file: string; json: Json }[] = dashboards().map((d) => ({
  file: d.file,
  json: JSON.parse(readFileSync(join(repoRoot, 'dashboards/generated', d.file), 'utf8')) as Json,
}));

function dataPanels(j: Json): Panel[] {
  return j.panels.filter((p) => p.type !== 'row');
}

// The detector's series, and the gateway's (its replicas serve both on one /metrics).
const known = new Set([...exportedSeriesNames([...METRICS, ...GATEWAY_METRICS]), ...recordedNames(), 'up']);

describe.each(generated.map((g) => [g.file, g.json] as const))('%s', (_file, json) => {
  it('has a datasource variable and a service variable', () => {
    const vars = json.templating.list;
    expect(vars.find((v) => v.name === VAR_DATASOURCE)?.type).toBe('datasource');
    expect(vars.find((v) => v.name === VAR_DATASOURCE)?.query).toBe('prometheus');
    const service = vars.find((v) => v.name === VAR_SERVICE);
    expect(service?.type).toBe('query');
    expect(service?.datasource?.uid).toBe(`\${${VAR_DATASOURCE}}`);
    for (const v of vars.filter((x) => x.type === 'query')) {
      for (const name of metricNames(String(v.query).replace(/^label_values\((.*),\s*\w+\)$/, '$1'))) {
        expect(known, `variable ${v.name}: ${name}`).toContain(name);
      }
    }
  });

  it('names only metrics the detector exports, recording rules, and up', () => {
    for (const panel of dataPanels(json)) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const t of panel.targets!) {
        const names = metricNames(t.expr);
        expect(names.length, `${panel.title}: ${t.expr}`).toBeGreaterThan(0);
        for (const name of names) expect(known, `${panel.title}: ${name}`).toContain(name);
      }
    }
  });

  it('gives every panel a unit, the datasource variable and distinct refIds', () => {
    const ids = new Set<number>();
    for (const panel of json.panels) {
      expect(ids.has(panel.id), `panel id ${panel.id}`).toBe(false);
      ids.add(panel.id);
    }
    for (const panel of dataPanels(json)) {
      expect(panel.fieldConfig?.defaults?.unit, panel.title).toMatch(/\S/);
      expect(panel.datasource?.uid, panel.title).toBe(`\${${VAR_DATASOURCE}}`);
      const refIds = panel.targets!.map((t) => t.refId);
      expect(new Set(refIds).size, panel.title).toBe(refIds.length);
      for (const t of panel.targets!) {
        expect(t.refId).toMatch(/^[A-Z]$/);
        expect(t.datasource?.uid).toBe(`\${${VAR_DATASOURCE}}`);
      }
    }
  });

  it('uses $__rate_interval for every range and filters by service where the metric has it', () => {
    for (const panel of dataPanels(json)) {
      for (const t of panel.targets!) {
        for (const m of t.expr.matchAll(/\[([^\]]+)\]/g))
          expect(m[1], `${panel.title}: ${t.expr}`).toBe('$__rate_interval');
        if (/\b(rate|increase)\(/.test(t.expr)) expect(t.expr).toContain('[$__rate_interval]');
        if (/service/.test(t.expr) && !/^up\{/.test(t.expr))
          expect(t.expr, panel.title).toContain(`=~"$${VAR_SERVICE}"`);
      }
    }
  });

  it('enables exemplars on every query of the findings counter and of the operation histogram buckets', () => {
    for (const panel of dataPanels(json)) {
      for (const t of panel.targets!) {
        const names = metricNames(t.expr);
        const traced =
          names.includes(METRIC_FINDINGS_TOTAL) ||
          names.includes(`${METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS}_bucket`);
        expect(t.exemplar ?? false, `${panel.title}: ${t.expr}`).toBe(traced);
      }
    }
  });
});

describe('dashboard set', () => {
  it('has an overview, a detector-health and an MCP server dashboard with distinct uids', () => {
    const uids = generated.map((g) => g.json.uid);
    expect(uids).toEqual(['resumewatch-overview', 'resumewatch-detector-health', 'resumewatch-mcp-server']);
  });

  it('reads only recording rules that alerts/rules defines', () => {
    for (const name of Object.values(recordedByDashboards(config))) expect(recordedNames()).toContain(name);
  });

  it('shows what the issue asks for', () => {
    const titles = (i: number) =>
      dataPanels(generated[i]!.json)
        .map((p) => p.title.toLowerCase())
        .join('\n');
    for (const word of [
      'duplicate terminal',
      'signatures',
      'storms active',
      'resume outcomes',
      'reattach',
      'findings by kind',
      'detection lag',
      'server defects by server',
      'storms ended by reason',
      'findings retracted',
      'session era',
      'negotiations refused',
      'task findings',
      'tasks created by shape',
      'task polls',
      'live tasks',
    ]) {
      expect(titles(0)).toContain(word);
    }
    for (const word of ['spans received by result', 'tracked requests', 'evictions', 'up'])
      expect(titles(1)).toContain(word);
    // The MCP server: rate, errors and latency by method and by tool.
    for (const word of [
      'requests by method',
      'errors by method',
      'error ratio',
      'latency p50 and p99 by method',
      'tool calls by tool',
      'tool errors by tool',
      'tool latency p99 by tool',
    ])
      expect(titles(2)).toContain(word);
  });
});
