/**
 * The last `capacity` items pushed, oldest first, and how many were pushed in all. A ring: a push is
 * one array write, whatever the capacity (the request log keeps 1000 entries and pushes per request).
 *
 * The lab's one last-N list (request log, replay log). `packages/detector/src/doors/ring.ts` is the same
 * structure on the detector side; the two are to become one shared module in a later pass.
 */
export class RecentList<T> {
  private readonly items: T[] = [];
  private next = 0;
  /** Items pushed since creation, the dropped ones included. */
  total = 0;

  constructor(private readonly capacity: number) {
    if (!(capacity > 0)) throw new RangeError(`capacity must be positive, got ${capacity}`);
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

  toArray(): T[] {
    return [...this.items.slice(this.next), ...this.items.slice(0, this.next)];
  }
}
