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
    const c = this.cold[slot]!;
    if (c !== 0) return c;
    let row = this.coldFree.pop();
    if (row === undefined) {
      row = this.coldUsed++;
      if (row >= this.coldCapacity) this.growCold();
    }
    this.resetCold(row);
    this.cold[slot] = row;
    return row;
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

  /** The slot of (service, session, request) whose hash is `h`, or -1. */
  find(h: number, service: number, session: string, request: string): number {
    if (this.used === 0) return NONE;
    const buckets = this.buckets;
    for (let i = h & this.bucketMask; ; i = (i + 1) & this.bucketMask) {
      const b = buckets[i]!;
      if (b === 0) return NONE;
      const slot = b - 1;
      if (this.hashes[slot] === h && this.svc[slot] === service && this.requests[slot] === request && this.sessions[slot] === session) {
        return slot;
      }
    }
  }

  /** Returns a fresh slot; the caller has made room if the table was full. */
  create(h: number, service: number, session: string, request: string): number {
    let slot = this.freeList.pop();
    if (slot === undefined) {
      slot = this.used;
      if (slot >= this.capacity) this.grow();
    }
    this.used++;
    this.sessions[slot] = session;
    this.requests[slot] = request;
    this.svc[slot] = service;
    this.hashes[slot] = h;
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
    const b = this.buckets;
    const mask = this.bucketMask;
    let i = this.hashes[slot]! & mask;
    while (b[i] !== slot + 1) i = (i + 1) & mask;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const e = b[j]!;
      if (e === 0) break;
      const home = this.hashes[e - 1]! & mask;
      // Move e back into the hole unless its home lies cyclically in (i, j].
      const inRange = i <= j ? home > i && home <= j : home > i || home <= j;
      if (!inRange) {
        b[i] = e;
        i = j;
      }
    }
    b[i] = 0;
  }

  touch(slot: number): void {
    if (this.tail === slot) return;
    this.unlink(slot);
    this.linkTail(slot);
  }

  private reset(s: number): void {
    this.seen[s] = NaN;
    this.termT[s] = NaN;
    this.flags[s] = 0;
    this.termStream[s] = 0;
    this.termTotal[s] = 0;
    this.termOnFirst[s] = 0;
    this.attrDups[s] = 0;
    this.termSpan[s * 2] = this.termSpan[s * 2 + 1] = 0;
    this.cold[s] = 0;
  }

  private resetCold(s: number): void {
    this.resT[s] = NaN;
    this.epFirst[s] = NaN;
    this.epLast[s] = NaN;
    this.stEnd[s] = NaN;
    this.stFirst[s] = NaN;
    this.emptyT[s] = NaN;
    this.lostT[s] = NaN;
    this.contT[s] = NaN;
    this.rejT[s] = NaN;
    this.rejects[s] = 0;
    this.foreignStream[s] = 0;
    for (let i = s * this.ringSize, end = i + this.ringSize; i < end; i++) this.ring[i] = NaN;
    this.epLastStream[s] = 0;
    this.replayDups[s] = 0;
    this.replayFirsts[s] = 0;
    this.epAttempts[s] = 0;
    this.stAttempts[s] = 0;
    const s2 = s * 2;
    this.resSpan[s2] = this.resSpan[s2 + 1] = 0;
    this.epFirstSpan[s2] = this.epFirstSpan[s2 + 1] = 0;
    this.epLastSpan[s2] = this.epLastSpan[s2 + 1] = 0;
    this.dupSpan[s2] = this.dupSpan[s2 + 1] = 0;
    this.rejSpan[s2] = this.rejSpan[s2 + 1] = 0;
    const s4 = s * 4;
    this.epLastTrace[s4] = this.epLastTrace[s4 + 1] = this.epLastTrace[s4 + 2] = this.epLastTrace[s4 + 3] = 0;
  }

  private linkTail(s: number): void {
    this.prev[s] = this.tail;
    this.next[s] = NONE;
    if (this.tail !== NONE) this.next[this.tail] = s;
    else this.head = s;
    this.tail = s;
  }

  private unlink(s: number): void {
    const p = this.prev[s]!;
    const n = this.next[s]!;
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
    const r = this.ringSize;
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
    this.ring = growF(this.ring, cap * r);
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
