import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
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
  ATTR_SERVER_ADDRESS,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';

/**
 * Every span attribute the detector core reads (src/core/*.ts; test/detector-keys.test.ts fails when the
 * core reads one not listed here). A decoder feeding nothing but a Detector converts only these, and
 * only ATTR_MCP_METHOD_NAME off the contract spans: the core never looks at the others.
 */
export const DETECTOR_ATTRIBUTE_KEYS: readonly string[] = [
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
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
  ATTR_SERVER_ADDRESS,
];

/** The span names the core decides on; any other span only counts by its ATTR_MCP_METHOD_NAME. */
export const CONTRACT_SPAN_NAMES: readonly string[] = [SPAN_REQUEST_TERMINAL, SPAN_STREAM_RESUME, SPAN_SESSION_REATTACH];

export function isContractSpan(name: string): boolean {
  return name === SPAN_REQUEST_TERMINAL || name === SPAN_STREAM_RESUME || name === SPAN_SESSION_REATTACH;
}

/**
 * Finds which of a fixed set of ASCII strings a byte range spells, without making a string of it: the
 * decoders match attribute keys and span names against it and hand out the set's own (interned) string.
 */
export class ByteKeys {
  private readonly byLength: { bytes: Uint8Array; index: number }[][] = [];
  private readonly byValue = new Map<string, number>();
  private readonly maxLength: number;

  constructor(readonly values: readonly string[]) {
    let max = 0;
    values.forEach((value, index) => {
      const bytes = Buffer.from(value, 'latin1');
      (this.byLength[bytes.length] ??= []).push({ bytes, index });
      this.byValue.set(value, index);
      if (bytes.length > max) max = bytes.length;
    });
    this.maxLength = max;
  }

  /** The index of the value spelled by buf[start, end), or -1. */
  indexOf(buf: Uint8Array, start: number, end: number): number {
    const len = end - start;
    if (len > this.maxLength) return -1;
    const candidates = this.byLength[len];
    if (candidates === undefined) return -1;
    // Keys share prefixes ("mcp.stream."): compare from the end, where they differ.
    outer: for (let k = 0; k < candidates.length; k++) {
      const bytes = candidates[k]!.bytes;
      for (let i = len - 1; i >= 0; i--) if (buf[start + i] !== bytes[i]) continue outer;
      return candidates[k]!.index;
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
