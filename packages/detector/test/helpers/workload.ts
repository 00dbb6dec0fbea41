import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_PREVIOUS_ID,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
  mcpRequestSpanName,
} from '@resumewatch/semconv';
import type { AttributeValue, SpanRecord } from '../../src/index.js';
import { otlpJson } from './otlp.js';

const T0 = 1_700_000_000_000;
let seq = 0;

/**
 * `n` in `width` hex digits, as one flat string: `padStart` alone makes a two-part (cons) string, whose
 * every `charCodeAt` costs the core about twice what it costs on the flat ids the doors hand it (the
 * SDK's generator, the decoders), so the benchmarks' records would pay for a shape no door makes.
 */
function hex(n: number, width: number): string {
  return Buffer.from(n.toString(16).padStart(width, '0'), 'latin1').toString('latin1');
}

function span(
  name: string,
  t: number,
  kind: SpanRecord['kind'],
  attributes: Record<string, AttributeValue>,
  trace: string,
): SpanRecord {
  seq++;
  return {
    traceId: trace,
    spanId: hex(seq, 16),
    name,
    kind,
    startTimeUnixMs: t,
    endTimeUnixMs: t + 2,
    attributes,
    service: 'bench',
  };
}

/**
 * Spans of `requests` requests: each has its request span and a terminal; one in `failEvery` shows the
 * seed failure (three replays of the terminal on new streams, then an empty replay).
 */
export function workload(requests: number, tag = 'a', failEvery = 10): SpanRecord[] {
  const out: SpanRecord[] = [];
  for (let i = 0; i < requests; i++) {
    const session = `sess-${hex(i >>> 2, 8)}-0000-4000-8000-${tag.padStart(12, '0')}`;
    const id = (i & 3) + 1;
    const trace = hex(i, 32);
    const base = { [ATTR_MCP_SESSION_ID]: session, [ATTR_JSONRPC_REQUEST_ID]: id };
    const t = T0 + i;
    out.push(
      span(mcpRequestSpanName('tools/call', 'work'), t, 3, { ...base, [ATTR_MCP_METHOD_NAME]: 'tools/call' }, trace),
    );
    out.push(span(SPAN_REQUEST_TERMINAL, t + 5, 1, { ...base, [ATTR_MCP_STREAM_ID]: `s${tag}${i}-0` }, trace));
    if (i % failEvery !== 0) continue;
    for (let k = 1; k <= 4; k++) {
      const stream = `s${tag}${i}-${k}`;
      const evicted = k === 4;
      const at = t + 5 + k * 100;
      out.push(
        span(
          SPAN_SESSION_REATTACH,
          at,
          3,
          {
            ...base,
            [ATTR_MCP_STREAM_ID]: stream,
            [ATTR_MCP_STREAM_PREVIOUS_ID]: `s${tag}${i}-${k - 1}`,
            [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
            [ATTR_MCP_REATTACH_ACCEPTED]: true,
          },
          trace,
        ),
      );
      out.push(
        span(
          SPAN_STREAM_RESUME,
          at + 1,
          3,
          {
            ...base,
            [ATTR_MCP_STREAM_ID]: stream,
            [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: true,
            [ATTR_MCP_RESUME_OUTCOME]: evicted ? ResumeOutcome.EMPTY_REPLAY : ResumeOutcome.CONTINUATION,
            [ATTR_MCP_RESUME_REPLAYED_EVENTS]: evicted ? 0 : 1,
            [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: !evicted,
            [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
          },
          trace,
        ),
      );
      if (!evicted)
        out.push(
          span(
            SPAN_REQUEST_TERMINAL,
            at + 10,
            1,
            { ...base, [ATTR_MCP_STREAM_ID]: stream, [ATTR_MCP_TERMINAL_DUPLICATE]: true },
            trace,
          ),
        );
    }
  }
  return out;
}

/** OTLP/JSON export request bodies of `perBody` spans each, under the service `bench`. */
export function otlpBodies(spans: SpanRecord[], perBody: number): string[] {
  const bodies: string[] = [];
  for (let i = 0; i < spans.length; i += perBody)
    bodies.push(JSON.stringify(otlpJson(spans.slice(i, i + perBody), 'bench')));
  return bodies;
}
