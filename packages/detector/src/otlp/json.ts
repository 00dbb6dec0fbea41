import type { SpanRecord } from '../core/types.js';
import { OtlpDecodeError, type DecodeResult } from './errors.js';
import { Problem } from './json-problem.js';
import { Walk } from './json-walk.js';

/*
 * OTLP/JSON decoding by scanning: one pass over the body's bytes that validates it as JSON.parse would
 * and builds only the span records (ids, name, kind, times, service and the attributes asked for), never
 * the objects of the whole document: JSON.parse would make every object, string and number of the body,
 * most of which the detector never reads. Its results are those of parsing the body whole and reading the
 * objects, as this decoder did before (test/helpers/otlp-json-reference.ts; test/otlp-decode-equivalence.test.ts
 * compares both on generated, hostile and real exporters' bodies):
 * - a duplicate key counts by its last occurrence, as in JSON.parse;
 * - field names are read under their lowerCamelCase JSON names or their proto (snake_case) names, as
 *   camelCaseOtlpFieldNames renames them: the lowerCamelCase spelling wins, else the first snake_case spelling;
 * - a body that is not JSON is refused before any span reaches the sink; a structural error (resourceSpans
 *   not an array, ...) is thrown after the spans that precede it in document order reached the sink, as the
 *   walk over parsed objects did; malformed spans are counted and skipped.
 * The parts: json-cursor.ts (the bytes, as JSON tokens), json-fields.ts (field names, snake/camel
 * admission), json-walk.ts (the OTLP messages), json-values.ts and json-span-fields.ts (values from tokens),
 * json-problem.ts (a malformed span or structural error); this file is the entry point.
 */

export interface JsonDecodeOptions {
  /**
   * Convert only the attributes the detector reads (src/otlp/detector-keys.ts): those on its contract
   * spans (terminal, resume, reattach), only the MCP method name on any other span. For receivers that
   * feed nothing but a Detector.
   */
  detectorAttributesOnly?: boolean;
  /**
   * Called for each valid span that cannot matter to the detector or to the page's evidence
   * (mattersOffContract in src/otlp/detector-keys.ts), in its place among the spans handed to the sink;
   * no record is made of it (its ids, name and attributes are checked, not built; its attributes are
   * passed over as validated bytes when no string in them can spell such a key). The detector would
   * have counted it IGNORED and done nothing else with it. Without it, every valid span reaches the sink.
   */
  onSkipped?: () => void;
  /** Arrays and objects nested deeper than this are refused (the receiver's --max-json-depth). Default: no limit. */
  maxDepth?: number;
}

/**
 * Decodes an OTLP/JSON ExportTraceServiceRequest into span records: its UTF-8 bytes (or text). An
 * already parsed document is accepted too, serialised again first.
 */
export function decodeJsonRequest(
  body: Uint8Array | string | unknown,
  sink: (s: SpanRecord) => void,
  options?: JsonDecodeOptions,
): DecodeResult {
  const onSkipped = options?.onSkipped;
  const walk = new Walk(
    bytesOf(body),
    options?.maxDepth ?? Infinity,
    options?.detectorAttributesOnly === true,
    onSkipped !== undefined,
  );
  if (!walk.request()) throw new OtlpDecodeError('malformed OTLP/JSON: the body is not a JSON object');
  const result: DecodeResult = { spans: 0, invalid: 0, resourceSpans: walk.resourceSpans };
  const entries = walk.entries;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (typeof e === 'number') {
      // A run of e skipped spans, each reported in its place.
      result.skipped = (result.skipped ?? 0) + e;
      for (let k = 0; k < e; k++) onSkipped!();
    } else if (!(e instanceof Problem)) {
      result.spans++;
      sink(e);
    } else if (e.fatal) throw new OtlpDecodeError(e.message);
    else {
      result.invalid++;
      result.firstError ??= e.message;
    }
  }
  return result;
}

function bytesOf(body: unknown): Uint8Array {
  // A Buffer view (no copy): its native slicing methods make the strings.
  if (body instanceof Uint8Array)
    return Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new OtlpDecodeError('malformed OTLP/JSON: the body is not a JSON object');
  return Buffer.from(JSON.stringify(body), 'utf8');
}
