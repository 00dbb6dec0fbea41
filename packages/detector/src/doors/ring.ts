/** The most recent `capacity` items, oldest first. */
export class Ring<T> {
  private readonly items: (T | undefined)[];
  private next = 0;
  private count = 0;

  constructor(capacity: number) {
    this.items = new Array<T | undefined>(Math.max(1, capacity));
  }

  push(item: T): void {
    this.items[this.next] = item;
    this.next = (this.next + 1) % this.items.length;
    if (this.count < this.items.length) this.count++;
  }

  toArray(): T[] {
    const out: T[] = [];
    const n = this.items.length;
    for (let i = 0; i < this.count; i++) out.push(this.items[(this.next - this.count + i + n) % n]!);
    return out;
  }
}
