import { describe, expect, it } from 'vitest';
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
    const started = Date.now();
    await resumes.next(0, 50, new AbortController().signal);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    const cancel = new AbortController();
    const waiting = resumes.next(0, 60_000, cancel.signal);
    cancel.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    resumes.resumed();
    expect(resumes.count()).toBe(1);
  });
});
