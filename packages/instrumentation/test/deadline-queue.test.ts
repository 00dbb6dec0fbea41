import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineQueue, type DeadlineEntry } from '../src/deadline-queue.js';

interface Entry extends DeadlineEntry {
  readonly name: string;
}
const entry = (name: string): Entry => ({ name, deadlineSlot: -1, deadlineAt: 0 });

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe('DeadlineQueue', () => {
  it('expires each entry its wait after it was added, in order, with one timer at a time', () => {
    const expired: string[] = [];
    const queue = new DeadlineQueue<Entry>(1_000, (e) => expired.push(e.name));
    queue.add(entry('a'));
    vi.advanceTimersByTime(300);
    queue.add(entry('b'));
    queue.add(entry('c'));
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(699);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['a']);
    vi.advanceTimersByTime(299);
    expect(expired).toEqual(['a']);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['a', 'b', 'c']);
    expect(queue.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never expires an entry removed, and waits no longer for the others', () => {
    const expired: string[] = [];
    const queue = new DeadlineQueue<Entry>(1_000, (e) => expired.push(e.name));
    const a = entry('a');
    const b = entry('b');
    queue.add(a);
    vi.advanceTimersByTime(500);
    queue.add(b);
    queue.remove(a);
    queue.remove(a);
    expect(queue.size).toBe(1);
    // a's deadline passes: nothing expires, and b waits for its own.
    vi.advanceTimersByTime(500);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(499);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['b']);
    // Removed after it expired, or added twice: nothing happens.
    queue.remove(b);
    queue.add(b);
    queue.add(b);
    expect(queue.size).toBe(1);
    vi.advanceTimersByTime(1_000);
    expect(expired).toEqual(['b', 'b']);
  });

  it('holds no more than about twice the entries open, whatever order they end in', () => {
    const queue = new DeadlineQueue<Entry>(60_000, () => {});
    const first = entry('first');
    queue.add(first);
    // The oldest stays open while 100,000 after it come and go.
    let held = 0;
    for (let i = 0; i < 100_000; i++) {
      const e = entry(String(i));
      queue.add(e);
      queue.remove(e);
      held = Math.max(held, (queue as unknown as { entries: unknown[] }).entries.length);
    }
    expect(held).toBeLessThanOrEqual(2 * 2 + 64);
    expect(queue.size).toBe(1);
    // Entries open in between keep their deadlines and their order through each compaction.
    const open = Array.from({ length: 200 }, (_, i) => entry(`open ${i}`));
    const expired: string[] = [];
    const watched = new DeadlineQueue<Entry>(1_000, (e) => expired.push(e.name));
    for (const e of open) {
      watched.add(e);
      const gone = entry('gone');
      watched.add(gone);
      watched.remove(gone);
    }
    vi.advanceTimersByTime(1_000);
    expect(expired).toEqual(open.map((e) => e.name));
  });

  it('an entry added while others expire waits its whole wait', () => {
    const expired: string[] = [];
    const late = entry('late');
    const queue = new DeadlineQueue<Entry>(1_000, (e) => {
      expired.push(e.name);
      if (e.name === 'a') queue.add(late);
    });
    queue.add(entry('a'));
    queue.add(entry('b'));
    vi.advanceTimersByTime(1_000);
    expect(expired).toEqual(['a', 'b']);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(999);
    expect(expired).toEqual(['a', 'b']);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['a', 'b', 'late']);
  });
});
