import type { Finding } from '../core/types.js';

/**
 * The recent findings for GET /findings: at most `capacity` of them, each kept with its JSON text
 * (written once, shared with stdout). An answer holds the newest findings that fit in `maxBytes`, so it
 * is bounded in bytes as well as in count whatever the findings hold, and building it cannot throw.
 */
export class FindingLog {
  private readonly items: ({ finding: Finding; json: string } | undefined)[];
  private next = 0;
  private count = 0;

  constructor(
    capacity: number,
    private readonly maxBytes: number,
  ) {
    this.items = new Array(Math.max(1, capacity));
  }

  push(finding: Finding, json: string): void {
    this.items[this.next] = { finding, json };
    this.next = (this.next + 1) % this.items.length;
    if (this.count < this.items.length) this.count++;
  }

  /** Oldest first. */
  findings(): Finding[] {
    const out: Finding[] = [];
    for (let k = this.count; k >= 1; k--) out.push(this.back(k).finding);
    return out;
  }

  /** A JSON array of the newest findings whose text fits in maxBytes, oldest first; `omitted` were left out. */
  toJson(): { body: string; omitted: number } {
    const parts: string[] = [];
    let bytes = 2;
    for (let k = 1; k <= this.count; k++) {
      const json = this.back(k).json;
      const size = Buffer.byteLength(json, 'utf8') + 1;
      if (bytes + size > this.maxBytes) break;
      bytes += size;
      parts.push(json);
    }
    parts.reverse();
    return { body: `[${parts.join(',')}]`, omitted: this.count - parts.length };
  }

  /** The item k pushes back: 1 is the newest, count the oldest. */
  private back(k: number): { finding: Finding; json: string } {
    const n = this.items.length;
    return this.items[(this.next - k + n) % n]!;
  }
}
