import { GuardProof } from '@resumewatch/semconv';

/** What is kept of a released request whose terminal was seen. */
export interface ReleasedTerminal {
  readonly digest: number;
  finished: boolean;
  proof: GuardProof | undefined;
}

/**
 * A ReleasedTerminal as the observer keeps it, one per released request until the requests' retention
 * (minutes, up to 100,000 of them): packed in one number, `digest * 16 + finished * 8 + proof`, whenever
 * the digest is a 32-bit digest (digestOfTerminal's, always): a number in the map's array of values
 * costs its 8 bytes, where an object and its boxed digest cost about 64. A digest of another shape (a
 * hand-made state file) keeps the object, so that nothing a state file says is lost.
 */
export type KeptTerminal = number | ReleasedTerminal;

/** A proof's code in a packed terminal: its index here (0, none: the request is not finished). */
const PROOF_CODES: readonly (GuardProof | undefined)[] = [
  undefined,
  GuardProof.READ,
  GuardProof.CURSOR,
  GuardProof.NEXT_REQUEST,
  GuardProof.NONE,
];

export function keptTerminal(digest: number, finished: boolean, proof: GuardProof | undefined): KeptTerminal {
  const code = PROOF_CODES.indexOf(proof);
  if (digest >>> 0 !== digest || code < 0) return { digest, finished, proof };
  return digest * 16 + (finished ? 8 : 0) + code;
}

export function releasedTerminal(kept: KeptTerminal): ReleasedTerminal {
  if (typeof kept !== 'number') return kept;
  const low = kept % 16;
  return { digest: (kept - low) / 16, finished: low >= 8, proof: PROOF_CODES[low & 7] };
}

/** The kept terminal, finished with `proof` (an object is changed in place; a number is a new one). */
export function finishedTerminal(kept: KeptTerminal, proof: GuardProof): KeptTerminal {
  if (typeof kept !== 'number') {
    kept.finished = true;
    kept.proof = proof;
    return kept;
  }
  const low = kept % 16;
  return keptTerminal((kept - low) / 16, true, proof);
}
