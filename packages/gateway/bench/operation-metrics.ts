/**
 * What mcp_server_operation_duration_seconds costs the gateway per request, in this process: the
 * built-in detector's path for a request span (Detector.ingest, DetectorMetrics) with the histogram, as
 * the gateway runs it, against the same path without it, on the same spans, alternating rounds.
 */
import * as S from '@resumewatch/semconv';
import { DetectorMetrics } from '@resumewatch/daemon';
import { Detector, type AttributeValue, type SpanRecord } from '@resumewatch/detector';
import { alternate, cpuOf } from '../../../bench/harness.js';

/** `n` request spans as the gateway records them: tools/call of 20 tools, 1 in 50 a JSON-RPC error, 1 in 50 a tool error. */
function gatewaySpans(n: number, now: number): SpanRecord[] {
  return Array.from({ length: n }, (_, i) => {
    const attributes: Record<string, AttributeValue> = {
      [S.ATTR_MCP_METHOD_NAME]: S.MCP_METHOD_TOOLS_CALL,
      [S.ATTR_JSONRPC_REQUEST_ID]: String(i),
      [S.ATTR_NETWORK_TRANSPORT]: 'tcp',
      [S.ATTR_NETWORK_PROTOCOL_NAME]: 'http',
      [S.ATTR_SERVER_ADDRESS]: '127.0.0.1',
      [S.ATTR_SERVER_PORT]: 8080,
      [S.ATTR_MCP_SESSION_ID]: `session-${i % 64}`,
      [S.ATTR_MCP_PROTOCOL_VERSION]: '2025-11-25',
      [S.ATTR_GEN_AI_TOOL_NAME]: `tool_${i % 20}`,
      [S.ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
    };
    if (i % 50 === 7)
      Object.assign(attributes, { [S.ATTR_ERROR_TYPE]: '-32603', [S.ATTR_RPC_RESPONSE_STATUS_CODE]: '-32603' });
    else if (i % 50 === 23) attributes[S.ATTR_ERROR_TYPE] = S.ErrorType.TOOL_ERROR;
    const id = (i + 1).toString(16);
    return {
      traceId: id.padStart(32, '0'),
      spanId: id.padStart(16, '0'),
      name: `${S.MCP_METHOD_TOOLS_CALL} tool_${i % 20}`,
      kind: 3,
      startTimeUnixMs: now + i,
      endTimeUnixMs: now + i + 0.5 + (i % 300),
      attributes,
      service: 'resumewatch-gateway',
    };
  });
}

/** µs CPU per request span, per round, with the histogram and without; the label sets it held. */
export async function measureOperationCost(rounds: number, requests: number) {
  const spans = gatewaySpans(requests, Date.now());
  const detectors = Object.fromEntries(
    (['with', 'without'] as const).map((v) => {
      const metrics = new DetectorMetrics();
      if (v === 'with') metrics.timeServerOperationsAtProxy();
      // Without: the metrics take no operation at all, as a door without operation metrics looks to the core.
      else Object.defineProperty(metrics, 'operation', { value: undefined });
      return [v, { detector: new Detector({ events: metrics }), metrics }];
    }),
  );
  const out = await alternate(['with', 'without'] as const, rounds, async (v) => {
    const d = detectors[v]!.detector;
    const cpu = await cpuOf(() => {
      for (const s of spans) d.ingest(s);
    });
    return cpu / requests;
  });
  const text = (await detectors.with!.metrics.render(undefined)).body;
  const series = text
    .split('\n')
    .filter((l) => l.startsWith(`${S.METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS}_count{`)).length;
  return { withHistogram: out.with, without: out.without, series };
}
