import { describe, expect, it } from 'vitest';
import { DueHeap } from '../../src/core/due-heap.js';

describe('DueHeap', () => {
  it('gives its items back earliest first, whatever the order they were pushed in', () => {
    const heap = new DueHeap<number>();
    let seed = 7;
    const times: number[] = [];
    for (let i = 0; i < 500; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const t = seed % 1000;
      times.push(t);
      heap.push(t, t);
    }
    expect(heap.size).toBe(500);
    const out: number[] = [];
    while (heap.size > 0) {
      const top = heap.top;
      const item = heap.pop()!;
      expect(item).toBe(top);
      out.push(item);
    }
    expect(out).toEqual([...times].sort((a, b) => a - b));
    expect(heap.top).toBe(Infinity);
    expect(heap.pop()).toBeUndefined();
  });
});
