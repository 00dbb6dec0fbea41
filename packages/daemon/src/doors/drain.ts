/** Requests being answered, so that a graceful shutdown can wait for them (up to its grace period). */
export class InflightRequests {
  private active = 0;
  private waiters: (() => void)[] = [];

  get size(): number {
    return this.active;
  }

  enter(): void {
    this.active++;
  }

  leave(): void {
    if (this.active > 0) this.active--;
    if (this.active === 0) for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once no request is in flight, or after `ms`; true when they all finished. */
  idle(ms: number): Promise<boolean> {
    if (this.active === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      timer.unref();
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
