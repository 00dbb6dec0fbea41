import { BoundedMap } from '@resumewatch/bounded';

/**
 * Counts the side effects the `side_effect` tool performed, per key. It stands for an external
 * system (a ledger): it survives a simulated restart of the lab server.
 */
export class SideEffectLedger {
  private readonly counts: BoundedMap<string, number>;

  constructor(capacity = 10_000, retentionMs = 3_600_000) {
    this.counts = new BoundedMap(capacity, retentionMs);
  }

  record(key: string): number {
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    return count;
  }

  count(key: string): number {
    return this.counts.get(key) ?? 0;
  }
}
