import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hexWord, numberText } from '../../src/core/ids.js';

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

/** hexWord as it was written before the table: the reference the table must match on every input. */
function loopHexWord(s: string, at: number): number {
  let v = 0;
  for (let i = at; i < at + 8; i++) {
    const c = s.charCodeAt(i);
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : 0;
    v = (v << 4) | d;
  }
  return v >>> 0;
}

describe('hexWord', () => {
  const words = (s: string) => [hexWord(s, 0), hexWord(s, 8)];

  it('reads 16 hex digits as two big-endian words, upper case as lower', () => {
    expect(words('0000000000000000')).toEqual([0, 0]);
    expect(words('ffffffffffffffff')).toEqual([0xffffffff, 0xffffffff]);
    expect(words('0123456789abcdef')).toEqual([0x01234567, 0x89abcdef]);
    expect(words('0123456789ABCDEF')).toEqual([0x01234567, 0x89abcdef]);
    expect(words('8000000000000001')).toEqual([0x80000000, 1]);
  });

  it('reads a code unit that is no hex digit as 0, and nothing past the end', () => {
    // The digits' neighbours in ASCII, other letters, signs, spaces, non-ASCII digits and letters.
    expect(words('/:@G`g-+ x\u0000\u007f\u0080é\u0660\uff21')).toEqual([0, 0]);
    expect(words('1g2G3z4 5-6+7.8x')).toEqual([0x10203040, 0x50607080]);
    expect(words('\uff10\uff11abcdef')).toEqual([0x00abcdef, 0]);
    expect(words('abc')).toEqual([0xabc00000, 0]);
    expect(words('')).toEqual([0, 0]);
  });

  it('is the digit loop it replaced on every string (fast-check)', () => {
    const hexish = fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEFgG/:@`x\u00e9\uff21'), maxLength: 20 });
    fc.assert(
      fc.property(fc.oneof(hexish, fc.string({ unit: 'binary', maxLength: 20 })), fc.nat(20), (s, at) => {
        expect(hexWord(s, at)).toBe(loopHexWord(s, at));
      }),
      { numRuns: 5000, seed: 47 },
    );
  });
});
