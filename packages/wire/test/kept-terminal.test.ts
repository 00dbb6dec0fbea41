import { GuardProof } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { finishedTerminal, keptTerminal, releasedTerminal } from '../src/kept-terminal.js';

describe('a kept terminal', () => {
  const proofs = [undefined, ...Object.values(GuardProof)];

  it('is one number for every 32-bit digest, finished or not, with any proof, and reads back the same', () => {
    for (const digest of [0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 2983136032])
      for (const finished of [false, true])
        for (const proof of proofs) {
          const kept = keptTerminal(digest, finished, proof);
          expect(typeof kept).toBe('number');
          expect(releasedTerminal(kept)).toEqual({ digest, finished, proof });
        }
  });

  it('keeps a digest of another shape (a hand-made state file) whole, as an object', () => {
    for (const digest of [-1, 0.5, 2 ** 32, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
      const kept = keptTerminal(digest, true, GuardProof.CURSOR);
      expect(typeof kept).toBe('object');
      expect(releasedTerminal(kept)).toEqual({ digest, finished: true, proof: GuardProof.CURSOR });
    }
  });

  it('finished later keeps its digest and takes the proof', () => {
    for (const digest of [7, 0xffffffff, -3]) {
      const kept = finishedTerminal(keptTerminal(digest, false, undefined), GuardProof.NEXT_REQUEST);
      expect(releasedTerminal(kept)).toEqual({ digest, finished: true, proof: GuardProof.NEXT_REQUEST });
    }
  });
});
