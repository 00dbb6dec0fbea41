import { describe, expect, it, vi } from 'vitest';
import { ResumeArrivals } from '../src/resume-arrivals.js';

describe('ResumeArrivals', () => {
  it('resolves a wait once a resume arrives after the count it was given, and at once for one already there', async () => {
    const resumes = new ResumeArrivals();
    const signal = new AbortController().signal;
    let resolved = false;
    const waiting = resumes.next(0, 60_000, signal).then(() => (resolved = true));
    await Promise.resolve();
    expect(resolved).toBe(false);
    resumes.resumed();
    await waiting;
    expect(resumes.count()).toBe(1);
    await resumes.next(0, 60_000, signal);
  });

  it('gives up after its timeout (a client that never resumes), and rejects when the tool is cancelled', async () => {
    const resumes = new ResumeArrivals();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let gaveUp = false;
      const waiting = resumes.next(0, 50, new AbortController().signal).then(() => (gaveUp = true));
      await vi.advanceTimersByTimeAsync(49);
      expect(gaveUp).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await waiting;
      expect(gaveUp).toBe(true);
    } finally {
      vi.useRealTimers();
    }
    const cancel = new AbortController();
    const waiting = resumes.next(0, 60_000, cancel.signal);
    cancel.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    resumes.resumed();
    expect(resumes.count()).toBe(1);
  });
});
