import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as semconv from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { ErrorType, RequestRecovery, ResumeOutcome } from '@resumewatch/semconv';
import { decodeJsonRequest, decodeProtobufRequest, type SpanRecord } from '../src/index.js';
import { DETECTOR_ATTRIBUTE_KEYS, DETECTOR_KEYS } from '../src/otlp/detector-keys.js';
import { otlpJson } from './helpers/otlp.js';
import { encodeRequest as encodeProtobufRequest } from './helpers/protobuf-encode.js';
import { requestEnded } from './helpers/spans.js';

/*
 * The receivers' decoders convert only DETECTOR_ATTRIBUTE_KEYS: an attribute the core starts reading
 * must be added there, or the receivers would never hand it over. Every ATTR_* name a core file uses is
 * read from a span's attributes (the core has no other use for them).
 */
describe('the attributes the decoders keep for the detector', () => {
  it('hold every attribute name the core uses', () => {
    const dir = join(import.meta.dirname, '../src/core');
    const used = new Set<string>();
    for (const file of readdirSync(dir)) {
      for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/\bATTR_[A-Z0-9_]+\b/g)) used.add(m[0]);
    }
    expect(used.size).toBeGreaterThan(10);
    const values = [...used].map((name) => (semconv as Record<string, unknown>)[name]);
    for (const [i, name] of [...used].entries()) expect(DETECTOR_ATTRIBUTE_KEYS, name).toContain(values[i]);
    expect(new Set(DETECTOR_ATTRIBUTE_KEYS)).toEqual(new Set(values));
  });

  it('are found from their bytes, as their own strings, and nothing else is', () => {
    for (const key of DETECTOR_ATTRIBUTE_KEYS) {
      const bytes = Buffer.from(`x${key}y`);
      expect(DETECTOR_KEYS.find(bytes, 1, bytes.length - 1)).toBe(key);
      expect(DETECTOR_KEYS.find(bytes, 0, bytes.length - 1)).toBeUndefined();
      expect(DETECTOR_KEYS.find(bytes, 1, bytes.length - 2)).toBeUndefined();
    }
    expect(
      DETECTOR_KEYS.find(Buffer.from(semconv.ATTR_SERVICE_NAME), 0, semconv.ATTR_SERVICE_NAME.length),
    ).toBeUndefined();
  });

  it("keep a request span's lost-result evidence, in JSON and protobuf, for the receivers' detector", () => {
    const ended = requestEnded({ session: 's', request: 1 }, 1_700_000_000_000, ErrorType.TIMEOUT, {
      recovery: RequestRecovery.RESUMED,
      outcome: ResumeOutcome.PARTIAL_REPLAY,
    });
    const decoded: SpanRecord[] = [];
    decodeJsonRequest(JSON.stringify(otlpJson([ended])), (span) => void decoded.push(span), {
      detectorAttributesOnly: true,
    });
    decodeProtobufRequest(encodeProtobufRequest([ended]), (span) => void decoded.push(span), {
      detectorAttributesOnly: true,
    });
    expect(decoded).toHaveLength(2);
    for (const span of decoded)
      expect(span.attributes).toMatchObject({
        [semconv.ATTR_MCP_REQUEST_RECOVERY]: RequestRecovery.RESUMED,
        [semconv.ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.PARTIAL_REPLAY,
        [semconv.ATTR_ERROR_TYPE]: ErrorType.TIMEOUT,
      });
  });
});
