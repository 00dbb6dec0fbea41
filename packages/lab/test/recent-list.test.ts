import { describe, expect, it } from 'vitest';
import { RecentList } from '../src/recent-list.js';

describe('RecentList', () => {
  it('keeps the last items, oldest first, and counts every push', () => {
    const list = new RecentList<number>(3);
    expect(list.toArray()).toEqual([]);
    list.push(1);
    list.push(2);
    expect(list.toArray()).toEqual([1, 2]);
    list.push(3);
    list.push(4);
    expect(list.toArray()).toEqual([2, 3, 4]);
    for (let i = 5; i <= 9; i++) list.push(i);
    expect(list.toArray()).toEqual([7, 8, 9]);
    expect(list.total).toBe(9);
  });

  it('refuses a capacity that keeps nothing', () => {
    expect(() => new RecentList(0)).toThrow('capacity must be positive, got 0');
  });
});
