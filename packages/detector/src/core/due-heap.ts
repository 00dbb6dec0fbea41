/**
 * A binary min-heap of (time, item): what is due first is on top. Its owner keeps it bounded: an entry
 * that went stale (the item's due time moved, or the item left) stays until popped or until the owner
 * rebuilds the heap from its live items (`clear` then `push` each).
 */
export class DueHeap<T> {
  private readonly times: number[] = [];
  private readonly items: T[] = [];

  get size(): number {
    return this.times.length;
  }

  /** The earliest time held; Infinity when empty. */
  get top(): number {
    return this.times.length > 0 ? this.times[0]! : Infinity;
  }

  push(time: number, item: T): void {
    const times = this.times;
    const items = this.items;
    let i = times.length;
    times.push(time);
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!(times[parent]! > time)) break;
      times[i] = times[parent]!;
      items[i] = items[parent]!;
      i = parent;
    }
    times[i] = time;
    items[i] = item;
  }

  /** Removes the earliest entry and gives its item (its time was `top`); undefined when empty. */
  pop(): T | undefined {
    const times = this.times;
    const items = this.items;
    if (times.length === 0) return undefined;
    const out = items[0];
    const lastTime = times.pop()!;
    const lastItem = items.pop()!;
    const n = times.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= n) break;
        const right = left + 1;
        const child = right < n && times[right]! < times[left]! ? right : left;
        if (!(times[child]! < lastTime)) break;
        times[i] = times[child]!;
        items[i] = items[child]!;
        i = child;
      }
      times[i] = lastTime;
      items[i] = lastItem;
    }
    return out;
  }

  clear(): void {
    this.times.length = 0;
    this.items.length = 0;
  }
}
