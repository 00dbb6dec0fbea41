/**
 * A stderr line per event, rate-limited: the first `burst` lines of each interval are written, the rest
 * counted, and one line at the interval's end says how many were left out. A client that can make the
 * gateway fail (an upstream it controls sending a status Node will not relay) cannot flood the log, nor
 * spend the gateway's time writing it; the events themselves are counted by the caller whatever is
 * written (`resumewatch_gateway_refusals_total{reason="internal_error"}`).
 */
export class RateLimitedLog {
  private windowStart = Number.NEGATIVE_INFINITY;
  private written = 0;
  private suppressed = 0;
  private summary: ReturnType<typeof setTimeout> | undefined = undefined;

  constructor(
    private readonly write: (line: string) => void,
    /** What is left out, in the summary line: "internal error lines". */
    private readonly what: string,
    private readonly burst = 10,
    private readonly intervalMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Writes `line` (with its line break), or counts it if this interval's burst is spent. */
  line(line: string): void {
    const now = this.now();
    if (now - this.windowStart >= this.intervalMs) {
      this.flush();
      this.windowStart = now;
      this.written = 0;
    }
    if (this.written < this.burst) {
      this.written++;
      this.write(line);
      return;
    }
    this.suppressed++;
    // The summary comes at the interval's end even if nothing else fails by then.
    if (this.summary === undefined) {
      this.summary = setTimeout(() => this.flush(), Math.max(0, this.windowStart + this.intervalMs - now));
      this.summary.unref();
    }
  }

  /** Writes the summary of the lines left out, if any. */
  private flush(): void {
    clearTimeout(this.summary);
    this.summary = undefined;
    if (this.suppressed === 0) return;
    const n = this.suppressed;
    this.suppressed = 0;
    this.write(
      `resumewatch gateway: ${n} more ${this.what} left out in ${Math.round(this.intervalMs / 1000)} s (at most ${this.burst} an interval; every one is counted)\n`,
    );
  }
}
