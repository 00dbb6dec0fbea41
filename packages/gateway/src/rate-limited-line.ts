/**
 * Diagnostic lines on stderr, at most `burst` per interval: a defect that every request hits (an
 * internal error, a failed observation) must not turn the gateway's stderr into a firehose that costs
 * more than the traffic. The lines left out are counted and told with the next one that goes out.
 */
export class RateLimitedLine {
  private windowStart = -Infinity;
  private written = 0;
  private skipped = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly burst: number,
    private readonly write: (line: string) => void = (line) => void process.stderr.write(line),
    private readonly now: () => number = Date.now,
  ) {}

  /** Writes `text` (one line, no line break) unless `burst` lines went out in this interval already. */
  line(text: string): void {
    const now = this.now();
    if (now - this.windowStart >= this.intervalMs) {
      this.windowStart = now;
      this.written = 0;
    }
    if (this.written >= this.burst) {
      this.skipped++;
      return;
    }
    this.written++;
    const skipped = this.skipped;
    this.skipped = 0;
    this.write(skipped > 0 ? `${text} (${skipped} more like it left out)\n` : `${text}\n`);
  }
}
