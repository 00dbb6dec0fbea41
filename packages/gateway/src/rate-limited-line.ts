/**
 * A diagnostic line on stderr at most once per interval: a defect that every request hits (an
 * internal error, a failed observation) must not turn the gateway's stderr into a firehose that costs
 * more than the traffic. The lines left out in between are counted and told with the next one.
 */
export class RateLimitedLine {
  private last = -Infinity;
  private skipped = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly write: (line: string) => void = (line) => void process.stderr.write(line),
    private readonly now: () => number = Date.now,
  ) {}

  /** Writes `text` (one line, no line break) unless a line went out less than the interval ago. */
  line(text: string): void {
    const now = this.now();
    if (now - this.last < this.intervalMs) {
      this.skipped++;
      return;
    }
    this.last = now;
    const skipped = this.skipped;
    this.skipped = 0;
    this.write(skipped > 0 ? `${text} (${skipped} more since the last such line)\n` : `${text}\n`);
  }
}
