import type { RequestRecord } from '@resumewatch/wire';

/** Default cap on held polls: one per unfinished, polled request. */
const MAX_HELD_POLLS = 10_000;

/** Every holder holding at least one poll (each leaves when it holds none): what shutdown releases. */
const holding = new Set<HeldPolls<unknown>>();

/**
 * Hands back every poll still held in this process as a poll (its request's fate is not known, and the
 * wire said poll): at shutdown, so that they are exported with the rest instead of lost. `register`
 * calls it before the SDK's shutdown, `McpResumeInstrumentation.disable()` too; an application using
 * `instrumentFetch` calls it before its tracer provider's `shutdown()`. Returns how many it released.
 */
export function releaseHeldPolls(): number {
  let released = 0;
  for (const holder of [...holding]) released += holder.releaseAll();
  return released;
}

interface Entry<T> {
  readonly value: T;
  readonly sessionId: string | undefined;
  readonly timer: ReturnType<typeof setTimeout>;
}

/**
 * The latest `poll` resume of each unfinished request, held back until what follows decides it
 * (SEP-1699: a clean, empty body after a priming event is a valid poll, but so is the answer of a
 * restarted server that lost its buffer; only the request's fate tells them apart). The recorder takes
 * a held poll when the request's next resume starts or its terminal arrives (a poll after all), or when
 * the client gives the request up; the holder hands it back by itself at the request's deadline, when
 * the cap makes room (the oldest first, counted), or at shutdown (`releaseHeldPolls`).
 *
 * Bounded: at most one per request, at most `cap` in all, each for at most the request's deadline.
 * Not a BoundedMap of @resumewatch/bounded: an eviction hands the poll back (`expire`) where a take does
 * not, and BoundedMap's onDrop cannot tell the two apart.
 */
export class HeldPolls<T> {
  private readonly held = new Map<RequestRecord, Entry<T>>();
  private evictedCount = 0;

  constructor(
    /**
     * A held poll leaves without being taken: at its request's deadline (`asPoll` false), or as a poll
     * (`asPoll` true) when the cap evicts it or at shutdown.
     */
    private readonly expire: (value: T, asPoll: boolean) => void,
    private readonly cap = MAX_HELD_POLLS,
  ) {
    if (!(cap >= 1)) throw new Error(`held polls: cap must be at least 1 (got ${cap})`);
  }

  get size(): number {
    return this.held.size;
  }

  /** Polls handed back because the cap was reached. */
  get evictions(): number {
    return this.evictedCount;
  }

  /**
   * Holds `value` for `record` until `deadline` (epoch ms). A poll already held for the request is
   * returned: the request's next resume has started, so that one was a poll.
   */
  hold(record: RequestRecord, sessionId: string | undefined, value: T, deadline: number): T | undefined {
    const previous = this.take(record);
    if (this.held.size >= this.cap) this.evictOldest();
    const timer = setTimeout(
      () => {
        if (this.held.get(record)?.value !== value) return;
        this.forget(record);
        this.expire(value, false);
      },
      Math.max(0, deadline - Date.now()),
    );
    timer.unref();
    this.held.set(record, { value, sessionId, timer });
    holding.add(this as HeldPolls<unknown>);
    return previous;
  }

  /** The poll held for `record`, no longer held. */
  take(record: RequestRecord): T | undefined {
    const entry = this.held.get(record);
    if (!entry) return undefined;
    this.forget(record);
    clearTimeout(entry.timer);
    return entry.value;
  }

  /** Every poll held for a request of `sessionId`, no longer held (the session was deleted). */
  takeSession(sessionId: string): T[] {
    const taken: T[] = [];
    for (const [record, entry] of this.held) {
      if (entry.sessionId !== sessionId) continue;
      this.forget(record);
      clearTimeout(entry.timer);
      taken.push(entry.value);
    }
    return taken;
  }

  /** Every held poll handed back as a poll, none counted as evicted (shutdown: see releaseHeldPolls). */
  releaseAll(): number {
    const values = [...this.held.keys()].map((record) => this.take(record)!);
    for (const value of values) this.expire(value, true);
    return values.length;
  }

  private forget(record: RequestRecord): void {
    this.held.delete(record);
    if (this.held.size === 0) holding.delete(this as HeldPolls<unknown>);
  }

  private evictOldest(): void {
    const oldest = this.held.keys().next();
    if (oldest.done) return;
    const value = this.take(oldest.value)!;
    this.evictedCount++;
    this.expire(value, true);
  }
}
