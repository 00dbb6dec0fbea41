import { describe, expect, it } from 'vitest';
import { CursorRing } from '../src/cursor-ring.js';
import type { StreamRecord } from '../src/index.js';

const stream = (id: string) => ({ id }) as StreamRecord;

describe('CursorRing', () => {
  it('places the last `cap` deliveries across growth and wrap-around, the latest delivery of an id first', () => {
    const ring = new CursorRing(20);
    const a = stream('a');
    const b = stream('b');
    for (let i = 0; i < 30; i++) ring.add(`e${i}`, i % 2 === 0 ? a : b, i + 1);
    expect(ring.size).toBe(20);
    expect(ring.get('e9')).toBeUndefined();
    expect(ring.get('e10')).toBe(a);
    expect(ring.get('e29')).toBe(b);
    expect(ring.get('never')).toBeUndefined();
    ring.add('e10', b, 31);
    expect(ring.get('e10')).toBe(b);
    expect(() => new CursorRing(0)).toThrow('cursorsPerSession must be positive, got 0');
  });

  it('keeps order while it grows before wrapping', () => {
    const ring = new CursorRing(3);
    const s = stream('s');
    ring.add('x', s, 1);
    ring.add('y', s, 2);
    ring.add('z', s, 3);
    ring.add('w', s, 4);
    expect(['x', 'y', 'z', 'w'].map((id) => ring.get(id)?.id)).toEqual([undefined, 's', 's', 's']);
  });

  it('tells the position of an id on a given stream (a cursor says how far its reader read), 0 when unknown', () => {
    const ring = new CursorRing(8);
    const a = stream('a');
    const b = stream('b');
    ring.add('p', a, 1);
    ring.add('q', a, 2);
    ring.add('q', b, 5);
    expect(ring.positionOn('q', a)).toBe(2);
    expect(ring.positionOn('q', b)).toBe(5);
    expect(ring.positionOn('p', b)).toBe(0);
    expect(ring.positionOn('never', a)).toBe(0);
  });
});
