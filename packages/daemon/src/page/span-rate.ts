/** Spans per second over the last samples (one a tick): what the page's header shows. */
export class SpanRate {
  private readonly times: number[] = [];
  private readonly totals: number[] = [];

  constructor(private readonly samples = 10) {}

  /** The total spans received so far, at `now` (Unix ms). */
  sample(now: number, total: number): void {
    this.times.push(now);
    this.totals.push(total);
    if (this.times.length > this.samples) {
      this.times.shift();
      this.totals.shift();
    }
  }

  /** Spans per second between the oldest and the newest sample; undefined before two samples. */
  perSecond(): number | undefined {
    const n = this.times.length;
    if (n < 2) return undefined;
    const ms = this.times[n - 1]! - this.times[0]!;
    return ms > 0 ? ((this.totals[n - 1]! - this.totals[0]!) * 1000) / ms : undefined;
  }
}
