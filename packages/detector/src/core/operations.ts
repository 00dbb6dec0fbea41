import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  CALLER_ERROR_CODES,
} from '@resumewatch/semconv';
import type { AttributeValue, SpanKindCode, SpanRecord } from './types.js';

/**
 * One MCP operation as a request span tells it, in the terms of the OpenTelemetry MCP conventions'
 * operation metrics (mcp.server.operation.duration and its attributes). The core fills one object and
 * hands it to DetectorEvents.operation for the duration of the call: a reader copies what it keeps.
 */
export interface Operation {
  /** The span's kind: SERVER for a server's own span, CLIENT for a client's, or a proxy's. */
  kind: SpanKindCode;
  service: string;
  /** mcp.method.name */
  method: string;
  /** gen_ai.tool.name (a tools/call) */
  tool: string | undefined;
  /**
   * error.type as the server's side records it: absent when the operation succeeded, or when its
   * JSON-RPC error says the caller sent what cannot be served (CALLER_ERROR_CODES: the conventions'
   * server status), which keeps its statusCode.
   */
  errorType: string | undefined;
  /** mcp.protocol.version */
  protocolVersion: string | undefined;
  /** rpc.response.status_code: the JSON-RPC error code */
  statusCode: string | undefined;
  /** From the span's start to its end. */
  seconds: number;
  traceId: string;
  endTimeUnixMs: number;
}

/** Reads request spans into one Operation, reused: nothing is allocated per request. */
export class OperationReader {
  private readonly op: Operation = {
    kind: 0,
    service: '',
    method: '',
    tool: undefined,
    errorType: undefined,
    protocolVersion: undefined,
    statusCode: undefined,
    seconds: 0,
    traceId: '',
    endTimeUnixMs: 0,
  };

  /** The operation of a request span, or undefined when its times say no duration. */
  read(span: SpanRecord, service: string): Operation | undefined {
    const seconds = (span.endTimeUnixMs - span.startTimeUnixMs) / 1000;
    if (!(seconds >= 0 && seconds < Infinity)) return undefined;
    const attrs = span.attributes;
    const op = this.op;
    op.kind = span.kind;
    op.service = service;
    op.method = attrs[ATTR_MCP_METHOD_NAME] as string;
    op.tool = text(attrs[ATTR_GEN_AI_TOOL_NAME]);
    op.protocolVersion = text(attrs[ATTR_MCP_PROTOCOL_VERSION]);
    const code = text(attrs[ATTR_RPC_RESPONSE_STATUS_CODE]);
    const error = text(attrs[ATTR_ERROR_TYPE]);
    op.statusCode = code;
    // An error code of the caller's (unknown method or tool, invalid params) is no error of the server's.
    op.errorType = error !== undefined && error === code && CALLER_ERROR_CODES.includes(code) ? undefined : error;
    op.seconds = seconds;
    op.traceId = span.traceId;
    op.endTimeUnixMs = span.endTimeUnixMs;
    return op;
  }
}

/** An attribute as a label's text: a string as it is, a number (an OTLP int) as its digits, nothing else. */
function text(value: AttributeValue | undefined): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  return typeof value === 'number' ? String(value) : undefined;
}
