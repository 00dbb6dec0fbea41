/** A set that remembers at most `capacity` keys, forgetting the oldest first. */
export class FifoSet {
  private readonly set = new Set<string>();
  private readonly ring: (string | undefined)[];
  private next = 0;

  constructor(private readonly capacity: number) {
    this.ring = new Array<string | undefined>(Math.max(1, capacity));
  }

  has(key: string): boolean {
    return this.set.has(key);
  }

  /** Adds the key; false when it was already there. */
  add(key: string): boolean {
    if (this.set.has(key)) return false;
    const old = this.ring[this.next];
    if (old !== undefined) this.set.delete(old);
    this.ring[this.next] = key;
    this.next = (this.next + 1) % this.ring.length;
    this.set.add(key);
    return true;
  }

  get size(): number {
    return this.set.size;
  }
}
