import { hash32 } from './ids.js';

/**
 * Per-request state as columns of typed arrays indexed by a slot number, so that a tracked request
 * costs a fixed number of bytes plus references to its session and request id strings: no object,
 * no Map entry and no composite key string per request. Lookup is an open-addressing hash index
 * over (service, session, request); slots are kept in least-recently-touched order by an intrusive
 * doubly linked list.
 *
 * The columns are split in two by how often a request needs them. Every request has a hot row (its
 * identity, LRU links, its terminal). Only a request that was resumed, reattached, or delivered a
 * duplicate or foreign terminal gets a cold row (episode, storm, failed-resumption and duplicate
 * state): most requests never do, and a cold row is most of a request's bytes. `cold[slot]` is the
 * request's cold row, or 0: row 0 is never handed out and keeps the values of a fresh row (NaN times,
 * zero counters and ids), so reading a cold column at `cold[slot]` is always right; writing needs
 * `ensureCold(slot)` first.
 */
const NONE = -1;
const MIN_CAPACITY = 1024;

export class RequestTable {
  sessions: (string | undefined)[] = [];
  requests: (string | undefined)[] = [];
  /** Index into `serviceNames`. */
  svc = new Uint32Array(0);
  hashes = new Uint32Array(0);
  /** Incarnation of the slot: a request evicted and seen again does not inherit what the old one saw. */
  serial = new Uint32Array(0);
  private serials = 0;
  /** slot + 1, or 0 for an empty bucket. */
  private buckets = new Int32Array(0);
  private bucketMask = 0;
  capacity = 0;
  private freeList: number[] = [];
  private used = 0;
  head = NONE;
  tail = NONE;

  // Hot columns, indexed by slot. Times (Unix ms, NaN when unknown).
  seen = new Float64Array(0);
  termT = new Float64Array(0);
  flags = new Uint32Array(0);
  termStream = new Uint32Array(0);
  termTotal = new Uint32Array(0);
  termOnFirst = new Uint32Array(0);
  attrDups = new Uint32Array(0);
  prev = new Int32Array(0);
  next = new Int32Array(0);
  /** First terminal's span id, two 32-bit words. */
  termSpan = new Uint32Array(0);
  /** The slot's cold row, 0 for none. */
  cold = new Uint32Array(0);

  // Cold columns, indexed by cold row (`cold[slot]`).
  private coldCapacity = 0;
  private coldUsed = 1;
  private coldFree: number[] = [];
  resT = new Float64Array(0);
  epFirst = new Float64Array(0);
  epLast = new Float64Array(0);
  stEnd = new Float64Array(0);
  /** First attempt of the last storm reported, or of the current one. */
  stFirst = new Float64Array(0);
  /** Resume times of the emitted ambiguous_empty_replay and cursor_lost findings. */
  emptyT = new Float64Array(0);
  lostT = new Float64Array(0);
  /** Latest continuation (a message on a resumed stream) of the request before its terminal. */
  contT = new Float64Array(0);
  /** Earliest 400/409 answer to a resume of the request. */
  rejT = new Float64Array(0);
  /** The `ringSize` latest attempt times of the current episode, ascending, NaN-padded at the front. */
  ring = new Float64Array(0);
  // Counters and 32-bit identities.
  epLastStream = new Uint32Array(0);
  replayDups = new Uint32Array(0);
  /** Replays that delivered the terminal to a stream that had not delivered it before. */
  replayFirsts = new Uint32Array(0);
  epAttempts = new Uint32Array(0);
  /** Attempts of the last storm reported. */
  stAttempts = new Uint32Array(0);
  /** Resumes of the request answered 400/409 (a rejected cursor counts once confirmed by a second). */
  rejects = new Uint32Array(0);
  /** Stream (hash) of a foreign terminal of the request: a later duplicate of it is the server's doing. */
  foreignStream = new Uint32Array(0);
  /** Span ids as two 32-bit words each: latest resume, first and latest attempt, first duplicate. */
  resSpan = new Uint32Array(0);
  epFirstSpan = new Uint32Array(0);
  epLastSpan = new Uint32Array(0);
  dupSpan = new Uint32Array(0);
  /** The first resume answered 400/409. */
  rejSpan = new Uint32Array(0);
  /** Trace id (four words) of the latest attempt, for findings completed by the clock. */
  epLastTrace = new Uint32Array(0);

  constructor(
    readonly maxRequests: number,
    readonly ringSize: number,
  ) {
    this.growCold();
    this.resetCold(0);
  }

  /** The slot's cold row, taken (and reset) on first need. */
  ensureCold(slot: number): number {
    const current = this.cold[slot]!;
    if (current !== 0) return current;
    let row = this.coldFree.pop();
    if (row === undefined) {
      row = this.coldUsed++;
      if (row >= this.coldCapacity) this.growCold();
    }
    this.resetCold(row);
    this.cold[slot] = row;
    return row;
  }

