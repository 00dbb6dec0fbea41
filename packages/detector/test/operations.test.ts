// Each request span is one MCP operation for the metrics (DetectorEvents.operation): once per span, with
// what the OpenTelemetry MCP conventions' operation metrics record of it, whichever door decoded it.
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  SPAN_REQUEST_TERMINAL,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import {
  Detector,
  decodeJsonRequest,
  decodeProtobufRequest,
  type AttributeValue,
  type DetectorEvents,
  type Operation,
  type SpanRecord,
} from '../src/index.js';
import { otlpJson } from './helpers/otlp.js';
import { encodeRequest } from './helpers/protobuf-encode.js';
import { T0, span, traceOf } from './helpers/spans.js';

/** A detector whose metrics keep a copy of every operation it hands them. */
function recording(): { detector: Detector; operations: Operation[] } {
  const operations: Operation[] = [];
  const none = () => undefined;
  const events: DetectorEvents = {
    span: none,
    terminal: none,
    resume: none,
    reattach: none,
    stormFinalized: none,
    serverDefect: none,
    listeningResume: none,
    request: none,
    negotiationRefused: none,
    operation: (op) => void operations.push({ ...op }),
  };
  return { detector: new Detector({ events }), operations };
}

function serverSpan(attrs: Record<string, AttributeValue>, ms: number, trace = traceOf(7)): SpanRecord {
  const s = span(`${String(attrs[ATTR_MCP_METHOD_NAME])}`, T0, attrs, { kind: 2, service: 'srv', trace });
  s.endTimeUnixMs = T0 + ms;
  return s;
}

const failed = serverSpan(
  {
    [ATTR_MCP_METHOD_NAME]: 'tools/call',
    [ATTR_GEN_AI_TOOL_NAME]: 'fail',
    [ATTR_MCP_PROTOCOL_VERSION]: '2025-11-25',
    [ATTR_ERROR_TYPE]: '-32603',
    [ATTR_RPC_RESPONSE_STATUS_CODE]: '-32603',
  },
  250,
);
const FAILED: Operation = {
  kind: 2,
  service: 'srv',
  method: 'tools/call',
  tool: 'fail',
  errorType: '-32603',
  protocolVersion: '2025-11-25',
  statusCode: '-32603',
  seconds: 0.25,
  traceId: traceOf(7),
  endTimeUnixMs: T0 + 250,
};

describe('detector core: operations', () => {
  it('hands over each request span once, as the conventions record it, and nothing for a contract span', () => {
    const { detector, operations } = recording();
    detector.ingest(failed);
    detector.ingest(
      span(SPAN_REQUEST_TERMINAL, T0, {
        [ATTR_MCP_METHOD_NAME]: 'tools/call',
        [ATTR_MCP_SESSION_ID]: 's',
        [ATTR_JSONRPC_REQUEST_ID]: '1',
        [ATTR_MCP_STREAM_ID]: 'a',
      }),
    );
    const client = serverSpan({ [ATTR_MCP_METHOD_NAME]: 'tools/list' }, 3);
    client.kind = 3;
    detector.ingest(client);
    // A span that ends before it starts times nothing.
    detector.ingest(serverSpan({ [ATTR_MCP_METHOD_NAME]: 'ping' }, -1));
    expect(operations).toEqual([
      FAILED,
      {
        ...FAILED,
        kind: 3,
        method: 'tools/list',
        tool: undefined,
        errorType: undefined,
        protocolVersion: undefined,
        statusCode: undefined,
        seconds: 0.003,
        endTimeUnixMs: T0 + 3,
      },
    ]);
  });

  it("keeps the status code and drops the error type of a caller's error (the conventions' server status)", () => {
    const { detector, operations } = recording();
    for (const code of ['-32700', '-32600', '-32601', '-32602', '-32002', '-32603', '-32000'])
      detector.ingest(
        serverSpan(
          { [ATTR_MCP_METHOD_NAME]: 'tools/call', [ATTR_ERROR_TYPE]: code, [ATTR_RPC_RESPONSE_STATUS_CODE]: code },
          1,
        ),
      );
    detector.ingest(serverSpan({ [ATTR_MCP_METHOD_NAME]: 'tools/call', [ATTR_ERROR_TYPE]: 'tool_error' }, 1));
    expect(operations.map((op) => [op.statusCode, op.errorType])).toEqual([
      ['-32700', undefined],
      ['-32600', undefined],
      ['-32601', undefined],
      ['-32602', undefined],
      ['-32002', undefined],
      ['-32603', '-32603'],
      ['-32000', '-32000'],
      [undefined, 'tool_error'],
    ]);
  });

  it('gets the same operation from the receivers’ OTLP/JSON and OTLP/protobuf decoders, which keep only what the core reads', () => {
    for (const decode of [
      (sink: (s: SpanRecord) => void) =>
        decodeJsonRequest(JSON.stringify(otlpJson([failed], 'srv')), sink, { detectorAttributesOnly: true }),
      (sink: (s: SpanRecord) => void) =>
        decodeProtobufRequest(encodeRequest([failed]), sink, { detectorAttributesOnly: true }),
    ]) {
      const { detector, operations } = recording();
      decode((s) => detector.ingest(s));
      // Times cross the wire in nanoseconds: within a microsecond.
      expect(operations.map((op) => ({ ...op, seconds: 0.25, endTimeUnixMs: T0 + 250 }))).toEqual([FAILED]);
      expect(operations[0]!.seconds).toBeCloseTo(0.25, 6);
    }
  });
});
