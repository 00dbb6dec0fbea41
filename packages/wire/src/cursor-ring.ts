import type { CursorMemory, StreamRecord } from './types.js';

/** The last `cap` deliveries in a ring: two array writes per event, a scan only when a cursor is placed. */
export class CursorRing implements CursorMemory {
  private readonly ids: string[] = [];
  private readonly streams: StreamRecord[] = [];
  private next = 0;

  constructor(private readonly cap: number) {}

  get size(): number {
    return this.ids.length;
  }

  add(id: string, stream: StreamRecord): void {
    if (this.ids.length < this.cap) {
      this.ids.push(id);
      this.streams.push(stream);
      return;
    }
    this.ids[this.next] = id;
    this.streams[this.next] = stream;
    this.next = this.next + 1 === this.cap ? 0 : this.next + 1;
  }

  get(eventId: string): StreamRecord | undefined {
    const n = this.ids.length;
    for (let k = 1; k <= n; k++) {
      const i = (this.next - k + n) % n;
      if (this.ids[i] === eventId) return this.streams[i];
    }
    return undefined;
  }

  keys(): IterableIterator<string> {
    const n = this.ids.length;
    const seen = new Set<string>();
    const newestFirst: string[] = [];
    for (let k = 1; k <= n; k++) {
      const id = this.ids[(this.next - k + n) % n]!;
      if (!seen.has(id)) {
        seen.add(id);
        newestFirst.push(id);
      }
    }
    return newestFirst.reverse().values();
  }
}
