import { holdShape } from './shapes.js';
import type { CursorMemory, StreamRecord } from './types.js';

/**
 * The last `cap` deliveries of a session in a ring: a 30-bit FNV-1a hash of each event id (a small
 * integer stored unboxed, no copied string) and the stream that delivered it. Two writes per event;
 * a scan only when a cursor is placed. The ids themselves are not kept: a cursor is matched by its
 * hash, so an id never delivered is taken for a delivered one only on a 30-bit collision with one of
 * the last `cap` (at most 256 / 2^30 per unknown cursor with the default cap). The arrays grow with
 * the deliveries, so a session that saw few events holds few slots.
 */
export class CursorRing implements CursorMemory {
  private readonly hashes: number[] = [];
  private readonly streams: StreamRecord[] = [];
  private next = 0;

  constructor(private readonly cap: number) {
    if (!(cap > 0)) throw new RangeError(`cursorsPerSession must be positive, got ${cap}`);
  }

  get size(): number {
    return this.hashes.length;
  }

  add(id: string, stream: StreamRecord): void {
    const hash = hashOfId(id);
    if (this.hashes.length < this.cap) {
      this.hashes.push(hash);
      this.streams.push(stream);
      return;
    }
    this.hashes[this.next] = hash;
    this.streams[this.next] = stream;
    this.next = this.next + 1 === this.cap ? 0 : this.next + 1;
  }

  get(eventId: string): StreamRecord | undefined {
    const n = this.hashes.length;
    const hash = hashOfId(eventId);
    for (let k = 1; k <= n; k++) {
      const i = (this.next - k + n) % n;
      if (this.hashes[i] === hash) return this.streams[i];
    }
    return undefined;
  }
}

holdShape(new CursorRing(1));

/** FNV-1a over the id's UTF-16 code units, cut to 30 bits so that it stays a small integer. */
export function hashOfId(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash & 0x3fffffff;
}
