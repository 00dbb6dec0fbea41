import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_MCP_CLIENT_INSTANCE_ID,
  ATTR_MCP_STREAM_RETRY_MS,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_INPUT_ROUND,
  ATTR_MCP_REQUEST_RECOVERY,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY,
  ATTR_MCP_TASK_GONE,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  SPAN_LISTENING_REFUSED,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';

/**
 * Every span attribute the detector core reads (src/core/*.ts; test/detector-keys.test.ts fails when the
 * core reads one not listed here). A decoder feeding nothing but a Detector converts only these, and
 * only the request span's keys (isRequestSpanKey) off the contract spans: the core never looks at the others.
 */
export const DETECTOR_ATTRIBUTE_KEYS: readonly string[] = [
  ATTR_ERROR_TYPE,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_INPUT_ROUND,
  ATTR_MCP_REQUEST_RECOVERY,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  // What an operation says besides its method, version, error type and status (core/operations.ts).
  ATTR_GEN_AI_TOOL_NAME,
  // The tasks family (core/tasks.ts): request spans and mcp.task.status spans that concern a task.
  ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_TTL_MS,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_GONE,
  // The loops family (core/loops.ts): who re-opened a listening stream that names no session, and the
  // pace its server asked for.
  ATTR_CLIENT_ADDRESS,
  ATTR_MCP_CLIENT_INSTANCE_ID,
  ATTR_MCP_STREAM_RETRY_MS,
];

/**
 * What the core reads of a span that is not a contract span (a request span): its method, its protocol
 * version and how the server answered it (its HTTP status and JSON-RPC error code: whether it counts in
 * that era or as a refused negotiation), whether the client gave the request up (its error type), which
 * request it was, what the client did about its stream ending without the result (its recovery, and its
 * last resume's outcome), the 2026-07-28 era's re-issue evidence (the request it re-issues, whether it is
 * a Multi Round-Trip round, and on a server's span whether the work completed after its stream closed),
 * what the operation metrics label it with (its tool and its JSON-RPC status code), and what it says
 * of a task (the tasks family's attributes, also on the mcp.task.status span, which is no contract span).
 */
export function isRequestSpanKey(key: string): boolean {
  return (
    key === ATTR_MCP_METHOD_NAME ||
    key === ATTR_ERROR_TYPE ||
    key === ATTR_MCP_SESSION_ID ||
    key === ATTR_JSONRPC_REQUEST_ID ||
    key === ATTR_MCP_PROTOCOL_VERSION ||
    key === ATTR_HTTP_RESPONSE_STATUS_CODE ||
    key === ATTR_RPC_RESPONSE_STATUS_CODE ||
    key === ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID ||
    key === ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID ||
    key === ATTR_MCP_REQUEST_INPUT_ROUND ||
    key === ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION ||
    key === ATTR_GEN_AI_TOOL_NAME ||
    key === ATTR_MCP_REQUEST_RECOVERY ||
    key === ATTR_MCP_RESUME_OUTCOME ||
    key === ATTR_MCP_REQUEST_REISSUE_OF_SAME_KEY ||
    key === ATTR_MCP_TASK_ID ||
    key === ATTR_MCP_TASK_STATUS ||
    key === ATTR_MCP_TASK_SHAPE ||
    key === ATTR_MCP_TASK_TTL_MS ||
    key === ATTR_MCP_TASK_POLL_INTERVAL_MS ||
    key === ATTR_MCP_TASK_OUTCOME_DELIVERED ||
    key === ATTR_MCP_TASK_GONE
  );
}

/**
 * Off the contract spans (by name), the attributes that make a span matter to anything `serve` does
 * with it; a span of another name with neither is skipped by the decoders' onSkipped, its record never
 * made. Exact, from what reads such a span:
 * - the core (Detector.ingest) counts a span of another name IGNORED and does nothing else with it unless
 *   it carries a string ATTR_MCP_METHOD_NAME (a request span), or is an mcp.task.status span that carries
 *   ATTR_MCP_TASK_ID (the tasks family's, which a span without the key never is);
 * - the page's evidence (daemon's Evidence.observe, RequestKeys) keeps a span the core ACCEPTED or
 *   IGNORED only if it carries a non-empty string ATTR_MCP_SESSION_ID (with a request id), or else a
 *   string ATTR_MCP_METHOD_NAME;
 * - bounding its ids (boundSpanStrings) changes only the record, and the SpanProcessor door feeds the
 *   core the same way.
 * A span that has either key, whatever its value, is kept and decided as before.
 */
