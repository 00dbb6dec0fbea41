/** An entry of a DeadlineQueue: where it sits in the queue's array (-1: not in it), and when it expires. */
export interface DeadlineEntry {
  deadlineSlot: number;
  deadlineAt: number;
}

/**
 * Entries that each expire a fixed wait after they were added (a request's deadline), with one timer
 * for all of them: armed for the oldest entry's deadline, re-armed for the next when it fires. A Node
 * timer per entry, set and cleared, costs a timer list made and dropped (and a priority queue insert and
 * removal) whenever it is the only one of its duration, as a proxy's one request at a time is. The wait
 * is the same for every entry, and the clock monotonic (`performance.now()`, the global one, which fake
 * timers replace with setTimeout), so the oldest entry's deadline is the earliest.
 * An entry removed leaves a hole; the array is compacted once holes outnumber the entries in it, so
 * what it holds stays within twice the entries open (plus a few slots).
 */
export class DeadlineQueue<T extends DeadlineEntry> {
  private entries: (T | undefined)[] = [];
  private head = 0;
  private live = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The deadline the timer was armed for: at its firing, entries due by then expire, whatever the clock reads. */
  private armedFor = 0;
  /** Entries expiring now: one added meanwhile waits for the timer armed after them. */
  private firing = false;

  constructor(
    private readonly waitMs: number,
    private readonly expire: (entry: T) => void,
  ) {}

  get size(): number {
    return this.live;
  }

  /** `entry` expires `waitMs` from now (an entry in the queue already is left as it is). */
  add(entry: T): void {
    if (entry.deadlineSlot >= 0) return;
    entry.deadlineAt = performance.now() + this.waitMs;
    entry.deadlineSlot = this.entries.length;
    this.entries.push(entry);
    this.live++;
    if (this.timer === undefined && !this.firing) this.arm(entry.deadlineAt);
  }

  /** `entry` will not expire (it ended first). Its timer stays armed: at its firing, it re-arms or stops. */
  remove(entry: T): void {
    const slot = entry.deadlineSlot;
    if (slot < 0) return;
    entry.deadlineSlot = -1;
    this.entries[slot] = undefined;
    this.live--;
    const entries = this.entries;
    while (this.head < entries.length && entries[this.head] === undefined) this.head++;
    if (this.head === entries.length) {
      entries.length = 0;
      this.head = 0;
    } else if (entries.length > 2 * this.live + 64) this.compact();
  }

  private compact(): void {
    const kept: (T | undefined)[] = [];
    for (let i = this.head; i < this.entries.length; i++) {
      const entry = this.entries[i];
      if (entry === undefined) continue;
      entry.deadlineSlot = kept.length;
      kept.push(entry);
    }
    this.entries = kept;
    this.head = 0;
  }

  private arm(deadline: number): void {
    this.armedFor = deadline;
    this.timer = setTimeout(this.fire, Math.max(0, deadline - performance.now()));
    this.timer.unref();
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.firing = true;
    try {
      const due = Math.max(this.armedFor, performance.now());
      while (this.head < this.entries.length) {
        const entry = this.entries[this.head];
        if (entry === undefined) {
          this.head++;
          continue;
        }
        if (entry.deadlineAt > due) break;
        this.remove(entry);
        this.expire(entry);
      }
    } finally {
      // Armed again for the oldest entry left (one added meanwhile included), whatever `expire` did.
      this.firing = false;
      if (this.live === 0) {
        this.entries.length = 0;
        this.head = 0;
      } else this.arm(this.entries[this.head]!.deadlineAt);
    }
  };
}