  /** Whether the request at `slot` has any bit of `flag` (the flags are the detector's, see detector.ts). */
  has(slot: number, flag: number): boolean {
    return (this.flags[slot]! & flag) !== 0;
  }

  mark(slot: number, flag: number): void {
    this.flags[slot]! |= flag;
  }

  unmark(slot: number, flag: number): void {
    this.flags[slot]! &= ~flag;
  }

  /** Whether a terminal of the request at `slot` was delivered (then `termT[slot]` is the earliest). */
  hasTerminal(slot: number): boolean {
    return this.termTotal[slot]! > 0;
  }

  /**
   * Inserts an attempt time into the ascending, NaN-padded ring of cold row `row`, dropping the oldest
   * when it is full: the ring holds the `ringSize` latest attempts of the episode, which is all the storm
   * rule needs (threshold attempts within the window), whatever the number of attempts.
   */
  addAttemptTime(row: number, time: number): void {
    const n = this.ringSize;
    const base = row * n;
    const ring = this.ring;
    if (ring[base]! >= time) return;
    ring[base] = time;
    for (let i = base; i + 1 < base + n && !(ring[i + 1]! >= time); i++) {
      ring[i] = ring[i + 1]!;
      ring[i + 1] = time;
    }
  }

  /** Removes the attempt time nearest `time` from the ring of cold row `row` (a withdrawn attempt). */
  removeAttemptTimeNear(row: number, time: number): void {
    const n = this.ringSize;
    const base = row * n;
    const ring = this.ring;
    let best = -1;
    let distance = Infinity;
    for (let i = base; i < base + n; i++) {
      const d = Math.abs(ring[i]! - time);
      if (d < distance) {
        distance = d;
        best = i;
      }
    }
    if (best < 0) return;
    for (let i = best; i > base; i--) ring[i] = ring[i - 1]!;
    ring[base] = NaN;
  }

  /** Earliest of the `ringSize` latest attempt times of cold row `row` (NaN while the ring is not full). */
  oldestRingTime(row: number): number {
    return this.ring[row * this.ringSize]!;
  }

  /** Latest attempt time of cold row `row`. */
  newestRingTime(row: number): number {
    return this.ring[row * this.ringSize + this.ringSize - 1]!;
  }

  clearAttemptTimes(row: number): void {
    this.ring.fill(NaN, row * this.ringSize, (row + 1) * this.ringSize);
  }

  /** Cold rows in use (row 0 excluded). */
  get coldRows(): number {
    return this.coldUsed - 1 - this.coldFree.length;
  }

  get size(): number {
    return this.used;
  }

  static hash(service: number, session: string, request: string): number {
    return hash32(request, hash32(session, Math.imul(service + 1, 0x9e3779b1)));
  }

  /** The slot of (service, session, request) whose hash is `hash`, or -1. */
  find(hash: number, service: number, session: string, request: string): number {
    if (this.used === 0) return NONE;
    const buckets = this.buckets;
    for (let i = hash & this.bucketMask; ; i = (i + 1) & this.bucketMask) {
      const bucket = buckets[i]!;
      if (bucket === 0) return NONE;
      const slot = bucket - 1;
      if (this.hashes[slot] === hash && this.svc[slot] === service && this.requests[slot] === request && this.sessions[slot] === session) {
        return slot;
      }
    }
  }

  /** Returns a fresh slot; the caller has made room if the table was full. */
  create(hash: number, service: number, session: string, request: string): number {
    let slot = this.freeList.pop();
    if (slot === undefined) {
      slot = this.used;
      if (slot >= this.capacity) this.grow();
    }
    this.used++;
    this.sessions[slot] = session;
    this.requests[slot] = request;
    this.svc[slot] = service;
    this.hashes[slot] = hash;
    this.serial[slot] = ++this.serials;
    this.insertBucket(slot);
    this.reset(slot);
    this.linkTail(slot);
    return slot;
  }