export function mattersOffContract(key: string): boolean {
  return key === ATTR_MCP_METHOD_NAME || key === ATTR_MCP_SESSION_ID || key === ATTR_MCP_TASK_ID;
}

/**
 * The span names the core decides on; any other span only counts by its ATTR_MCP_METHOD_NAME. The
 * refused GET of a listening stream is one: a stateless server's names no session, only its client.
 */
const CONTRACT_SPAN_NAMES: readonly string[] = [
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
  SPAN_SESSION_REATTACH,
  SPAN_LISTENING_REFUSED,
];

export function isContractSpan(name: string): boolean {
  return (
    name === SPAN_REQUEST_TERMINAL ||
    name === SPAN_STREAM_RESUME ||
    name === SPAN_SESSION_REATTACH ||
    name === SPAN_LISTENING_REFUSED
  );
}

/**
 * Finds which of a fixed set of ASCII strings a byte range spells, without making a string of it: the
 * decoders match attribute keys and span names against it and hand out the set's own (interned) string.
 */
export class ByteKeys {
  /** Every value's bytes, one after the other; by length, which values have it (indices into `values`). */
  private readonly flat: Uint8Array;
  private readonly offsets: Int32Array;
  private readonly bucketStart: Int32Array;
  private readonly bucket: Int32Array;
  private readonly byValue = new Map<string, number>();
  private readonly maxLength: number;

  constructor(readonly values: readonly string[]) {
    const bytes = values.map((v) => Buffer.from(v, 'latin1'));
    this.maxLength = Math.max(0, ...bytes.map((b) => b.length));
    this.flat = new Uint8Array(Buffer.concat(bytes));
    this.offsets = new Int32Array(values.length);
    for (let i = 1; i < values.length; i++) this.offsets[i] = this.offsets[i - 1]! + bytes[i - 1]!.length;
    this.bucketStart = new Int32Array(this.maxLength + 2);
    this.bucket = new Int32Array(values.length);
    let k = 0;
    for (let len = 0; len <= this.maxLength; len++) {
      this.bucketStart[len] = k;
      for (let i = 0; i < values.length; i++) if (bytes[i]!.length === len) this.bucket[k++] = i;
    }
    this.bucketStart[this.maxLength + 1] = k;
    values.forEach((value, index) => this.byValue.set(value, index));
  }

  /** The index of the value spelled by buf[start, end), or -1. */
  indexOf(buf: Uint8Array, start: number, end: number): number {
    const len = end - start;
    if (len > this.maxLength) return -1;
    const flat = this.flat;
    const last = this.bucketStart[len + 1]!;
    // Keys share prefixes ("mcp.stream."): compare from the end, where they differ.
    for (let b = this.bucketStart[len]!; b < last; b++) {
      const index = this.bucket[b]!;
      const off = this.offsets[index]!;
      let i = len - 1;
      while (i >= 0 && buf[start + i] === flat[off + i]) i--;
      if (i < 0) return index;
    }
    return -1;
  }

  /** The value spelled by buf[start, end) (the set's own string), or undefined. */
  find(buf: Uint8Array, start: number, end: number): string | undefined {
    const i = this.indexOf(buf, start, end);
    return i < 0 ? undefined : this.values[i];
  }

  /** The index of a string in the set, or -1. */
  indexOfString(s: string): number {
    return this.byValue.get(s) ?? -1;
  }
}

export const DETECTOR_KEYS = new ByteKeys(DETECTOR_ATTRIBUTE_KEYS);
export const CONTRACT_NAMES = new ByteKeys(CONTRACT_SPAN_NAMES);
