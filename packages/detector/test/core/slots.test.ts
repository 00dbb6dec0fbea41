import { describe, expect, it } from 'vitest';
import { NO_SLOT } from '../../src/core/slots.js';
import { RequestTable } from '../../src/core/table.js';

// RequestSlots is abstract; the table is its one subclass, and these tests use only the slots' methods.
function table(max = 100): RequestTable {
  return new RequestTable(max, 3);
}

function add(t: RequestTable, session: string, service = 0, request = '1'): number {
  return t.create(RequestTable.hash(service, session, request), service, session, request);
}

function lru(t: RequestTable): string[] {
  const out: string[] = [];
  for (let slot = t.oldest; slot !== NO_SLOT; slot = t.newer(slot)) out.push(t.sessionId(slot));
  return out;
}

describe('request slots', () => {
  it('finds a request by its full identity: service, session and request', () => {
    const t = table();
    const s = add(t, 'a', 0, '1');
    const h = (service: number, session: string, request: string) => RequestTable.hash(service, session, request);
    expect(t.find(h(0, 'a', '1'), 0, 'a', '1')).toBe(s);
    expect(t.find(h(1, 'a', '1'), 1, 'a', '1')).toBe(NO_SLOT);
    expect(t.find(h(0, 'a', '2'), 0, 'a', '2')).toBe(NO_SLOT);
    // The same hash does not make the same request.
    expect(t.find(h(0, 'a', '1'), 0, 'b', '1')).toBe(NO_SLOT);
    expect([t.sessionId(s), t.requestId(s), t.serviceId(s)]).toEqual(['a', '1', 0]);
  });

  it('keeps requests in least-recently-touched order through touches and releases', () => {
    const t = table();
    const [a, b, c] = ['a', 'b', 'c'].map((s) => add(t, s)) as [number, number, number];
    expect(lru(t)).toEqual(['a', 'b', 'c']);
    t.touch(a);
    expect(lru(t)).toEqual(['b', 'c', 'a']);
    t.release(c);
    expect(lru(t)).toEqual(['b', 'a']);
    t.touch(b);
    expect(lru(t)).toEqual(['a', 'b']);
    expect(t.oldest).toBe(a);
    expect(t.size).toBe(2);
    t.release(a);
    t.release(b);
    expect(t.oldest).toBe(NO_SLOT);
  });

  it('gives a request seen again after its release a new incarnation, so it inherits nothing keyed by the old one', () => {
    const t = table();
    const first = add(t, 'a');
    const key = t.incarnationKey(first);
    t.release(first);
    const again = add(t, 'a');
    expect(again).toBe(first);
    expect(t.incarnationKey(again)).not.toBe(key);
    expect(t.incarnation(again)).toBeGreaterThan(0);
  });

  it('restores requests oldest first: the same order, the same incarnations, no number given out twice', () => {
    const t = table();
    for (const s of ['a', 'b', 'c', 'd']) add(t, s);
    t.release(t.find(RequestTable.hash(0, 'b', '1'), 0, 'b', '1'));
    t.touch(t.oldest);
    const saved = lru(t).map((session) => {
      const slot = t.find(RequestTable.hash(0, session, '1'), 0, session, '1');
      return { session, incarnation: t.incarnation(slot), key: t.incarnationKey(slot) };
    });
    const back = table();
    for (const r of saved) back.restore(0, r.session, '1', r.incarnation, t.incarnationsGiven);
    expect(lru(back)).toEqual(['c', 'd', 'a']);
    for (const r of saved) {
      const slot = back.find(RequestTable.hash(0, r.session, '1'), 0, r.session, '1');
      expect(back.incarnationKey(slot)).toBe(r.key);
    }
    expect(back.incarnationsGiven).toBe(t.incarnationsGiven);
    expect(back.incarnation(add(back, 'e'))).toBe(t.incarnationsGiven + 1);
  });

  it('grows past its first capacity and keeps every request findable, up to maxRequests', () => {
    const t = table(5000);
    for (let i = 0; i < 5000; i++) add(t, `s${i}`);
    expect(t.size).toBe(5000);
    for (let i = 0; i < 5000; i += 7) {
      const slot = t.find(RequestTable.hash(0, `s${i}`, '1'), 0, `s${i}`, '1');
      expect(t.sessionId(slot)).toBe(`s${i}`);
    }
    expect(lru(t).slice(0, 3)).toEqual(['s0', 's1', 's2']);
  });
});
