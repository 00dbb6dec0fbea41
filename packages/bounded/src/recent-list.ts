/**
 * The last `capacity` items pushed, and how many were pushed in all. A ring: a push is one array write,
 * whatever the capacity (the lab's request log keeps 1000 entries and pushes one per request). The
 * array grows with the pushes up to the capacity, so a list that saw few items holds few slots.
 */
export class RecentList<T> {
  private readonly items: T[] = [];
  /** Where the next push writes once the list is full: the oldest item's index. */
  private next = 0;
  /** Items pushed since creation, the dropped ones included. */
  total = 0;

  constructor(readonly capacity: number) {
    if (!(capacity > 0)) throw new RangeError(`capacity must be positive, got ${capacity}`);
  }

  /** Items held: min(total, capacity). */
  get size(): number {
    return this.items.length;
  }

  /** Items pushed out by newer ones (the list's evictions). */
  get dropped(): number {
    return this.total - this.items.length;
  }

  push(item: T): void {
    this.total++;
    if (this.items.length < this.capacity) {
      this.items.push(item);
      return;
    }
    this.items[this.next] = item;
    this.next = this.next + 1 === this.capacity ? 0 : this.next + 1;
  }

  /** The item `age` pushes back: 0 is the newest, size - 1 the oldest; undefined past them. */
  newest(age: number): T | undefined {
    const n = this.items.length;
    if (!(age >= 0 && age < n)) return undefined;
    // While the list is not full, next is 0 and the newest item is the last one.
    return this.items[(this.next - 1 - age + 2 * n) % n];
  }

  /** Oldest first. */
  toArray(): T[] {
    const n = this.items.length;
    const out = new Array<T>(n);
    for (let i = 0; i < n; i++) out[i] = this.items[(this.next + i) % n]!;
    return out;
  }
}
