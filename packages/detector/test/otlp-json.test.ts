import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_MCP_STREAM_ID,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  SPAN_REQUEST_TERMINAL,
  mcpRequestSpanName,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { decodeJsonRequest, type SpanRecord } from '../src/index.js';

const attrs = [
  { key: ATTR_MCP_SESSION_ID, value: { stringValue: 's' } },
  { key: ATTR_JSONRPC_REQUEST_ID, value: { intValue: '7' } },
  { key: ATTR_MCP_METHOD_NAME, value: { stringValue: 'tools/call' } },
];

function doc(spans: Record<string, unknown>[]): unknown {
  return { resourceSpans: [{ scopeSpans: [{ spans }] }] };
}

function span(name: string, start: unknown, end: unknown = start): Record<string, unknown> {
  return {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    name,
    startTimeUnixNano: start,
    endTimeUnixNano: end,
    attributes: attrs,
  };
}

function decode(
  spans: Record<string, unknown>[],
  detectorAttributesOnly = false,
): { out: SpanRecord[]; invalid: number } {
  const out: SpanRecord[] = [];
  const r = decodeJsonRequest(doc(spans), (s) => out.push(s), { detectorAttributesOnly });
  return { out, invalid: r.invalid };
}

describe('OTLP/JSON decoding', () => {
  it('reads nanosecond times as milliseconds, as Number() would', () => {
    for (const v of [
      '1700000000123456789',
      '1700000000123000000',
      '0',
      '999999',
      '1000000',
      '18446744073709551615',
      '1e18',
      ' 5000000',
      '12.5e6',
      1_700_000_000_000_000,
    ]) {
      const { out } = decode([span(SPAN_REQUEST_TERMINAL, v)]);
      expect(out[0]!.startTimeUnixMs).toBeCloseTo(Number(v) / 1e6, 3);
    }
    for (const v of ['-5', '17000000000x0000000', 'abc', null, true])
      expect(decode([span(SPAN_REQUEST_TERMINAL, v)]).invalid).toBe(1);
  });

  it("keeps every attribute by default, and only a request span's keys off contract spans when asked", () => {
    const other = mcpRequestSpanName('tools/call', 'work');
    const full = decode([span(SPAN_REQUEST_TERMINAL, '1'), span(other, '1')]).out;
    expect(full.map((s) => s.attributes)).toEqual([
      { [ATTR_MCP_SESSION_ID]: 's', [ATTR_JSONRPC_REQUEST_ID]: 7, [ATTR_MCP_METHOD_NAME]: 'tools/call' },
      { [ATTR_MCP_SESSION_ID]: 's', [ATTR_JSONRPC_REQUEST_ID]: 7, [ATTR_MCP_METHOD_NAME]: 'tools/call' },
    ]);
    const slim = decode([span(SPAN_REQUEST_TERMINAL, '1'), span(other, '1')], true).out;
    expect(slim[0]!.attributes).toEqual(full[0]!.attributes);
    // What the core reads of a request span: its method, and, for one the client gave up, which request.
    expect(slim[1]!.attributes).toEqual(full[1]!.attributes);
    const withMore = {
      ...span(other, '1'),
      attributes: [
        ...attrs,
        { key: ATTR_ERROR_TYPE, value: { stringValue: 'timeout' } },
        { key: ATTR_MCP_STREAM_ID, value: { stringValue: 'stream-1' } },
        // How the server answered: whether the request counts in its era or as a refused negotiation.
        { key: ATTR_HTTP_RESPONSE_STATUS_CODE, value: { intValue: '200' } },
        { key: ATTR_RPC_RESPONSE_STATUS_CODE, value: { stringValue: '-32601' } },
      ],
    };
    expect(decode([withMore], true).out[0]!.attributes).toEqual({
      [ATTR_MCP_SESSION_ID]: 's',
      [ATTR_JSONRPC_REQUEST_ID]: 7,
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_ERROR_TYPE]: 'timeout',
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
      [ATTR_RPC_RESPONSE_STATUS_CODE]: '-32601',
    });
  });
});
