import { describe, expect, it } from 'vitest';
import { RecentList } from '../src/recent-list.js';

describe('RecentList', () => {
  it('keeps the last items, oldest first, and counts every push and every drop', () => {
    const list = new RecentList<number>(3);
    expect(list.toArray()).toEqual([]);
    list.push(1);
    list.push(2);
    expect(list.toArray()).toEqual([1, 2]);
    expect(list.dropped).toBe(0);
    list.push(3);
    list.push(4);
    expect(list.toArray()).toEqual([2, 3, 4]);
    expect(list.dropped).toBe(1);
    for (let i = 5; i <= 9; i++) list.push(i);
    expect(list.toArray()).toEqual([7, 8, 9]);
    expect(list.total).toBe(9);
    expect(list.size).toBe(3);
    expect(list.dropped).toBe(6);
  });

  it('reads back from the newest: newest(0) is the last push, newest(size - 1) the oldest kept', () => {
    const list = new RecentList<string>(4);
    expect(list.newest(0)).toBeUndefined();
    list.push('a');
    list.push('b');
    expect([list.newest(0), list.newest(1), list.newest(2)]).toEqual(['b', 'a', undefined]);
    for (const item of ['c', 'd', 'e', 'f']) list.push(item);
    expect([0, 1, 2, 3].map((age) => list.newest(age))).toEqual(['f', 'e', 'd', 'c']);
    expect(list.newest(4)).toBeUndefined();
    expect(list.newest(-1)).toBeUndefined();
  });

  it('with capacity 1 holds the last push only', () => {
    const list = new RecentList<number>(1);
    list.push(1);
    list.push(2);
    expect(list.toArray()).toEqual([2]);
    expect(list.newest(0)).toBe(2);
    expect(list.dropped).toBe(1);
  });

  it('refuses a capacity that keeps nothing', () => {
    expect(() => new RecentList(0)).toThrow('capacity must be positive, got 0');
  });
});
