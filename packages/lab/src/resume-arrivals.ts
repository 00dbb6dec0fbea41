/**
 * The resumes (GET with Last-Event-ID) a session has received, for a tool that must not act before its
 * client is back: `poll_task` closes its stream only once the client has returned from the last close,
 * so each close ends a connected stream however slowly a loaded machine reconnects.
 */
export class ResumeArrivals {
  private arrived = 0;
  private waiters: Array<{ after: number; resolve: () => void }> = [];

  /** How many resumes have arrived so far. */
  count(): number {
    return this.arrived;
  }

  /** A resume of the session arrived. */
  resumed(): void {
    this.arrived++;
    const ready = this.waiters.filter((w) => w.after < this.arrived);
    this.waiters = this.waiters.filter((w) => w.after >= this.arrived);
    for (const w of ready) w.resolve();
  }

  /**
   * Resolves once more than `after` resumes have arrived, or after `timeoutMs` (a client that does not
   * resume must not hold the tool forever); rejects when `signal` aborts.
   */
  next(after: number, timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (this.arrived > after) return Promise.resolve();
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.waiters = this.waiters.filter((w) => w !== waiter);
      };
      const waiter = {
        after,
        resolve: () => {
          done();
          resolve();
        },
      };
      const timer = setTimeout(waiter.resolve, timeoutMs);
      const onAbort = (): void => {
        done();
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }
}
