import type { CursorMemory, StreamRecord } from './types.js';

/** Slots allocated at first; doubled as deliveries arrive, up to the cap. */
const FIRST_SLOTS = 8;

/**
 * The last `cap` deliveries of a session in a ring: the 32-bit FNV-1a hash of each event id (4 bytes
 * in a typed array, no copied string) and the stream that delivered it. Two writes per event; a scan
 * only when a cursor is placed. The ids themselves are not kept: a cursor is matched by its hash, so
 * an id never delivered is taken for a delivered one only on a 32-bit collision with one of the last
 * `cap` (at most 256 / 2^32 per unknown cursor with the default cap).
 */
export class CursorRing implements CursorMemory {
  private hashes = new Int32Array(0);
  private streams: (StreamRecord | undefined)[] = [];
  private count = 0;
  private next = 0;

  constructor(private readonly cap: number) {
    if (!(cap > 0)) throw new RangeError(`cursorsPerSession must be positive, got ${cap}`);
  }

  get size(): number {
    return this.count;
  }

  add(id: string, stream: StreamRecord): void {
    if (this.count === this.hashes.length && this.count < this.cap) this.grow();
    this.hashes[this.next] = hashOfId(id);
    this.streams[this.next] = stream;
    if (this.count < this.hashes.length) this.count++;
    this.next = this.next + 1 === this.hashes.length ? 0 : this.next + 1;
  }

  get(eventId: string): StreamRecord | undefined {
    const n = this.count;
    const slots = this.hashes.length;
    const hash = hashOfId(eventId);
    for (let k = 1; k <= n; k++) {
      const i = (this.next - k + slots) % slots;
      if (this.hashes[i] === hash) return this.streams[i];
    }
    return undefined;
  }

  /** While not full the ring has not wrapped: slots 0..count-1 in order, so growing keeps the order. */
  private grow(): void {
    const slots = Math.min(this.cap, Math.max(FIRST_SLOTS, this.hashes.length * 2));
    const hashes = new Int32Array(slots);
    hashes.set(this.hashes);
    this.hashes = hashes;
    this.next = this.count;
  }
}

/** 32-bit FNV-1a over the id's UTF-16 code units. */
export function hashOfId(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash | 0;
}
