/**
 * The bodies serve's benchmarks send: OTLP/JSON (the detector's test workload, 1 request in 10 failing)
 * and OTLP/protobuf of the same spans, 512 a body, of MCP spans only or of a mixed stream (1 span in 10
 * MCP, 9 an application's HTTP, database and framework spans), and protobufjs's decoder of the OTLP
 * trace protos (opentelemetry-proto v1, the upstream field numbers): the protobuf figures' reference.
 */
import protobuf from 'protobufjs';
import { decodeJsonRequest, decodeProtobufRequest, type SpanRecord } from '@resumewatch/detector';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { otlpBodies, workload } from '../../detector/test/helpers/workload.js';
import { mixedJsonBodies, mixedRequests } from '../../detector/test/helpers/app-spans.js';

const PROTO = `
syntax = "proto3";
package opentelemetry.proto;
message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; fixed32 flags = 16;
  string name = 5; int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; uint32 dropped_attributes_count = 10;
  repeated Event events = 11; uint32 dropped_events_count = 12; repeated Link links = 13; uint32 dropped_links_count = 14;
  Status status = 15;
}
message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; uint32 dropped_attributes_count = 5; fixed32 flags = 6; }
message Status { string message = 2; int32 code = 3; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
`;

const ExportTraceServiceRequest = protobuf
  .parse(PROTO, { keepCase: false })
  .root.lookupType('opentelemetry.proto.ExportTraceServiceRequest');

export type Encoding = 'json' | 'protobuf';
export type Stream = 'mcp' | 'mixed';

/** Hex ids of the OTLP/JSON mapping as the bytes protobuf carries. */
function withByteIds(s: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...s };
  for (const k of ['traceId', 'spanId', 'parentSpanId'])
    if (typeof s[k] === 'string') out[k] = Buffer.from(s[k], 'hex');
  return out;
}

/** An OTLP export request in the OTLP/JSON mapping, as OTLP/protobuf bytes. */
export function protobufOfJsonRequest(request: Record<string, unknown>): Buffer {
  const rs = (request.resourceSpans as Record<string, unknown>[]).map((r) => ({
    ...r,
    scopeSpans: (r.scopeSpans as Record<string, unknown>[]).map((ss) => ({
      ...ss,
      spans: (ss.spans as Record<string, unknown>[]).map(withByteIds),
    })),
  }));
  return Buffer.from(
    ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject({ resourceSpans: rs })).finish(),
  );
}

/** MCP spans as OTLP/protobuf bodies of `perBody` spans, under the service `bench`. */
function mcpProtobuf(spans: SpanRecord[], perBody: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < spans.length; i += perBody)
    out.push(protobufOfJsonRequest(otlpJson(spans.slice(i, i + perBody), 'bench')));
  return out;
}

/**
 * One round's bodies: `requests` requests of the workload (a mixed stream takes a fifth of them as its
 * MCP tenth, for about as many spans in all), under the tag `tag` (new ids for each tag).
 */
export function bodies(encoding: Encoding, stream: Stream, requests: number, tag: string, seed = 1): Buffer[] {
  if (stream === 'mcp') {
    const spans = workload(requests, tag);
    return encoding === 'json' ? otlpBodies(spans, 512).map((b) => Buffer.from(b)) : mcpProtobuf(spans, 512);
  }
  const mcp = workload(Math.max(1, Math.round(requests / 5)), tag);
  return encoding === 'json'
    ? mixedJsonBodies(mcp, { service: 'bench', seed }).map((b) => Buffer.from(b))
    : mixedRequests(mcp, { service: 'bench', seed, intValue: Number }).map(protobufOfJsonRequest);
}

/** The reference decoder of an encoding: JSON.parse of the text, or protobufjs. */
export const reference = (encoding: Encoding): ((b: Buffer) => unknown) =>
  encoding === 'json' ? (b) => JSON.parse(b.toString('utf8')) : (b) => ExportTraceServiceRequest.decode(b);

/** Serve's decoder of an encoding, with serve's options (the JSON depth bound; detector attributes only). */
export function decoder(encoding: Encoding) {
  const json = { detectorAttributesOnly: true, maxDepth: 64 } as const;
  return (b: Buffer, sink: (s: SpanRecord) => void, onSkipped?: () => void) =>
    encoding === 'json'
      ? decodeJsonRequest(b, sink, { ...json, onSkipped })
      : decodeProtobufRequest(b, sink, { detectorAttributesOnly: true, onSkipped });
}

/** Spans in a round's bodies (skipped ones included). */
export function spansIn(encoding: Encoding, round: Buffer[]): number {
  let n = 0;
  const decode = decoder(encoding);
  for (const b of round)
    decode(
      b,
      () => n++,
      () => n++,
    );
  return n;
}
