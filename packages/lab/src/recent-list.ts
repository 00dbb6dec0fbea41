/** The last `capacity` items pushed, oldest first. */
export class RecentList<T> {
  private readonly items: T[] = [];
  total = 0;

  constructor(private readonly capacity: number) {}

  push(item: T): void {
    this.items.push(item);
    this.total++;
    if (this.items.length > this.capacity) this.items.shift();
  }

  toArray(): T[] {
    return [...this.items];
  }
}
