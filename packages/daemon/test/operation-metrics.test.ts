// mcp_server_operation_duration_seconds (the OpenTelemetry MCP conventions' mcp.server.operation.duration):
// the detector hands every request span to the metrics, which time the server's operations with them.
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ErrorType,
  LABEL_ERROR_TYPE,
  LABEL_GEN_AI_TOOL_NAME,
  LABEL_MCP_METHOD_NAME,
  LABEL_MCP_PROTOCOL_VERSION,
  LABEL_RPC_RESPONSE_STATUS_CODE,
  LABEL_SERVICE,
  METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS as METRIC,
  METRIC_TERMINAL_EVENTS_TOTAL,
  SPAN_REQUEST_TERMINAL,
} from '@resumewatch/semconv';
import { Detector, type AttributeValue, type SpanRecord } from '@resumewatch/detector';
import { describe, expect, it } from 'vitest';
import { DetectorMetrics } from '../src/index.js';
import { T0, span, traceOf } from '../../detector/test/helpers/spans.js';

const OPENMETRICS = 'application/openmetrics-text; version=1.0.0';
const SERVER = 2;
const CLIENT = 3;

function wired(maxTools?: number) {
  const metrics = new DetectorMetrics(100, undefined, maxTools);
  const detector = new Detector({ events: metrics });
  return { metrics, detector };
}

/** A request span of `ms` milliseconds. */
function request(
  attrs: Record<string, AttributeValue>,
  ms: number,
  opts: { kind?: SpanRecord['kind']; service?: string; trace?: string } = {},
): SpanRecord {
  const s = span(`${String(attrs[ATTR_MCP_METHOD_NAME])}`, T0, attrs, { kind: SERVER, service: 'srv', ...opts });
  s.endTimeUnixMs = T0 + ms;
  return s;
}
const call = (tool: string, extra: Record<string, AttributeValue> = {}) => ({
  [ATTR_MCP_METHOD_NAME]: 'tools/call',
  [ATTR_GEN_AI_TOOL_NAME]: tool,
  [ATTR_MCP_PROTOCOL_VERSION]: '2025-11-25',
  ...extra,
});

/** The histogram's lines of one kind (_bucket, _sum, _count), sorted. */
async function lines(metrics: DetectorMetrics, suffix: string, accept?: string): Promise<string[]> {
  const { body } = await metrics.render(accept);
  return body
    .split('\n')
    .filter((l) => l.startsWith(`${METRIC}${suffix}{`))
    .sort();
}

/** The labels of a line, as a record. */
function labelsOf(line: string): Record<string, string> {
  const inner = /\{([^}]*)\}/.exec(line)![1]!;
  return Object.fromEntries([...inner.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
}

/** _count per label set, without the service label: label=value pairs sorted, joined by a space. */
async function counts(metrics: DetectorMetrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of await lines(metrics, '_count')) {
    const { [LABEL_SERVICE]: _service, ...labels } = labelsOf(line);
    const key = Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .sort()
      .join(' ');
    out[key] = Number(line.split(' ').at(-1));
  }
  return out;
}

