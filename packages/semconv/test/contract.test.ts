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

/**
 * The names the project takes from the OpenTelemetry semantic conventions, by constant, with the name the
 * conventions' current registry gives it (read for issue 30 in open-telemetry/semantic-conventions-genai,
 * where the MCP conventions now live: model/mcp/registry.yaml, model/mcp/common.yaml and spans.yaml,
 * docs/gen-ai/mcp.md; and in open-telemetry/semantic-conventions for the names MCP borrows: jsonrpc.*,
 * rpc.response.status_code (which replaced rpc.jsonrpc.error_code), error.type, http.*, server.*,
 * network.*, service.name). A name the conventions rename is renamed here, with a note in the README.
 */
const FROM_CONVENTIONS: Record<string, string> = {
  // MCP (semantic-conventions-genai, model/mcp/registry.yaml): the registry's four attributes.
  ATTR_MCP_METHOD_NAME: 'mcp.method.name',
  ATTR_MCP_SESSION_ID: 'mcp.session.id',
  ATTR_MCP_PROTOCOL_VERSION: 'mcp.protocol.version',
  ATTR_MCP_RESOURCE_URI: 'mcp.resource.uri',
  // What the MCP spans borrow: JSON-RPC, RPC and GenAI.
  ATTR_JSONRPC_REQUEST_ID: 'jsonrpc.request.id',
  ATTR_RPC_RESPONSE_STATUS_CODE: 'rpc.response.status_code',
  ATTR_GEN_AI_TOOL_NAME: 'gen_ai.tool.name',
  ATTR_GEN_AI_PROMPT_NAME: 'gen_ai.prompt.name',
  ATTR_GEN_AI_OPERATION_NAME: 'gen_ai.operation.name',
  // General conventions.
  ATTR_ERROR_TYPE: 'error.type',
  ATTR_HTTP_REQUEST_METHOD: 'http.request.method',
  ATTR_HTTP_RESPONSE_STATUS_CODE: 'http.response.status_code',
  ATTR_SERVER_ADDRESS: 'server.address',
  ATTR_SERVER_PORT: 'server.port',
  ATTR_CLIENT_ADDRESS: 'client.address',
  ATTR_NETWORK_TRANSPORT: 'network.transport',
  ATTR_NETWORK_PROTOCOL_NAME: 'network.protocol.name',
  ATTR_SERVICE_NAME: 'service.name',
};

/**
 * Every `mcp.*` name the conventions' current MCP registry defines (attributes, and the metrics of
 * model/mcp/metrics.yaml). The project's own names must not take one of them.
 */
const CONVENTIONS_MCP_NAMES = [
  'mcp.method.name',
  'mcp.session.id',
  'mcp.protocol.version',
  'mcp.resource.uri',
  'mcp.client.operation.duration',
  'mcp.server.operation.duration',
  'mcp.client.session.duration',
  'mcp.server.session.duration',
];

/**
 * The project's own names: what the conventions lack (streams, event ids, reattaches, resumes, terminals,
 * the guard, re-issues), under `mcp.` as the conventions' MCP names are. docs/architecture.md lists them
 * as the project's proposal to the conventions.
 */
const EXTENSIONS = [
  // Spans.
  'mcp.session.reattach',
  'mcp.stream.resume',
  'mcp.request.terminal',
  'mcp.stream.listening_refused',
  // Attributes.
  'mcp.reattach.trigger',
  'mcp.reattach.accepted',
  'mcp.stream.id',
  'mcp.stream.previous.id',
  'mcp.stream.resumed_from.id',
  'mcp.stream.kind',
  'mcp.stream.retry_ms',
  'mcp.client.instance_id',
  'mcp.event.id',
  'mcp.resume.last_event_id',
  'mcp.resume.outcome',
  'mcp.resume.evidence',
  'mcp.resume.replayed_events',
  'mcp.resume.replayed_terminal',
  'mcp.request.terminal_observed',
  'mcp.terminal.outcome',
  'mcp.terminal.duplicate',
  'mcp.terminal.delivery',
  'mcp.terminal.foreign',
  'mcp.terminal.conflict',
  'mcp.terminal.first_stream.id',
  'mcp.guard.action',
  'mcp.guard.proof',
  'mcp.request.arguments.digest',
  'mcp.request.reissue_of.trace_id',
  'mcp.request.reissue_of.span_id',
  'mcp.request.reissue_of.same_key',
  'mcp.request.input_round',
  'mcp.request.completed_after_cancellation',
  'mcp.request.recovery',
  // MCP tasks (both shapes).
  'mcp.task.status',
  'mcp.task.id',
  'mcp.task.shape',
  'mcp.task.ttl_ms',
  'mcp.task.poll_interval_ms',
  'mcp.task.requested',
  'mcp.task.outcome_delivered',
  'mcp.task.gone',
];

