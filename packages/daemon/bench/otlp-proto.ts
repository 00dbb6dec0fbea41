/**
 * The OTLP trace protos (opentelemetry-proto v1: common, resource, trace, trace_service), as protobufjs
 * compiles them: the reference decoder for the protobuf and gRPC ingest figures ("generated protobufjs
 * classes": protobufjs generates each message's decode function from these definitions, as its static
 * code generator would). Field numbers and types are those of the upstream .proto files.
 */
import protobuf from 'protobufjs';
import type { SpanRecord } from '@resumewatch/detector';
import { otlpAttributes } from '../../detector/test/helpers/otlp.js';

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

export const ExportTraceServiceRequest = protobuf
  .parse(PROTO, { keepCase: false })
  .root.lookupType('opentelemetry.proto.ExportTraceServiceRequest');

/** OTLP/protobuf ExportTraceServiceRequest bodies of `perBody` spans each, under the service `bench`. */
export function otlpProtobufBodies(spans: SpanRecord[], perBody: number, serviceKey: string): Buffer[] {
  const bodies: Buffer[] = [];
  for (let i = 0; i < spans.length; i += perBody) {
    const request = {
      resourceSpans: [
        {
          resource: { attributes: [{ key: serviceKey, value: { stringValue: 'bench' } }] },
          scopeSpans: [
            {
              scope: { name: 'bench' },
              spans: spans.slice(i, i + perBody).map((s) => ({
                traceId: Buffer.from(s.traceId, 'hex'),
                spanId: Buffer.from(s.spanId, 'hex'),
                name: s.name,
                kind: s.kind,
                startTimeUnixNano: String(Math.round(s.startTimeUnixMs * 1e6)),
                endTimeUnixNano: String(Math.round(s.endTimeUnixMs * 1e6)),
                attributes: otlpAttributes(s.attributes, Number),
              })),
            },
          ],
        },
      ],
    };
    const message = ExportTraceServiceRequest.fromObject(request);
    bodies.push(Buffer.from(ExportTraceServiceRequest.encode(message).finish()));
  }
  return bodies;
}

/** An OTLP export request in the OTLP/JSON mapping (hex ids), as OTLP/protobuf bytes. */
export function protobufOfJsonRequest(request: Record<string, unknown>): Buffer {
  const ids = (s: Record<string, unknown>): Record<string, unknown> => ({
    ...s,
    traceId: Buffer.from(s.traceId as string, 'hex'),
    spanId: Buffer.from(s.spanId as string, 'hex'),
    ...(s.parentSpanId === undefined ? {} : { parentSpanId: Buffer.from(s.parentSpanId as string, 'hex') }),
  });
  const copy = {
    resourceSpans: (request.resourceSpans as Record<string, unknown>[]).map((rs) => ({
      ...rs,
      scopeSpans: (rs.scopeSpans as Record<string, unknown>[]).map((ss) => ({
        ...ss,
        spans: (ss.spans as Record<string, unknown>[]).map(ids),
      })),
    })),
  };
  return Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(copy)).finish());
}
