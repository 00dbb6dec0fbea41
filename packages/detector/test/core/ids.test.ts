import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { numberText } from '../../src/core/ids.js';

describe('numberText', () => {
  it('is String(n) for every number: the small integers from its table, the rest made', () => {
    const edges = [0, -0, 1, 1023, 1024, -1, 0.5, 1023.5, 2 ** 31, 2 ** 32, -(2 ** 31), NaN, Infinity, -Infinity, 1e21];
    for (let n = -5; n < 1100; n++) edges.push(n);
    for (const n of edges) expect(numberText(n)).toBe(String(n));
    fc.assert(
      fc.property(fc.double(), (n) => numberText(n) === String(n)),
      { numRuns: 2000, seed: 46 },
    );
  });
});