/** The names the telemetry carries: spans and attributes, and any metric named the OpenTelemetry way (dotted). */
function emittedNames(): Map<string, string> {
  const out = new Map<string, string>();
  for (const prefix of ['SPAN_', 'ATTR_', 'METRIC_'])
    for (const [key, value] of stringConstants(prefix))
      if (prefix !== 'METRIC_' || value.includes('.')) out.set(value, key);
  return out;
}

/** The names of the table under the heading `## The project's names: a proposal ...` of docs/architecture.md. */
function proposedInArchitecture(): string[] {
  const doc = readFileSync(`${repoRoot}/docs/architecture.md`, 'utf8');
  const section = doc.split(/^## /m).find((s) => s.startsWith("The project's names"));
  if (section === undefined) throw new Error('docs/architecture.md has no section "## The project\'s names"');
  return [...section.matchAll(/^\| `([a-z_.]+)` \|/gm)].map((m) => m[1]!);
}

describe('the OpenTelemetry semantic conventions (issue 30)', () => {
  it('takes each conventions name as the current registry spells it', () => {
    for (const [constant, name] of Object.entries(FROM_CONVENTIONS))
      expect((semconv as Record<string, unknown>)[constant], constant).toBe(name);
  });

  it('emits no name that is neither taken from the conventions nor one of the listed extensions', () => {
    const conventions = new Set(Object.values(FROM_CONVENTIONS));
    const extensions = new Set(EXTENSIONS);
    const neither = [...emittedNames()].filter(([name]) => !conventions.has(name) && !extensions.has(name));
    expect(neither.map(([name, constant]) => `${constant} = ${name}`)).toEqual([]);
    // Every listed extension is emitted: the list is the project's names, no more.
    const emitted = emittedNames();
    expect(EXTENSIONS.filter((name) => !emitted.has(name))).toEqual([]);
    expect(new Set(EXTENSIONS).size).toBe(EXTENSIONS.length);
  });

  it("keeps the project's names under mcp., apart from every name of the conventions' MCP registry", () => {
    for (const name of EXTENSIONS) {
      expect(name).toMatch(/^mcp\.[a-z_]+(\.[a-z_]+)+$/);
      for (const taken of CONVENTIONS_MCP_NAMES) {
        expect(name, taken).not.toBe(taken);
        // Not an attribute below one of the conventions' names (`mcp.session.id.x`), nor above one.
        expect(name.startsWith(`${taken}.`) || taken.startsWith(`${name}.`), `${name} / ${taken}`).toBe(false);
      }
    }
    for (const name of Object.values(FROM_CONVENTIONS).filter((n) => n.startsWith('mcp.')))
      expect(CONVENTIONS_MCP_NAMES).toContain(name);
  });

  it("lists the project's names in docs/architecture.md, as its proposal to the conventions", () => {
    expect([...proposedInArchitecture()].sort()).toEqual([...EXTENSIONS].sort());
  });
});

describe('telemetry contract', () => {
  it('keeps the names the issues fixed', () => {
    expect(semconv.SPAN_SESSION_REATTACH).toBe('mcp.session.reattach');
    expect(semconv.SPAN_STREAM_RESUME).toBe('mcp.stream.resume');
    expect(semconv.SPAN_REQUEST_TERMINAL).toBe('mcp.request.terminal');
    expect(semconv.SPAN_LISTENING_REFUSED).toBe('mcp.stream.listening_refused');
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
      'dead_session_loop',
      'duplicate_execution',
      'duplicate_task',
      'duplicate_terminal',
      'foreign_replay',
      'listening_stream_loop',
      'lost_result',
      'lost_task_result',
      'possible_duplicate_execution',
      'possible_duplicate_task',
      'reconnect_storm',
      'resume_after_terminal',
      'signature',
      'task_poll_storm',
    ]);
    expect(semconv.SERVER_DEFECT_KINDS).toEqual(['foreign_replay', 'conflicting_terminal']);
    expect(semconv.RETRACTABLE_KINDS).toEqual([
      'ambiguous_empty_replay',
      'cursor_lost',
      'lost_result',
      'lost_task_result',
    ]);
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

  it('names mcp.server.operation.duration and its labels as the OpenTelemetry → Prometheus mapping does', () => {
    expect(semconv.METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS).toBe('mcp_server_operation_duration_seconds');
    const histogram = semconv.METRICS.find((m) => m.convention === semconv.MCP_SERVER_OPERATION_DURATION)!;
    expect(histogram.name).toBe(semconv.METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS);
    expect(histogram.type).toBe('histogram');
    expect(histogram.labelNames).toEqual([
      'service',
      'mcp_method_name',
      'gen_ai_tool_name',
      'error_type',
      'mcp_protocol_version',
      'rpc_response_status_code',
    ]);
    // The conventions' advice for the histogram's boundaries, in seconds.
    expect(histogram.buckets).toEqual([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]);
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
      // A metric of the OpenTelemetry conventions keeps their name, mapped as OpenTelemetry maps it to Prometheus.
      if (metric.convention) expect(metric.name).toBe(`${metric.convention.replaceAll('.', '_')}_seconds`);
      else expect(metric.name).toMatch(/^resumewatch_[a-z_]+$/);
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
