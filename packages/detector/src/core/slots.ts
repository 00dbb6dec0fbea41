import { hash32 } from './ids.js';

/** No slot: an empty list end, or a request the table does not hold. */
export const NO_SLOT = -1;
const MIN_CAPACITY = 1024;

/**
 * The identity half of the request table: which (service, session, request) lives in which slot, found
 * through an open-addressing hash index, with the slots kept in least-recently-touched order by an
 * intrusive doubly linked list. It holds no detection state; RequestTable (table.ts) adds that, as
 * columns of its own indexed by the same slot numbers, grown and reset through the hooks below.
 */
export abstract class RequestSlots {
  // Columns are private or protected: the detector reads and changes a request through named methods,
  // the state codec (state-codec.ts) through the identity and order methods below.
  protected sessions: (string | undefined)[] = [];
  protected requests: (string | undefined)[] = [];
  /** Index into the detector's service names. */
  protected serviceIds = new Uint32Array(0);
  protected hashes = new Uint32Array(0);
  /** Incarnation of the slot: a request evicted and seen again does not inherit what the old one saw. */
  protected incarnations = new Uint32Array(0);
  private lastIncarnation = 0;
  /** slot + 1, or 0 for an empty bucket. */
  private buckets = new Int32Array(0);
  private bucketMask = 0;
  private capacity = 0;
  private freeList: number[] = [];
  private used = 0;
  private head = NO_SLOT;
  private tail = NO_SLOT;
  private prev = new Int32Array(0);
  private next = new Int32Array(0);

  constructor(readonly maxRequests: number) {}

  /** Resets the columns of a fresh slot (the subclass's columns). */
  protected abstract resetRow(slot: number): void;
  /** Frees what the slot holds beyond its columns (the subclass's cold row). */
  protected abstract releaseRow(slot: number): void;
  /** Grows the subclass's columns to `capacity` slots. */
  protected abstract growRows(capacity: number): void;

  static hash(service: number, session: string, request: string): number {
    return hash32(request, hash32(session, Math.imul(service + 1, 0x9e3779b1)));
  }

  get size(): number {
    return this.used;
  }

  /** The least recently touched request, or NO_SLOT: the first to go when idle or when the table is full. */
  get oldest(): number {
    return this.head;
  }

  sessionId(slot: number): string {
    return this.sessions[slot]!;
  }

  requestId(slot: number): string {
    return this.requests[slot]!;
  }

  serviceId(slot: number): number {
    return this.serviceIds[slot]!;
  }

  /** A key of this incarnation of the request: keys of what it saw (its attempt streams) are not inherited by a reused slot. */
  incarnationKey(slot: number): number {
    return Math.imul(this.hashes[slot]!, 0x9e3779b1) ^ this.incarnations[slot]!;
  }

  /** The slot of (service, session, request) whose hash is `hash`, or NO_SLOT. */
  find(hash: number, service: number, session: string, request: string): number {
    if (this.used === 0) return NO_SLOT;
    const buckets = this.buckets;
    for (let i = hash & this.bucketMask; ; i = (i + 1) & this.bucketMask) {
      const bucket = buckets[i]!;
      if (bucket === 0) return NO_SLOT;
      const slot = bucket - 1;
      if (
        this.hashes[slot] === hash &&
        this.serviceIds[slot] === service &&
        this.requests[slot] === request &&
        this.sessions[slot] === session
      ) {
        return slot;
      }
    }
  }

  /** Returns a fresh slot, most recently touched; the caller has made room if the table was full. */
  create(hash: number, service: number, session: string, request: string): number {
    let slot = this.freeList.pop();
    if (slot === undefined) {
      slot = this.used;
      if (slot >= this.capacity) this.grow();
    }
    this.used++;
    this.sessions[slot] = session;
    this.requests[slot] = request;
    this.serviceIds[slot] = service;
    this.hashes[slot] = hash;
    this.incarnations[slot] = ++this.lastIncarnation;
    this.insertBucket(slot);
    this.resetRow(slot);
    this.linkTail(slot);
    return slot;
  }

