import { describe, expect, it } from 'vitest';
import { CursorRing, MAX_KEPT_ID_BYTES } from '../src/cursor-ring.js';
import { hashOfId } from '../src/id-hash.js';
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

describe('CursorRing: where a cursor is placed (issue 37)', () => {
  it('compares the id text after a hash match: `evt-288934` and `evt-678010` share a 30-bit hash and are two ids', () => {
    expect(hashOfId('evt-288934')).toBe(hashOfId('evt-678010'));
    const ring = new CursorRing(8);
    const one = stream('one');
    const two = stream('two');
    ring.add('evt-288934', one, 1);
    ring.add('evt-678010', two, 1);
    expect(ring.get('evt-288934')).toBe(one);
    expect(ring.positionOn('evt-288934', two)).toBe(0);
    expect(ring.place('evt-288934')).toEqual({ stream: one, ambiguous: false });
    expect(ring.place('evt-678010')).toEqual({ stream: two, ambiguous: false });
  });

  it('keeps the bytes a scanner hands over (no string made) and compares them', () => {
    const ring = new CursorRing(8);
    const a = stream('a');
    const bytes = Buffer.from('xx evt-288934 yy');
    ring.addBytes(hashOfId('evt-288934'), bytes, 3, 13, a, 4);
    expect(ring.positionOn('evt-288934', a)).toBe(4);
    expect(ring.get('evt-678010')).toBeUndefined();
  });

  it("keeps handed-over bytes of every length, long ones copied whole or around the arena's end, and compares them", () => {
    const ring = new CursorRing(6);
    const a = stream('a');
    const id = (n: number) => `${n}.`.padEnd(n, 'k');
    // Lengths 2 to 70 (either side of the native copy's 16), written into an arena of 6 × 64 bytes
    // many times over: some land across its end, byte by byte, the others in one copy.
    for (let n = 2; n <= 70; n++) {
      const bytes = Buffer.from(`data: ${id(n)}\n`);
      ring.addBytes(hashOfId(id(n)), bytes, 6, 6 + n, a, n);
    }
    for (let n = 67; n <= 70; n++) expect(ring.positionOn(id(n), a)).toBe(n);
    expect(ring.get(id(20))).toBeUndefined();
    // A long id whose bytes differ from a placed one's in its last byte only is another id.
    expect(ring.get(`${id(70).slice(0, -1)}j`)).toBeUndefined();
  });

  it('places a cursor a server gave several events at the earliest of them on that stream', () => {
    const ring = new CursorRing(8);
    const a = stream('a');
    ring.add('r1', a, 1);
    ring.add('r1', a, 2);
    ring.add('r2', a, 3);
    ring.add('r2', a, 5);
    expect(ring.positionOn('r1', a)).toBe(1);
    expect(ring.positionOn('r2', a)).toBe(3);
  });

  it('proves nothing once a stream that repeats ids lost its earliest deliveries to the ring', () => {
    const ring = new CursorRing(4);
    const a = stream('a');
    // t1 at positions 1..3, then t2: the ring forgets a's first deliveries, among them t1's earliest.
    for (let position = 1; position <= 3; position++) ring.add('t1', a, position);
    ring.add('t2', a, 4);
    ring.add('t2', a, 5);
    ring.add('t2', a, 6);
    expect(ring.positionOn('t1', a)).toBe(0);
    expect(ring.positionOn('t2', a)).toBe(0);
    // A stream that never repeated an id keeps its proofs whatever the ring forgot.
    const b = stream('b');
    for (let position = 1; position <= 6; position++) ring.add(`u${position}`, b, position);
    expect(ring.positionOn('u5', b)).toBe(5);
  });

  it('does not place an id delivered on two streams that carry different requests', () => {
    const ring = new CursorRing(8);
    const a = { id: 'a', requests: [{ key: '1' }], kind: 'request' } as unknown as StreamRecord;
    const b = { id: 'b', requests: [{ key: '2' }], kind: 'request' } as unknown as StreamRecord;
    // A resume of `a`: the same requests, one logical stream.
    const resumed = { id: 'c', requests: [...a.requests], kind: 'request' } as unknown as StreamRecord;
    ring.add('1700000000', a, 1);
    ring.add('1700000000', resumed, 1);
    expect(ring.place('1700000000')).toEqual({ stream: resumed, ambiguous: false });
    ring.add('1700000000', b, 1);
    expect(ring.place('1700000000')).toEqual({ stream: undefined, ambiguous: true });
  });

  it('never keeps an id over 256 bytes: it is never placed, never proof', () => {
    const ring = new CursorRing(8);
    const a = stream('a');
    const long = 'x'.repeat(MAX_KEPT_ID_BYTES + 1);
    ring.add(long, a, 1);
    ring.add('x'.repeat(MAX_KEPT_ID_BYTES), a, 2);
    expect(ring.get(long)).toBeUndefined();
    expect(ring.positionOn(long, a)).toBe(0);
    expect(ring.positionOn('x'.repeat(MAX_KEPT_ID_BYTES), a)).toBe(2);
  });

  it('holds 64 bytes of ids a slot: the oldest ids lose their text first and are then never matched', () => {
    const ring = new CursorRing(8);
    const a = stream('a');
    const id = (n: number) => `${n}`.padStart(200, '-');
    // First 4 slots × 64 = 256 bytes of ids: one 200-byte id fits, two do not.
    ring.add(id(1), a, 1);
    ring.add(id(2), a, 2);
    expect(ring.get(id(1))).toBeUndefined();
    expect(ring.positionOn(id(2), a)).toBe(2);
    // Across growth (8 slots, 512 bytes) the kept ids are kept, the lost one stays lost.
    for (let n = 3; n <= 5; n++) ring.add(`s${n}`, a, n);
    ring.add(id(6), a, 6);
    expect(ring.get(id(1))).toBeUndefined();
    expect([2, 6].map((n) => ring.positionOn(id(n), a))).toEqual([2, 6]);
    expect(['s3', 's4', 's5'].map((s) => ring.positionOn(s, a))).toEqual([3, 4, 5]);
    // Ids written around the arena's end still compare whole.
    for (let n = 7; n <= 40; n++) ring.add(`id-${n}-${'y'.repeat(n)}`, a, n);
    expect(ring.positionOn(`id-40-${'y'.repeat(40)}`, a)).toBe(40);
    expect(ring.positionOn(`id-39-${'y'.repeat(39)}`, a)).toBe(39);
  });
  it('keeps older ids whole when an id that is not ASCII is too long to keep, however its text begins', () => {
    // Two slots: a 128-byte arena. The first id fills it to byte 100; the next, 70 characters, is 130
    // bytes of UTF-8 (unkept): nothing of it may be written where the first id's bytes are (wrapping).
    const ring = new CursorRing(2);
    const [a, b] = [stream('a'), stream('b')];
    const first = 'f'.repeat(100);
    ring.add(first, a, 1);
    const long = 'x'.repeat(40) + '漢'.repeat(30);
    ring.add(long, b, 2);
    expect(ring.get(first)).toBe(a);
    expect(ring.place(first)).toEqual({ stream: a, ambiguous: false });
    expect(ring.get(long)).toBeUndefined();
    // One that fits is kept whole, after an ASCII start copied as it was checked.
    const short = 'y'.repeat(5) + 'é漢';
    ring.add(short, b, 3);
    expect(ring.get(short)).toBe(b);
    expect(ring.get('y'.repeat(5))).toBeUndefined();
  });
});