  release(slot: number): void {
    if (this.sessions[slot] === undefined) return;
    this.removeBucket(slot);
    this.sessions[slot] = undefined;
    this.requests[slot] = undefined;
    if (this.cold[slot] !== 0) {
      this.coldFree.push(this.cold[slot]!);
      this.cold[slot] = 0;
    }
    this.unlink(slot);
    this.freeList.push(slot);
    this.used--;
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

  touch(slot: number): void {
    if (this.tail === slot) return;
    this.unlink(slot);
    this.linkTail(slot);
  }

  private reset(slot: number): void {
    this.seen[slot] = NaN;
    this.termT[slot] = NaN;
    this.flags[slot] = 0;
    this.termStream[slot] = 0;
    this.termTotal[slot] = 0;
    this.termOnFirst[slot] = 0;
    this.attrDups[slot] = 0;
    this.termSpan[slot * 2] = this.termSpan[slot * 2 + 1] = 0;
    this.cold[slot] = 0;
  }

  private resetCold(row: number): void {
    this.resT[row] = NaN;
    this.epFirst[row] = NaN;
    this.epLast[row] = NaN;
    this.stEnd[row] = NaN;
    this.stFirst[row] = NaN;
    this.emptyT[row] = NaN;
    this.lostT[row] = NaN;
    this.contT[row] = NaN;
    this.rejT[row] = NaN;
    this.rejects[row] = 0;
    this.foreignStream[row] = 0;
    for (let i = row * this.ringSize, end = i + this.ringSize; i < end; i++) this.ring[i] = NaN;
    this.epLastStream[row] = 0;
    this.replayDups[row] = 0;
    this.replayFirsts[row] = 0;
    this.epAttempts[row] = 0;
    this.stAttempts[row] = 0;
    const row2 = row * 2;
    this.resSpan[row2] = this.resSpan[row2 + 1] = 0;
    this.epFirstSpan[row2] = this.epFirstSpan[row2 + 1] = 0;
    this.epLastSpan[row2] = this.epLastSpan[row2 + 1] = 0;
    this.dupSpan[row2] = this.dupSpan[row2 + 1] = 0;
    this.rejSpan[row2] = this.rejSpan[row2 + 1] = 0;
    const row4 = row * 4;
    this.epLastTrace[row4] = this.epLastTrace[row4 + 1] = this.epLastTrace[row4 + 2] = this.epLastTrace[row4 + 3] = 0;
  }

  private linkTail(slot: number): void {
    this.prev[slot] = this.tail;
    this.next[slot] = NONE;
    if (this.tail !== NONE) this.next[this.tail] = slot;
    else this.head = slot;
    this.tail = slot;
  }

  private unlink(slot: number): void {
    const p = this.prev[slot]!;
    const n = this.next[slot]!;
    if (p !== NONE) this.next[p] = n;
    else this.head = n;
    if (n !== NONE) this.prev[n] = p;
    else this.tail = p;
  }

  private grow(): void {
    const cap = Math.min(Math.max(MIN_CAPACITY, this.capacity * 2), Math.max(this.maxRequests, 1));
    this.seen = growF(this.seen, cap);
    this.termT = growF(this.termT, cap);
    this.flags = growU(this.flags, cap);
    this.termStream = growU(this.termStream, cap);
    this.termTotal = growU(this.termTotal, cap);
    this.termOnFirst = growU(this.termOnFirst, cap);
    this.attrDups = growU(this.attrDups, cap);
    this.prev = growI(this.prev, cap);
    this.next = growI(this.next, cap);
    this.termSpan = growU(this.termSpan, cap * 2);
    this.cold = growU(this.cold, cap);
    this.svc = growU(this.svc, cap);
    this.hashes = growU(this.hashes, cap);
    this.serial = growU(this.serial, cap);
    this.capacity = cap;
    let buckets = 4;
    while (buckets < cap * 2) buckets *= 2;
    this.buckets = new Int32Array(buckets);
    this.bucketMask = buckets - 1;
    for (let slot = 0; slot < this.sessions.length; slot++) if (this.sessions[slot] !== undefined) this.insertBucket(slot);
  }

  /** Cold rows grow on their own, by doubling, up to one per slot plus row 0. */
  private growCold(): void {
    const cap = Math.min(Math.max(64, this.coldCapacity * 2), Math.max(this.maxRequests, 1) + 1);
        this.resT = growF(this.resT, cap);
    this.epFirst = growF(this.epFirst, cap);
    this.epLast = growF(this.epLast, cap);
    this.stEnd = growF(this.stEnd, cap);
    this.stFirst = growF(this.stFirst, cap);
    this.emptyT = growF(this.emptyT, cap);
    this.lostT = growF(this.lostT, cap);
    this.contT = growF(this.contT, cap);
    this.rejT = growF(this.rejT, cap);
    this.rejects = growU(this.rejects, cap);
    this.foreignStream = growU(this.foreignStream, cap);
    this.rejSpan = growU(this.rejSpan, cap * 2);
    this.ring = growF(this.ring, cap * this.ringSize);
    this.epLastStream = growU(this.epLastStream, cap);
    this.replayDups = growU(this.replayDups, cap);
    this.replayFirsts = growU(this.replayFirsts, cap);
    this.epAttempts = growU(this.epAttempts, cap);
    this.stAttempts = growU(this.stAttempts, cap);
    this.resSpan = growU(this.resSpan, cap * 2);
    this.epFirstSpan = growU(this.epFirstSpan, cap * 2);
    this.epLastSpan = growU(this.epLastSpan, cap * 2);
    this.dupSpan = growU(this.dupSpan, cap * 2);
    this.epLastTrace = growU(this.epLastTrace, cap * 4);
    this.coldCapacity = cap;
  }
}

function growF(a: Float64Array, n: number): Float64Array<ArrayBuffer> {
  const b = new Float64Array(n);
  b.set(a);
  return b;
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
