import { describe, expect, it } from 'vitest';
import { KeyHasher } from '../../src/core/key-hash.js';
import { RequestTable } from '../../src/core/table.js';

// The cached key hash must give RequestSlots.hash's values: state files keep keys made from them.
describe('key hash', () => {
  it('gives the same values as RequestSlots.hash, whatever the cache holds', () => {
    const keys = new KeyHasher();
    const sessions: string[] = ['', 'a', 'short12', 'exactly8', 'é-ünïcødé-session-☃-0000', 'x'.repeat(5000)];
    for (let i = 0; i < 3000; i++)
      sessions.push(`sess-${(i * 7919).toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`);
    // Sessions that differ only where the cache's index does not look share an entry and replace each other.
    for (let i = 0; i < 50; i++) sessions.push(`${'p'.repeat(10)}${String.fromCharCode(65 + i)}${'q'.repeat(9)}zz`);
    for (let round = 0; round < 3; round++)
      for (let i = 0; i < sessions.length; i++) {
        const session = sessions[(i * (round + 1)) % sessions.length]!;
        for (const service of [0, 1, 4095])
          for (const request of ['1', '42', 'req-ü'])
            expect(keys.hash(service, session, request)).toBe(RequestTable.hash(service, session, request));
      }
  });

  it('tells apart equal-looking sessions of other services and strings built apart', () => {
    const keys = new KeyHasher();
    const a = ['sess', 'ion-0001-abcdef'].join('');
    const b = Buffer.from('session-0001-abcdef').toString('latin1');
    expect(keys.hash(0, a, '1')).toBe(keys.hash(0, b, '1'));
    expect(keys.hash(1, b, '1')).toBe(RequestTable.hash(1, b, '1'));
    expect(keys.hash(1, b, '1')).not.toBe(keys.hash(0, b, '1'));
    expect(keys.hash(0, 'session-0001-abcdeg', '1')).toBe(RequestTable.hash(0, 'session-0001-abcdeg', '1'));
  });
});
