// The standard MCP metrics of the gateway: the real SDK 1.x client calls the lab's MCP server through a
// real gateway, whose /metrics then holds mcp_server_operation_duration_seconds (the OpenTelemetry MCP
// conventions' mcp.server.operation.duration) with the conventions' attributes as labels, tool names
// capped by --max-tools, and, under OpenMetrics, the trace of each bucket's latest request as exemplar.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startLabServer, type LabServer } from '@resumewatch/lab';
import {
  EXEMPLAR_TRACE_ID,
  LABEL_ERROR_TYPE,
  LABEL_GEN_AI_TOOL_NAME,
  LABEL_MCP_METHOD_NAME,
  LABEL_MCP_PROTOCOL_VERSION,
  LABEL_RPC_RESPONSE_STATUS_CODE,
  LABEL_SERVICE,
  METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS as METRIC,
  ROUTE_METRICS,
} from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startGateway, type RunningGateway } from '../src/index.js';
import { gatewayMcpUrl } from './helpers/e2e-rig.js';

const SERVICE = 'gateway-metrics-test';
const OPENMETRICS = 'application/openmetrics-text; version=1.0.0';

let lab: LabServer;
let gateway: RunningGateway;
const spans: ReadableSpan[] = [];
const recorder: SpanProcessor = {
  onStart: () => undefined,
  onEnd: (s) => void spans.push(s),
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

beforeAll(async () => {
  lab = await startLabServer();
  gateway = await startGateway({
    upstream: lab.url,
    port: 0,
    serviceName: SERVICE,
    spanProcessors: [recorder],
    // Two tool names keep theirs; every further one is `other`.
    detector: { config: { metricsPort: 0, maxTools: 2 }, output: null },
  });
  const client = new Client({ name: 'operation-metrics-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayMcpUrl(gateway, lab.url))));
  await client.callTool({ name: 'echo', arguments: { text: 'one' } });
  await client.callTool({ name: 'echo', arguments: { text: 'two' } });
  // A JSON-RPC error of the server (-32603).
  await expect(client.callTool({ name: 'fail', arguments: {} })).rejects.toThrow();
  // Past the cap: a tool streamed over SSE, a tool with a side effect, and an unknown one (-32602: the caller's error).
  await client.callTool({ name: 'stream_progress', arguments: { count: 5, delay: 1 } }, undefined, {
    onprogress: () => undefined,
  });
  await client.callTool({ name: 'side_effect', arguments: { key: `metrics-${Date.now()}` } });
  await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow();
  await client.close();
}, 30_000);

afterAll(async () => {
  await gateway?.close();
  await lab?.close();
});

async function scrape(accept?: string): Promise<string[]> {
  const res = await fetch(`http://127.0.0.1:${gateway.detector!.metricsPort}${ROUTE_METRICS}`, {
    headers: accept ? { accept } : {},
  });
  return (await res.text()).split('\n').filter((l) => l.startsWith(`${METRIC}_`));
}

/** The labels of an exposition line, as a record. */
function labelsOf(line: string): Record<string, string> {
  const inner = /\{([^}]*)\}/.exec(line)![1]!;
  return Object.fromEntries([...inner.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
}

/** _count of the tools/call series, by their labels other than service, method and version. */
async function toolCalls(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of await scrape()) {
    if (!line.startsWith(`${METRIC}_count{`)) continue;
    const labels = labelsOf(line);
    expect(labels[LABEL_SERVICE]).toBe(SERVICE);
    if (labels[LABEL_MCP_METHOD_NAME] !== 'tools/call') continue;
    expect(labels[LABEL_MCP_PROTOCOL_VERSION]).toBe(LATEST_PROTOCOL_VERSION);
    const key = [LABEL_GEN_AI_TOOL_NAME, LABEL_ERROR_TYPE, LABEL_RPC_RESPONSE_STATUS_CODE]
      .filter((name) => labels[name] !== undefined)
      .map((name) => `${name}=${labels[name]}`)
      .join(' ');
    out[key] = Number(line.split(' ').at(-1));
  }
  return out;
}

describe('gateway: mcp_server_operation_duration_seconds', () => {
  it('times each tools/call once, by tool, with the error of the server and the cap on tool names', async () => {
    const expected = {
      [`${LABEL_GEN_AI_TOOL_NAME}=echo`]: 2,
      [`${LABEL_GEN_AI_TOOL_NAME}=fail ${LABEL_ERROR_TYPE}=-32603 ${LABEL_RPC_RESPONSE_STATUS_CODE}=-32603`]: 1,
      [`${LABEL_GEN_AI_TOOL_NAME}=other`]: 2,
      // The unknown tool: its status code, and no error of the server's (the conventions' server status).
      [`${LABEL_GEN_AI_TOOL_NAME}=other ${LABEL_RPC_RESPONSE_STATUS_CODE}=-32602`]: 1,
    };
    await vi.waitFor(async () => expect(await toolCalls()).toEqual(expected), { timeout: 10_000 });
    // initialize is an operation too; no tool name on it.
    const initialize = (await scrape()).filter(
      (l) => l.startsWith(`${METRIC}_count{`) && labelsOf(l)[LABEL_MCP_METHOD_NAME] === 'initialize',
    );
    expect(initialize.map((l) => labelsOf(l)[LABEL_GEN_AI_TOOL_NAME])).toEqual([undefined]);
  });

  it('links each bucket to the trace of its latest request under OpenMetrics', async () => {
    const echoTraces = new Set(spans.filter((s) => s.name === 'tools/call echo').map((s) => s.spanContext().traceId));
    expect(echoTraces.size).toBe(2);
    const echoBuckets = (await scrape(OPENMETRICS)).filter(
      (l) => l.startsWith(`${METRIC}_bucket{`) && labelsOf(l)[LABEL_GEN_AI_TOOL_NAME] === 'echo',
    );
    const exemplars = echoBuckets
      .map((l) => new RegExp(` # \\{${EXEMPLAR_TRACE_ID}="([0-9a-f]{32})"\\} [0-9.e-]+ [0-9.]+$`).exec(l)?.[1])
      .filter((t) => t !== undefined);
    expect(exemplars.length).toBeGreaterThan(0);
    for (const trace of exemplars) expect(echoTraces).toContain(trace);
    // Prometheus text has no exemplars.
    expect((await scrape()).some((l) => l.includes(' # {'))).toBe(false);
  });
});