describe('mcp_server_operation_duration_seconds', () => {
  it('times each server request span once, in seconds, with the conventions attributes as labels', async () => {
    const { metrics, detector } = wired();
    detector.ingest(request(call('echo'), 30));
    detector.ingest(request(call('echo'), 1500));
    detector.ingest(request({ [ATTR_MCP_METHOD_NAME]: 'tools/list' }, 4));
    const labels = `${LABEL_SERVICE}="srv",${LABEL_MCP_METHOD_NAME}="tools/call",${LABEL_GEN_AI_TOOL_NAME}="echo",${LABEL_MCP_PROTOCOL_VERSION}="2025-11-25"`;
    expect(await lines(metrics, '_count')).toEqual([
      `${METRIC}_count{${labels}} 2`,
      `${METRIC}_count{${LABEL_SERVICE}="srv",${LABEL_MCP_METHOD_NAME}="tools/list"} 1`,
    ]);
    expect(await lines(metrics, '_sum')).toContain(`${METRIC}_sum{${labels}} 1.53`);
    const echo = (await lines(metrics, '_bucket')).filter((l) => l.includes('"echo"'));
    const bucket = (le: string) =>
      Number(
        echo
          .find((l) => l.includes(`le="${le}"`))!
          .split(' ')
          .at(-1),
      );
    // Cumulative, at the conventions' boundaries: 30 ms in le 0.05, 1.5 s in le 2.
    expect([bucket('0.02'), bucket('0.05'), bucket('1'), bucket('2'), bucket('300'), bucket('+Inf')]).toEqual([
      0, 1, 1, 2, 2, 2,
    ]);
    expect(echo).toHaveLength(15);
  });

  it('keeps the other metrics whole when a service is first seen by its operations', async () => {
    const { metrics, detector } = wired();
    // No protocol version: the era counter does not see it, the operation is the first to name the service.
    detector.ingest(request({ [ATTR_MCP_METHOD_NAME]: 'tools/list' }, 5, { service: 'server-first' }));
    detector.ingest(
      span(SPAN_REQUEST_TERMINAL, T0, {
        [ATTR_MCP_METHOD_NAME]: 'tools/call',
        [ATTR_MCP_SESSION_ID]: 's',
        [ATTR_JSONRPC_REQUEST_ID]: '1',
        [ATTR_MCP_STREAM_ID]: 'a',
      }),
    );
    const { body } = await metrics.render(undefined);
    expect(body).toContain(`${METRIC}_count{${LABEL_SERVICE}="server-first"`);
    expect(body).toContain(`${METRIC_TERMINAL_EVENTS_TOTAL}{${LABEL_SERVICE}="client",duplicate="false"} 1`);
  });

  it('counts nothing for a terminal span or a client span in serve; a proxy times its client spans', async () => {
    const { metrics, detector } = wired();
    const terminal = span(SPAN_REQUEST_TERMINAL, T0, {
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_MCP_SESSION_ID]: 's',
      [ATTR_JSONRPC_REQUEST_ID]: '1',
      [ATTR_MCP_STREAM_ID]: 'a',
    });
    detector.ingest(terminal);
    detector.ingest(request(call('echo'), 5, { kind: CLIENT }));
    expect(await lines(metrics, '_count')).toEqual([]);
    metrics.timeServerOperationsAtProxy();
    detector.ingest(request(call('echo'), 5, { kind: CLIENT }));
    detector.ingest(request(call('echo'), 5, { kind: SERVER }));
    expect(Object.values(await counts(metrics))).toEqual([1]);
  });

  it('says error_type for an error of the server, not for a request the caller got wrong', async () => {
    const { metrics, detector } = wired();
    const jsonRpcError = (code: string) => ({ [ATTR_ERROR_TYPE]: code, [ATTR_RPC_RESPONSE_STATUS_CODE]: code });
    detector.ingest(request(call('fail', jsonRpcError('-32603')), 5));
    detector.ingest(request(call('nosuchtool', jsonRpcError('-32602')), 5));
    detector.ingest(request({ [ATTR_MCP_METHOD_NAME]: 'nosuch/method', ...jsonRpcError('-32601') }, 5));
    detector.ingest(request(call('flaky', { [ATTR_ERROR_TYPE]: ErrorType.TOOL_ERROR }), 5));
    detector.ingest(request(call('slow', { [ATTR_ERROR_TYPE]: ErrorType.TIMEOUT }), 5));
    const v = `${LABEL_MCP_PROTOCOL_VERSION}=2025-11-25`;
    expect(await counts(metrics)).toEqual({
      [`${LABEL_ERROR_TYPE}=-32603 ${LABEL_GEN_AI_TOOL_NAME}=fail ${LABEL_MCP_METHOD_NAME}=tools/call ${v} ${LABEL_RPC_RESPONSE_STATUS_CODE}=-32603`]: 1,
      [`${LABEL_GEN_AI_TOOL_NAME}=nosuchtool ${LABEL_MCP_METHOD_NAME}=tools/call ${v} ${LABEL_RPC_RESPONSE_STATUS_CODE}=-32602`]: 1,
      [`${LABEL_MCP_METHOD_NAME}=nosuch/method ${LABEL_RPC_RESPONSE_STATUS_CODE}=-32601`]: 1,
      [`${LABEL_ERROR_TYPE}=tool_error ${LABEL_GEN_AI_TOOL_NAME}=flaky ${LABEL_MCP_METHOD_NAME}=tools/call ${v}`]: 1,
      [`${LABEL_ERROR_TYPE}=timeout ${LABEL_GEN_AI_TOOL_NAME}=slow ${LABEL_MCP_METHOD_NAME}=tools/call ${v}`]: 1,
    });
  });

  it('caps tool names at maxTools, and a name too long for a label, to other', async () => {
    const { metrics, detector } = wired(2);
    for (const tool of ['a', 'b', 'c', 'd', 'a', 'x'.repeat(129)]) detector.ingest(request(call(tool), 5));
    const tools: Record<string, number> = {};
    for (const line of await lines(metrics, '_count'))
      tools[labelsOf(line)[LABEL_GEN_AI_TOOL_NAME]!] = Number(line.split(' ').at(-1));
    expect(tools).toEqual({ a: 2, b: 1, other: 3 });
  });

  it('bounds its label sets: past the cap, a new one counts in its service overflow series, all labels other', async () => {
    const { metrics, detector } = wired();
    // 32 methods × 40 versions: the versions past 32 are other already, and the label sets past 1000 overflow.
    let n = 0;
    for (let m = 0; m < 32; m++)
      for (let v = 0; v < 40; v++, n++)
        detector.ingest(
          request({ [ATTR_MCP_METHOD_NAME]: `m${m}`, [ATTR_MCP_PROTOCOL_VERSION]: `v${v}`, [ATTR_ERROR_TYPE]: 'e' }, 5),
        );
    const all = await counts(metrics);
    expect(Object.keys(all).length).toBeGreaterThan(990);
    expect(Object.keys(all).length).toBeLessThanOrEqual(1001);
    expect(Object.values(all).reduce((a, b) => a + b, 0)).toBe(n);
    const overflow = `${LABEL_ERROR_TYPE}=other ${LABEL_MCP_METHOD_NAME}=other ${LABEL_MCP_PROTOCOL_VERSION}=other`;
    expect(all[overflow]).toBeGreaterThan(0);
  });

  it('carries the trace id of the latest observation of each bucket as an OpenMetrics exemplar', async () => {
    const { metrics, detector } = wired();
    detector.ingest(request(call('echo'), 30, { trace: traceOf(1) }));
    detector.ingest(request(call('echo'), 40, { trace: traceOf(2) }));
    detector.ingest(request(call('echo'), 1500, { trace: traceOf(3) }));
    const om = await lines(metrics, '_bucket', OPENMETRICS);
    const withExemplar = om.filter((l) => l.includes(' # {'));
    expect(withExemplar).toHaveLength(2);
    expect(withExemplar.find((l) => l.includes('le="0.05"'))).toMatch(
      new RegExp(`\\} 2 # \\{trace_id="${traceOf(2)}"\\} 0.04 ${(T0 + 40) / 1000}$`),
    );
    expect(withExemplar.find((l) => l.includes('le="2"'))).toMatch(new RegExp(`trace_id="${traceOf(3)}"\\} 1.5 `));
    expect((await lines(metrics, '_bucket')).some((l) => l.includes('#'))).toBe(false);
  });
});
