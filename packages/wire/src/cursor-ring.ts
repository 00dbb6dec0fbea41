import { hashOfId } from './id-hash.js';
import { holdShape } from './shapes.js';
import type { CursorMemory, StreamRecord } from './types.js';

/**
 * The last `cap` deliveries of a session in a ring: a 30-bit FNV-1a hash of each event id (a small
 * integer stored unboxed, no copied string) and the stream that delivered it. Two writes per event;
 * a scan only when a cursor is placed. The ids themselves are not kept: a cursor is matched by its
 * hash, so an id never delivered is taken for a delivered one only on a 30-bit collision with one of
 * the last `cap` (at most 256 / 2^30 per unknown cursor with the default cap). The arrays grow with
 * the deliveries, so a session that saw few events holds few slots.
 *
 * Not a RecentList of @resumewatch/bounded: that would cost an object per delivery (hash and stream
 * together) on the per-event path; two parallel arrays cost none.
 */
export class CursorRing implements CursorMemory {
  private hashes: number[] = [];
  private streams: StreamRecord[] = [];
  /** The position of each delivery on its stream (StreamRecord.deliveredEvents when it was delivered). */
  private positions: number[] = [];
  /** Deliveries held: they fill slots 0..count-1 in order until the cap, then the ring wraps at `next`. */
  private count = 0;
  private next = 0;

  constructor(private readonly cap: number) {
    if (!(cap > 0)) throw new RangeError(`cursorsPerSession must be positive, got ${cap}`);
  }

  get size(): number {
    return this.count;
  }

  add(id: string, stream: StreamRecord, position: number): void {
    this.addHash(hashOfId(id), stream, position);
  }

  /** Records a delivery by the id's hash (`hashOfId`), as the SSE scanner computed it, at `position` of its stream. */
  addHash(hash: number, stream: StreamRecord, position: number): void {
    if (this.count < this.cap) {
      if (this.count === this.hashes.length) this.grow();
      this.hashes[this.count] = hash;
      this.streams[this.count] = stream;
      this.positions[this.count] = position;
      this.count++;
      return;
    }
    this.hashes[this.next] = hash;
    this.streams[this.next] = stream;
    this.positions[this.next] = position;
    this.next = this.next + 1 === this.cap ? 0 : this.next + 1;
  }

  /** The position on `stream` of the last delivery of `eventId` there, 0 when none is remembered. */
  positionOn(eventId: string, stream: StreamRecord): number {
    const n = this.count;
    const hash = hashOfId(eventId);
    for (let k = 1; k <= n; k++) {
      const i = (this.next - k + n) % n;
      if (this.hashes[i] === hash && this.streams[i] === stream) return this.positions[i]!;
    }
    return 0;
  }

  get(eventId: string): StreamRecord | undefined {
    const n = this.count;
    const hash = hashOfId(eventId);
    for (let k = 1; k <= n; k++) {
      const i = (this.next - k + n) % n;
      if (this.hashes[i] === hash) return this.streams[i];
    }
    return undefined;
  }

  /**
   * Room for more deliveries: 4 slots, then doubling up to the cap. An array's own growth (half again
   * plus 16 slots) would give a session that saw a handful of events 17 slots in each array.
   */
  private grow(): void {
    const size = Math.min(this.cap, Math.max(4, this.count * 2));
    const hashes = new Array<number>(size);
    const streams = new Array<StreamRecord>(size);
    const positions = new Array<number>(size);
    for (let i = 0; i < this.count; i++) {
      hashes[i] = this.hashes[i]!;
      streams[i] = this.streams[i]!;
      positions[i] = this.positions[i]!;
    }
    this.hashes = hashes;
    this.streams = streams;
    this.positions = positions;
  }
}

holdShape(new CursorRing(1));
