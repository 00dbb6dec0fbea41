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
    const parts: string[] = [];
    let bytes = 2;
    for (let age = 0; age < this.items.size; age++) {
      const json = this.items.newest(age)!.json;
      const size = Buffer.byteLength(json, 'utf8') + 1;
      if (bytes + size > this.maxBytes) break;
      bytes += size;
      parts.push(json);
    }
    parts.reverse();
    return { body: `[${parts.join(',')}]`, omitted: this.items.size - parts.length };
  }
}
