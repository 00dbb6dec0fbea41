import type { RequestRecord } from '@resumewatch/wire';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HeldPolls, releaseHeldPolls } from '../src/held-polls.js';

// The holder only keys by the observer's request record; any object stands for one here.
const record = (id: string): RequestRecord => ({ id }) as unknown as RequestRecord;

function holder(cap?: number) {
  const expired: [string, boolean][] = [];
  const polls = new HeldPolls<string>((value, evicted) => expired.push([value, evicted]), cap);
  return { polls, expired };
}

describe('HeldPolls: the latest poll of each unfinished request', () => {
  // Deadlines are timers: the clock is moved past them, not waited for.
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('holds one per request: the next hold hands the previous back, take releases it', () => {
    const { polls, expired } = holder();
    const a = record('a');
    expect(polls.hold(a, 's1', 'poll-1', Date.now() + 60_000)).toBeUndefined();
    expect(polls.hold(a, 's1', 'poll-2', Date.now() + 60_000)).toBe('poll-1');
    expect(polls.size).toBe(1);
    expect(polls.take(a)).toBe('poll-2');
    expect(polls.take(a)).toBeUndefined();
    expect(polls.size).toBe(0);
    expect(expired).toEqual([]);
  });

  it('hands a poll back at its deadline, once, and not one taken before it', () => {
    const { polls, expired } = holder();
    const a = record('a');
    const b = record('b');
    polls.hold(a, 's1', 'poll-a', Date.now() + 30);
    polls.hold(b, 's1', 'poll-b', Date.now() + 30);
    expect(polls.take(b)).toBe('poll-b');
    vi.advanceTimersByTime(29);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual([['poll-a', false]]);
    vi.advanceTimersByTime(60_000);
    expect(expired).toEqual([['poll-a', false]]);
    expect(polls.size).toBe(0);
  });

  it('takes every poll of a deleted session, and only those', () => {
    const { polls } = holder();
    polls.hold(record('a'), 's1', 'a', Date.now() + 60_000);
    polls.hold(record('b'), 's2', 'b', Date.now() + 60_000);
    polls.hold(record('c'), 's1', 'c', Date.now() + 60_000);
    expect(polls.takeSession('s1').sort()).toEqual(['a', 'c']);
    expect(polls.size).toBe(1);
  });

  it('is capped: the oldest is handed back as evicted, and counted', () => {
    const { polls, expired } = holder(2);
    polls.hold(record('a'), 's', 'a', Date.now() + 60_000);
    polls.hold(record('b'), 's', 'b', Date.now() + 60_000);
    polls.hold(record('c'), 's', 'c', Date.now() + 60_000);
    expect(expired).toEqual([['a', true]]);
    expect(polls.evictions).toBe(1);
    expect(polls.size).toBe(2);
  });

  it('at shutdown, releaseHeldPolls hands every held poll of every holder back as a poll, once, none counted as evicted', () => {
    releaseHeldPolls(); // what the tests above left held
    const first = holder();
    const second = holder();
    const empty = holder();
    const d = record('d');
    first.polls.hold(record('a'), 's1', 'a', Date.now() + 30);
    first.polls.hold(record('b'), 's1', 'b', Date.now() + 60_000);
    second.polls.hold(record('c'), 's2', 'c', Date.now() + 60_000);
    empty.polls.hold(d, 's3', 'd', Date.now() + 60_000);
    expect(empty.polls.take(d)).toBe('d');
    expect(releaseHeldPolls()).toBe(3);
    expect(first.expired).toEqual([
      ['a', true],
      ['b', true],
    ]);
    expect(second.expired).toEqual([['c', true]]);
    expect(empty.expired).toEqual([]);
    expect([first.polls.size, second.polls.size, first.polls.evictions]).toEqual([0, 0, 0]);
    // Released means gone: no deadline hands one back later, and a second release finds nothing.
    vi.advanceTimersByTime(60_000);
    expect(first.expired).toHaveLength(2);
    expect(releaseHeldPolls()).toBe(0);
  });

  it('refuses a cap below 1 with one line', () => {
    expect(() => new HeldPolls(() => undefined, 0)).toThrow('held polls: cap must be at least 1 (got 0)');
  });
});
