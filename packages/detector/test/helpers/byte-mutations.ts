import fc from 'fast-check';
import { varintBytes } from './protobuf-encode.js';

/** One change to a message's bytes: a byte set, inserted or deleted, or a hostile varint inserted. */
export const byteMutation = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom('set', 'insert', 'delete', 'varint'),
  byte: fc.integer({ min: 0, max: 255 }),
  value: fc.bigInt({ min: -(1n << 63n), max: (1n << 64n) - 1n }),
});

type ByteMutation = typeof byteMutation extends fc.Arbitrary<infer T> ? T : never;

/** `bytes` with `mutations` applied in turn (positions wrap around the current length). */
export function mutated(bytes: Uint8Array | readonly number[], mutations: readonly ByteMutation[]): Uint8Array {
  const b = [...bytes];
  for (const m of mutations) {
    const at = b.length === 0 ? 0 : m.at % (b.length + 1);
    if (m.kind === 'set' && at < b.length) b[at] = m.byte;
    else if (m.kind === 'insert') b.splice(at, 0, m.byte);
    else if (m.kind === 'delete') b.splice(at, 1);
    else b.splice(at, 0, ...varintBytes(m.value));
  }
  return Uint8Array.from(b);
}
