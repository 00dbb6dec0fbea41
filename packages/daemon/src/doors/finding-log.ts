import { RecentList } from '@resumewatch/bounded';
import type { Finding } from '@resumewatch/detector';

/**
 * The recent findings for GET /findings: at most `capacity` of them, each kept with its JSON text
 * (written once, shared with stdout). An answer holds the newest findings that fit in `maxBytes`, so it
 * is bounded in bytes as well as in count whatever the findings hold, and building it cannot throw.
 */
export class FindingLog {
  private readonly items: RecentList<{ finding: Finding; json: string }>;

  constructor(
    capacity: number,
    private readonly maxBytes: number,
  ) {
    this.items = new RecentList(Math.max(1, capacity));
  }

  push(finding: Finding, json: string): void {
    this.items.push({ finding, json });
  }

  /** Oldest first. */
  findings(): Finding[] {
    return this.items.toArray().map((item) => item.finding);
  }

  /** A JSON array of the newest findings whose text fits in maxBytes, oldest first; `omitted` were left out. */
  toJson(): { body: string; omitted: number } {
    const parts = this.fitting().map((item) => item.json);
    parts.reverse();
    return { body: `[${parts.join(',')}]`, omitted: this.items.size - parts.length };
  }

  /** The findings of toJson(), newest first. */
  newestFitting(): { findings: Finding[]; omitted: number } {
    const items = this.fitting();
    return { findings: items.map((item) => item.finding), omitted: this.items.size - items.length };
  }

  /** The newest items whose JSON text fits in maxBytes as one array, newest first. */
  private fitting(): { finding: Finding; json: string }[] {
    const out: { finding: Finding; json: string }[] = [];
    let bytes = 2;
    for (let age = 0; age < this.items.size; age++) {
      const item = this.items.newest(age)!;
      const size = Buffer.byteLength(item.json, 'utf8') + 1;
      if (bytes + size > this.maxBytes) break;
      bytes += size;
      out.push(item);
    }
    return out;
  }
}
