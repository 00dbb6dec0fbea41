import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as semconv from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { DETECTOR_ATTRIBUTE_KEYS, DETECTOR_KEYS } from '../src/otlp/detector-keys.js';

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
});
