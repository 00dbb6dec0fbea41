import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_FOREIGN,
} from '@resumewatch/semconv';
import type { AttributeValue, SpanRecord } from './types.js';

/*
 * Which of the attributes the core reads but most spans lack a record may have: one bit each (a clear
 * bit: certainly absent), found in one pass over the record's keys, so that the rules read only the keys
 * that are there.
 *
 * Why: on the `{}` records the doors build, a lookup of a missing key is V8's slowest property access.
 * The load is megamorphic (records of many shapes), a present key is found in the record's own
 * descriptors, but a missing one is looked for in the stub cache (keyed by the record's map) and then
 * along the prototype chain; a record whose map is new to the cache (a record built by a spread, or of a
 * shape not seen lately) takes a runtime call that builds a handler for each missing key (measured: about
 * 2,000 instructions a miss, six misses on each request span of the core benchmark). Enumerating the few
 * keys a record has and looking each up in one Map costs far less. A null-prototype record is a
 * dictionary, where a missed lookup is one hash probe and enumeration is not cheap: it is read directly
 * (every bit set). Records are plain data (every key enumerable, nothing on the prototype by these names).
 */

/** ATTR_HTTP_RESPONSE_STATUS_CODE */
export const M_STATUS = 1;
/** ATTR_MCP_PROTOCOL_VERSION */
export const M_VERSION = 2;
/** ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION */
export const M_FATE = 4;
/** ATTR_MCP_TASK_ID */
export const M_TASK = 8;
/** ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID */
export const M_REISSUE_OF = 16;
/** ATTR_ERROR_TYPE */
export const M_ERROR = 32;
/** ATTR_MCP_STREAM_KIND */
export const M_STREAM_KIND = 64;
/** ATTR_MCP_TERMINAL_FOREIGN */
export const M_FOREIGN = 128;
/** ATTR_MCP_TERMINAL_CONFLICT */
export const M_CONFLICT = 256;
/** ATTR_MCP_TERMINAL_DUPLICATE */
export const M_DUPLICATE = 512;
/** ATTR_MCP_GUARD_ACTION */
export const M_GUARD = 1024;
/** ATTR_MCP_RESUME_EVIDENCE */
const M_EVIDENCE = 2048;
/** Every bit: a record read directly (a dictionary), or a caller that has not looked. */
export const M_ALL = 4095;

const BITS = new Map<string, number>([
  [ATTR_HTTP_RESPONSE_STATUS_CODE, M_STATUS],
  [ATTR_MCP_PROTOCOL_VERSION, M_VERSION],
  [ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION, M_FATE],
  [ATTR_MCP_TASK_ID, M_TASK],
  [ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID, M_REISSUE_OF],
  [ATTR_ERROR_TYPE, M_ERROR],
  [ATTR_MCP_STREAM_KIND, M_STREAM_KIND],
  [ATTR_MCP_TERMINAL_FOREIGN, M_FOREIGN],
  [ATTR_MCP_TERMINAL_CONFLICT, M_CONFLICT],
  [ATTR_MCP_TERMINAL_DUPLICATE, M_DUPLICATE],
  [ATTR_MCP_GUARD_ACTION, M_GUARD],
  [ATTR_MCP_RESUME_EVIDENCE, M_EVIDENCE],
]);

/**
 * The lengths of the names above, one entry per length: a key of another length is none of them and is
 * not looked up (the keys every span has, the session and request ids, the stream id, have none of these
 * lengths; a Map lookup costs about 60 instructions, reading a length two).
 */
const LENGTHS = new Uint8Array(64);
for (const key of BITS.keys()) if (key.length < 64) LENGTHS[key.length] = 1;

/**
 * The values of the attributes (nearly) every span the core decides on has, read in attributeMarks' pass
 * over the record's keys: the session id, the request id, the method name and the stream id.
 *
 * Why: looked up by name afterwards, each is a megamorphic keyed load (records of many shapes), which
 * searches the record's descriptors: about 100 instructions a lookup, three a span on the core
 * benchmark's records. In the pass, the key in hand is the enumerated one, and V8 loads its value by the
 * field index the enumeration has (a few instructions). One per detector; read at once by its caller.
 */
export class CommonAttributes {
  session: AttributeValue | undefined = undefined;
  request: AttributeValue | undefined = undefined;
  method: AttributeValue | undefined = undefined;
  stream: AttributeValue | undefined = undefined;
}

const SESSION = 1;
const REQUEST = 2;
const METHOD = 3;
const STREAM = 4;
/** Which common attribute's name has this length (their lengths differ), 0 for none. */
const COMMON_LENGTHS = new Uint8Array(64);
for (const [key, which] of [
  [ATTR_MCP_SESSION_ID, SESSION],
  [ATTR_JSONRPC_REQUEST_ID, REQUEST],
  [ATTR_MCP_METHOD_NAME, METHOD],
  [ATTR_MCP_STREAM_ID, STREAM],
] as const) {
  if (key.length >= 64 || COMMON_LENGTHS[key.length] !== 0)
    throw new Error(`marks: the common attribute ${key} needs a length of its own below 64`);
  COMMON_LENGTHS[key.length] = which;
}

/** Where the common attributes go for a caller that wants only the marks. */
const UNREAD = new CommonAttributes();

/**
 * The marks of a record's attributes (see above); M_ALL for a null-prototype record. The common
 * attributes' values are written to `common` (undefined for one the record lacks). A null-prototype
 * record's are looked up, one hash probe each, so only those its caller reads: `stream`, a stream span's
 * session id, request id and stream id; else a request span's session id and method (the others read
 * undefined).
 */
export function attributeMarks(
  attrs: SpanRecord['attributes'],
  common: CommonAttributes = UNREAD,
  stream = false,
): number {
  // `instanceof Object`: a null-prototype record is not one. Cheaper than Object.getPrototypeOf, which
  // takes a runtime call on a record whose map the optimizing compiler has not seen (about 120 instructions).
  if (!(attrs instanceof Object)) {
    common.session = attrs[ATTR_MCP_SESSION_ID];
    if (stream) {
      common.request = attrs[ATTR_JSONRPC_REQUEST_ID];
      common.stream = attrs[ATTR_MCP_STREAM_ID];
      common.method = undefined;
    } else {
      common.method = attrs[ATTR_MCP_METHOD_NAME];
      common.request = common.stream = undefined;
    }
    return M_ALL;
  }
  common.session = common.request = common.method = common.stream = undefined;
  let marks = 0;
  for (const key in attrs) {
    const n = key.length;
    if (n < 64) {
      const which = COMMON_LENGTHS[n];
      // `attrs[key]` with the enumerated key: loaded by its field index, not looked up.
      if (which === SESSION) {
        if (key === ATTR_MCP_SESSION_ID) {
          common.session = attrs[key];
          continue;
        }
      } else if (which === REQUEST) {
        if (key === ATTR_JSONRPC_REQUEST_ID) {
          common.request = attrs[key];
          continue;
        }
      } else if (which === METHOD) {
        if (key === ATTR_MCP_METHOD_NAME) {
          common.method = attrs[key];
          continue;
        }
      } else if (which === STREAM && key === ATTR_MCP_STREAM_ID) {
        common.stream = attrs[key];
        continue;
      }
      if (LENGTHS[n] === 0) continue;
    }
    const bit = BITS.get(key);
    if (bit !== undefined) marks |= bit;
  }
  return marks;
}
