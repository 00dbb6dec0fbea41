import { describe, expect, it } from 'vitest';
import { IdSet } from '../src/core/id-set.js';
import { RequestTable } from '../src/core/table.js';

describe('bounded structures', () => {
  it('IdSet remembers at least the last capacity/2 ids and stays bounded', () => {
    const set = new IdSet(1000);
    for (let i = 0; i < 10_000; i++) expect(set.add(i, -i)).toBe(true);
    for (let i = 9_500; i < 10_000; i++) expect(set.add(i, -i)).toBe(false);
    expect(set.add(0, 0)).toBe(true);
  });

  it('RequestTable agrees with a Map under random creates and releases (hash index with backward-shift deletion)', () => {
    const table = new RequestTable(5000, 3);
    const model = new Map<string, number>();
    let x = 12345;
    const rand = (n: number) => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return x % n;
    };
    for (let step = 0; step < 50_000; step++) {
      const session = `s${rand(3000)}`;
      const request = String(rand(3));
      const service = rand(2);
      const key = `${service}/${session}/${request}`;
      const h = RequestTable.hash(service, session, request);
      const slot = table.find(h, service, session, request);
      expect(slot === -1 ? undefined : slot).toBe(model.get(key));
      if (slot === -1 && table.size < table.maxRequests) model.set(key, table.create(h, service, session, request));
      else if (slot !== -1 && rand(2) === 0) {
        table.release(slot);
        model.delete(key);
      }
    }
    expect(table.size).toBe(model.size);
  });
});
