import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as semconv from '../src/index.js';
import { repoRoot, sourceFiles } from './helpers/source-files.js';

function stringConstants(prefix: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, value] of Object.entries(semconv)) {
    if (key.startsWith(prefix) && typeof value === 'string') out.set(key, value);
  }
  return out;
}

describe('telemetry contract', () => {
  it('keeps the names the issues fixed', () => {
    expect(semconv.SPAN_SESSION_REATTACH).toBe('mcp.session.reattach');
    expect(semconv.SPAN_STREAM_RESUME).toBe('mcp.stream.resume');
    expect(semconv.SPAN_REQUEST_TERMINAL).toBe('mcp.request.terminal');
    expect(semconv.TRACER_SCOPE).toBe('@resumewatch/instrumentation');
    expect(Object.values(semconv.ResumeOutcome).sort()).toEqual([
      'continuation',
      'cursor_rejected',
      'empty_replay',
      'error',
      'partial_replay',
      'poll',
      'session_not_found',
    ]);
    expect([...semconv.FINDING_KINDS].sort()).toEqual([
      'ambiguous_empty_replay',
      'completed_after_cancellation',
      'conflicting_terminal',
      'cursor_lost',
      'duplicate_execution',
      'duplicate_terminal',
      'foreign_replay',
      'lost_result',
      'possible_duplicate_execution',
      'reconnect_storm',
      'resume_after_terminal',
      'signature',
    ]);
    expect(semconv.SERVER_DEFECT_KINDS).toEqual(['foreign_replay', 'conflicting_terminal']);
    expect(semconv.RETRACTABLE_KINDS).toEqual(['ambiguous_empty_replay', 'cursor_lost', 'lost_result']);
    expect(Object.values(semconv.FindingRecord).sort()).toEqual(['outcome_corrected', 'retraction', 'storm_ended']);
    expect(Object.values(semconv.RequestRecovery).sort()).toEqual([
      'no_event_id',
      'not_reissued',
      'not_resumed',
      'resumed',
    ]);
    expect(Object.values(semconv.StormEnd).sort()).toEqual(['dropped', 'evicted', 'quiet', 'shutdown']);
    expect(semconv.METRIC_SERVER_DEFECTS_TOTAL).toBe('resumewatch_server_defects_total');
    expect(semconv.METRIC_RECONNECT_STORMS_ENDED_TOTAL).toBe('resumewatch_reconnect_storms_ended_total');
    expect(semconv.METRIC_FINDINGS_RETRACTED_TOTAL).toBe('resumewatch_findings_retracted_total');
    expect(semconv.METRIC_LISTENING_RESUMES_TOTAL).toBe('resumewatch_listening_resumes_total');
    expect(semconv.METRIC_RESUME_OUTCOMES_CORRECTED_TOTAL).toBe('resumewatch_resume_outcomes_corrected_total');
    expect(semconv.ATTR_MCP_REQUEST_RECOVERY).toBe('mcp.request.recovery');
  });

  it('names the request span as the MCP semantic conventions do', () => {
    expect(semconv.mcpRequestSpanName('tools/call', 'stream_progress')).toBe('tools/call stream_progress');
    expect(semconv.mcpRequestSpanName('initialize')).toBe('initialize');
  });

  it('has no two attribute constants with one name', () => {
    const values = [...stringConstants('ATTR_').values()];
    expect(new Set(values).size).toBe(values.length);
  });

  it('follows Prometheus naming for every metric', () => {
    const all = [...semconv.METRICS, ...semconv.GATEWAY_METRICS];
    const names = all.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    for (const metric of all) {
      expect(metric.name).toMatch(/^resumewatch_[a-z_]+$/);
      if (metric.type === 'counter') expect(metric.name).toMatch(/_total$/);
      else expect(metric.name).not.toMatch(/_total$/);
      for (const label of metric.labelNames) {
        expect(stringConstants('LABEL_').has(`LABEL_${label.toUpperCase()}`)).toBe(true);
      }
      if (metric.type === 'histogram') expect(metric.buckets?.length).toBeGreaterThan(0);
    }
    // The gateway's metrics are its own: the detector's /metrics of `serve` does not carry them.
    for (const metric of semconv.GATEWAY_METRICS) expect(metric.name).toMatch(/^resumewatch_gateway_/);
    expect(stringConstants('METRIC_').size).toBe(all.length);
  });

  it('is the only place that spells span, attribute and metric names', () => {
    const names = new Set([
      ...stringConstants('SPAN_').values(),
      ...stringConstants('ATTR_').values(),
      ...stringConstants('METRIC_').values(),
    ]);
    const offenders: string[] = [];
    for (const file of sourceFiles(['packages', 'dashboards/src'])) {
      const rel = relative(repoRoot, file);
      if (rel.startsWith('packages/semconv/') || rel.includes('/test/')) continue;
      const text = readFileSync(file, 'utf8');
      for (const literal of text.matchAll(/(['"`])([a-z_.]+)\1/g)) {
        if (names.has(literal[2]!)) offenders.push(`${rel}: ${literal[0]}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
