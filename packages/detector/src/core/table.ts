/**
 * Per-request state as columns of typed arrays indexed by a slot number, so that a tracked
 * request costs one Map entry, one key string and a fixed number of bytes (no object per request).
 * Slots are kept in least-recently-touched order by an intrusive doubly linked list.
 */
const NONE = -1;
const MIN_CAPACITY = 1024;

export class RequestTable {
  readonly index = new Map<string, number>();
  keys: (string | undefined)[] = [];
  capacity = 0;
  private freeList: number[] = [];
  private used = 0;
  head = NONE;
  tail = NONE;

  // Times (Unix ms, NaN when unknown).
  seen = new Float64Array(0);
  termT = new Float64Array(0);
  resT = new Float64Array(0);
  epFirst = new Float64Array(0);
  epLast = new Float64Array(0);
  stEnd = new Float64Array(0);
  /** The `ringSize` latest attempt times of the current episode, ascending, NaN-padded at the front. */
  ring = new Float64Array(0);
  // Counters, flags and 32-bit identities.
  flags = new Uint32Array(0);
  termStream = new Uint32Array(0);
  epLastStream = new Uint32Array(0);
  termTotal = new Uint32Array(0);
  termOnFirst = new Uint32Array(0);
  attrDups = new Uint32Array(0);
  replayDups = new Uint32Array(0);
  epAttempts = new Uint32Array(0);
  /** Attempts of the last storm reported. */
  stAttempts = new Uint32Array(0);
  prev = new Int32Array(0);
  next = new Int32Array(0);
  /** Span ids as two 32-bit words each: first terminal, latest resume, first and latest attempt, first duplicate. */
  termSpan = new Uint32Array(0);
  resSpan = new Uint32Array(0);
  epFirstSpan = new Uint32Array(0);
  epLastSpan = new Uint32Array(0);
  dupSpan = new Uint32Array(0);
  /** Trace id (four words) of the latest attempt, for findings completed by the clock. */
  epLastTrace = new Uint32Array(0);

  constructor(
    readonly maxRequests: number,
    readonly ringSize: number,
  ) {}

  get size(): number {
    return this.used;
  }

  /** Returns a fresh slot for `key`; the caller has made room if the table was full. */
  create(key: string): number {
    let slot = this.freeList.pop();
    if (slot === undefined) {
      slot = this.used;
      if (slot >= this.capacity) this.grow();
    }
    this.used++;
    this.index.set(key, slot);
    this.keys[slot] = key;
    this.reset(slot);
    this.linkTail(slot);
    return slot;
  }

  release(slot: number): void {
    const key = this.keys[slot];
    if (key === undefined) return;
    this.index.delete(key);
    this.keys[slot] = undefined;
    this.unlink(slot);
    this.freeList.push(slot);
    this.used--;
  }

  touch(slot: number): void {
    if (this.tail === slot) return;
    this.unlink(slot);
    this.linkTail(slot);
  }

  private reset(s: number): void {
    this.seen[s] = NaN;
    this.termT[s] = NaN;
    this.resT[s] = NaN;
    this.epFirst[s] = NaN;
    this.epLast[s] = NaN;
    this.stEnd[s] = NaN;
    this.ring.fill(NaN, s * this.ringSize, (s + 1) * this.ringSize);
    this.flags[s] = 0;
    this.termStream[s] = 0;
    this.epLastStream[s] = 0;
    this.termTotal[s] = 0;
    this.termOnFirst[s] = 0;
    this.attrDups[s] = 0;
    this.replayDups[s] = 0;
    this.epAttempts[s] = 0;
    this.stAttempts[s] = 0;
    this.termSpan.fill(0, s * 2, s * 2 + 2);
    this.resSpan.fill(0, s * 2, s * 2 + 2);
    this.epFirstSpan.fill(0, s * 2, s * 2 + 2);
    this.epLastSpan.fill(0, s * 2, s * 2 + 2);
    this.dupSpan.fill(0, s * 2, s * 2 + 2);
    this.epLastTrace.fill(0, s * 4, s * 4 + 4);
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
    const r = this.ringSize;
    this.seen = growF(this.seen, cap);
    this.termT = growF(this.termT, cap);
    this.resT = growF(this.resT, cap);
    this.epFirst = growF(this.epFirst, cap);
    this.epLast = growF(this.epLast, cap);
    this.stEnd = growF(this.stEnd, cap);
    this.ring = growF(this.ring, cap * r);
    this.flags = growU(this.flags, cap);
    this.termStream = growU(this.termStream, cap);
    this.epLastStream = growU(this.epLastStream, cap);
    this.termTotal = growU(this.termTotal, cap);
    this.termOnFirst = growU(this.termOnFirst, cap);
    this.attrDups = growU(this.attrDups, cap);
    this.replayDups = growU(this.replayDups, cap);
    this.epAttempts = growU(this.epAttempts, cap);
    this.stAttempts = growU(this.stAttempts, cap);
    this.prev = growI(this.prev, cap);
    this.next = growI(this.next, cap);
    this.termSpan = growU(this.termSpan, cap * 2);
    this.resSpan = growU(this.resSpan, cap * 2);
    this.epFirstSpan = growU(this.epFirstSpan, cap * 2);
    this.epLastSpan = growU(this.epLastSpan, cap * 2);
    this.dupSpan = growU(this.dupSpan, cap * 2);
    this.epLastTrace = growU(this.epLastTrace, cap * 4);
    this.capacity = cap;
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
