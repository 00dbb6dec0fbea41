import { describe, expect, it } from 'vitest';
import { CursorRing } from '../src/cursor-ring.js';
import type { StreamRecord } from '../src/index.js';

const stream = (id: string) => ({ id }) as StreamRecord;

describe('CursorRing', () => {
  it('places the last `cap` deliveries across growth and wrap-around, the latest delivery of an id first', () => {
    const ring = new CursorRing(20);
    const a = stream('a');
    const b = stream('b');
    for (let i = 0; i < 30; i++) ring.add(`e${i}`, i % 2 === 0 ? a : b);
    expect(ring.size).toBe(20);
    expect(ring.get('e9')).toBeUndefined();
    expect(ring.get('e10')).toBe(a);
    expect(ring.get('e29')).toBe(b);
    expect(ring.get('never')).toBeUndefined();
    ring.add('e10', b);
    expect(ring.get('e10')).toBe(b);
    expect(() => new CursorRing(0)).toThrow('cursorsPerSession must be positive, got 0');
  });

  it('keeps order while it grows before wrapping', () => {
    const ring = new CursorRing(3);
    const s = stream('s');
    ring.add('x', s);
    ring.add('y', s);
    ring.add('z', s);
    ring.add('w', s);
    expect(['x', 'y', 'z', 'w'].map((id) => ring.get(id)?.id)).toEqual([undefined, 's', 's', 's']);
  });
});