  release(slot: number): void {
    if (this.sessions[slot] === undefined) return;
    this.removeBucket(slot);
    this.sessions[slot] = undefined;
    this.requests[slot] = undefined;
    this.releaseRow(slot);
    this.unlink(slot);
    this.freeList.push(slot);
    this.used--;
  }

  /** The next more recently touched request, or NO_SLOT: from `oldest`, every request in LRU order. */
  newer(slot: number): number {
    return this.next[slot]!;
  }

  incarnation(slot: number): number {
    return this.incarnations[slot]!;
  }

  /** The last incarnation number given out: a restored table goes on from there, so no key is reused. */
  get incarnationsGiven(): number {
    return this.lastIncarnation;
  }

  /**
   * A request read back from a state file: created most recently touched (so rows created oldest first
   * rebuild the LRU order) with its saved incarnation, which the keys of its attempt streams hold.
   */
  restore(service: number, session: string, request: string, incarnation: number, incarnationsGiven: number): number {
    const given = this.lastIncarnation;
    const slot = this.create(RequestSlots.hash(service, session, request), service, session, request);
    this.incarnations[slot] = incarnation;
    this.lastIncarnation = Math.max(given, incarnationsGiven);
    return slot;
  }

  /** Makes the slot the most recently touched. */
  touch(slot: number): void {
    if (this.tail === slot) return;
    this.unlink(slot);
    this.linkTail(slot);
  }

  private insertBucket(slot: number): void {
    let i = this.hashes[slot]! & this.bucketMask;
    while (this.buckets[i] !== 0) i = (i + 1) & this.bucketMask;
    this.buckets[i] = slot + 1;
  }

  /** Linear-probing deletion by backward shift, so that no tombstones accumulate. */
  private removeBucket(slot: number): void {
    const buckets = this.buckets;
    const mask = this.bucketMask;
    let i = this.hashes[slot]! & mask;
    while (buckets[i] !== slot + 1) i = (i + 1) & mask;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const entry = buckets[j]!;
      if (entry === 0) break;
      const home = this.hashes[entry - 1]! & mask;
      // Move the entry back into the hole unless its home lies cyclically in (i, j].
      const inRange = i <= j ? home > i && home <= j : home > i || home <= j;
      if (!inRange) {
        buckets[i] = entry;
        i = j;
      }
    }
    buckets[i] = 0;
  }

  private linkTail(slot: number): void {
    this.prev[slot] = this.tail;
    this.next[slot] = NO_SLOT;
    if (this.tail !== NO_SLOT) this.next[this.tail] = slot;
    else this.head = slot;
    this.tail = slot;
  }

  private unlink(slot: number): void {
    const p = this.prev[slot]!;
    const n = this.next[slot]!;
    if (p !== NO_SLOT) this.next[p] = n;
    else this.head = n;
    if (n !== NO_SLOT) this.prev[n] = p;
    else this.tail = p;
  }

  private grow(): void {
    const cap = Math.min(Math.max(MIN_CAPACITY, this.capacity * 2), Math.max(this.maxRequests, 1));
    this.prev = growI(this.prev, cap);
    this.next = growI(this.next, cap);
    this.serviceIds = growU(this.serviceIds, cap);
    this.hashes = growU(this.hashes, cap);
    this.incarnations = growU(this.incarnations, cap);
    this.growRows(cap);
    this.capacity = cap;
    let buckets = 4;
    while (buckets < cap * 2) buckets *= 2;
    this.buckets = new Int32Array(buckets);
    this.bucketMask = buckets - 1;
    for (let slot = 0; slot < this.sessions.length; slot++)
      if (this.sessions[slot] !== undefined) this.insertBucket(slot);
  }
}

function growU(a: Uint32Array, n: number): Uint32Array<ArrayBuffer> {
  const b = new Uint32Array(n);
  b.set(a);
  return b;
}
function growI(a: Int32Array, n: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(n);
  b.set(a);
  return b;
}
