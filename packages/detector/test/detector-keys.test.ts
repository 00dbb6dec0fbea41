import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as semconv from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { ErrorType, RequestRecovery, ResumeOutcome } from '@resumewatch/semconv';
import { decodeJsonRequest, decodeProtobufRequest, type SpanRecord } from '../src/index.js';
import { ByteKeys, DETECTOR_ATTRIBUTE_KEYS, DETECTOR_KEYS } from '../src/otlp/detector-keys.js';
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

describe('ByteKeys, the byte-spelled lookup of a set of names', () => {
  const bytes = (s: string) => Buffer.from(s, 'latin1');
  const lookup = (keys: ByteKeys, s: string) => keys.indexOf(bytes(`xx${s}yy`), 2, 2 + s.length);

  it('finds every value by its bytes, and nothing else, whatever values share a hash slot', () => {
    // Two thousand values over 1,024 slots: every chain holds several, of equal and of other lengths.
    const values = Array.from({ length: 2000 }, (_, i) => `k.${i.toString(36)}.${'ab'.repeat(i % 7)}`);
    const keys = new ByteKeys(values);
    values.forEach((v, i) => expect(lookup(keys, v)).toBe(i));
    for (const miss of ['', 'k', 'k.', 'k.0.', 'k.0.abX', 'K.0.', 'k.zz.ab', 'x'.repeat(100)])
      expect(lookup(keys, miss)).toBe(values.indexOf(miss));
    // Each value with one byte changed (its first, a middle one, its last) is another value or none.
    for (const v of values.slice(0, 300))
      for (const at of [0, v.length >> 1, v.length - 1]) {
        const changed = v.slice(0, at) + String.fromCharCode(v.charCodeAt(at) ^ 1) + v.slice(at + 1);
        expect(lookup(keys, changed)).toBe(values.indexOf(changed));
      }
  });

  it('gives the first of equal values, the empty one, and the detector keys as DETECTOR_ATTRIBUTE_KEYS orders them', () => {
    const keys = new ByteKeys(['a', '', 'b', 'a']);
    expect(lookup(keys, 'a')).toBe(0);
    expect(lookup(keys, '')).toBe(1);
    expect(keys.find(bytes('b'), 0, 1)).toBe('b');
    DETECTOR_ATTRIBUTE_KEYS.forEach((k, i) => expect(lookup(DETECTOR_KEYS, k)).toBe(i));
  });
});
