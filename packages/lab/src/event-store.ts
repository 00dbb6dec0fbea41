import { randomBytes } from 'node:crypto';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { BoundedMap } from '@resumewatch/bounded';
import { formatEventId, parseEventId } from './event-id.js';

export type EventId = string;
export type StreamId = string;

/** Why events left the buffer. */
export type EvictionReason = 'capacity' | 'ttl' | 'replay-limit' | 'explicit';

/**
 * What the store knows about a resume cursor:
 * - `present`: the event is buffered; replay continues after it.
 * - `evicted`: the event is gone, but the store remembers its stream lost events (tombstone).
 * - `unknown`: the id parses but the store has never seen its stream (a restarted server's view).
 * - `invalid`: not an id this store could have issued.
 */
export type CursorState = 'present' | 'evicted' | 'unknown' | 'invalid';

/** Reported after every replay, so the server can decide whether to end the replayed response. */
export interface ReplayRecord {
  lastEventId: EventId;
  streamId: StreamId;
  /** Events sent on the replayed response. */
  sent: number;
  cursorFound: boolean;
  /** The stream's terminal response (result or error) is in the buffer: nothing more will come. */
  streamFinished: boolean;
}

export interface BoundedEventStoreOptions {
  /** Events kept across all streams; the oldest goes first. Default 1000. */
  capacity?: number;
  /** Retention of one event in ms. Default 300000 (5 minutes). */
  ttlMs?: number;
  /**
   * A finished stream is evicted after it has been replayed this many times: the lab's deterministic
   * stand-in for a ring buffer moving on under load. 0 disables it. Default 3.
   */
  finishedStreamReplayLimit?: number;
  /** Evicted streams remembered (to answer "evicted" rather than "unknown"). Default 10000. */
  tombstoneCapacity?: number;
  /** Retention of a tombstone in ms. Default 3600000 (1 hour). */
  tombstoneTtlMs?: number;
  now?: () => number;
  onReplay?: (record: ReplayRecord) => void;
}

export interface EventStoreStats {
  epoch: string;
  events: number;
  streams: number;
  stored: number;
  replays: number;
  evicted: Record<EvictionReason, number>;
}

export interface StoredEvent {
  id: EventId;
  seq: number;
  streamId: StreamId;
  message: JSONRPCMessage;
  storedAt: number;
}

export interface StreamRecord {
  /** In seq order; evictions remove from the front. */
  events: StoredEvent[];
  finished: boolean;
  replays: number;
}

function isTerminal(message: JSONRPCMessage): boolean {
  return 'id' in message && ('result' in message || 'error' in message);
}

/** Index of the first event with a seq greater than `seq` (events are sorted by seq). */
function firstAfter(events: StoredEvent[], seq: number): number {
  let low = 0;
  let high = events.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (events[mid]!.seq <= seq) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * A bounded ring buffer implementing the SDK's `EventStore`, with `getStreamIdForEventId`.
 * Replays only the stream the cursor belongs to, as the spec requires. One instance per session:
 * the SDK names every session's standalone stream `_GET_stream`, so a shared store would mix them.
 */
export class BoundedEventStore implements EventStore {
  readonly epoch = randomBytes(4).toString('hex');
  private readonly capacity: number;
  private readonly ttlMs: number;
  private readonly replayLimit: number;
  protected readonly now: () => number;
  private readonly onReplay: ((record: ReplayRecord) => void) | undefined;
  /**
   * Insertion order is age order (and seq order): the first entry is the oldest. Not a BoundedMap of
   * @resumewatch/bounded: an eviction also shortens its stream's list and leaves a tombstone with its
   * reason (capacity, TTL), counted per reason.
   */
  protected readonly events = new Map<EventId, StoredEvent>();
  protected readonly streams = new Map<StreamId, StreamRecord>();
  private readonly tombstones: BoundedMap<StreamId, EvictionReason>;
  private seq = 0;
  private stored = 0;
  private replays = 0;
  private readonly evicted: Record<EvictionReason, number> = { capacity: 0, ttl: 0, 'replay-limit': 0, explicit: 0 };

  constructor(options: BoundedEventStoreOptions = {}) {
    this.capacity = options.capacity ?? 1000;
    this.ttlMs = options.ttlMs ?? 300_000;
    this.replayLimit = options.finishedStreamReplayLimit ?? 3;
    this.now = options.now ?? Date.now;
    this.onReplay = options.onReplay;
    if (!(this.capacity > 0)) throw new RangeError(`capacity must be positive, got ${this.capacity}`);
    this.tombstones = new BoundedMap(
      options.tombstoneCapacity ?? 10_000,
      options.tombstoneTtlMs ?? 3_600_000,
      this.now,
    );
  }

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    this.sweepExpired();
    const seq = ++this.seq;
    const event: StoredEvent = {
      id: formatEventId(this.epoch, seq, streamId),
      seq,
      streamId,
      message,
      storedAt: this.now(),
    };
    let stream = this.streams.get(streamId);
    if (!stream) {
      stream = { events: [], finished: false, replays: 0 };
      this.streams.set(streamId, stream);
    }
    stream.events.push(event);
    if (isTerminal(message)) stream.finished = true;
    this.events.set(event.id, event);
    this.stored++;
    while (this.events.size > this.capacity) this.evictOldest('capacity');
    return event.id;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    this.sweepExpired();
    return this.events.get(eventId)?.streamId ?? parseEventId(eventId)?.streamId;
  }

  cursorState(eventId: EventId): CursorState {
    this.sweepExpired();
    if (this.events.has(eventId)) return 'present';
    const parsed = parseEventId(eventId);
    if (!parsed) return 'invalid';
    if (this.tombstones.has(parsed.streamId) || this.streams.has(parsed.streamId)) return 'evicted';
    return 'unknown';
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    this.sweepExpired();
    this.replays++;
    const cursor = this.events.get(lastEventId);
    if (!cursor) {
      const streamId = parseEventId(lastEventId)?.streamId ?? '';
      this.onReplay?.({ lastEventId, streamId, sent: 0, cursorFound: false, streamFinished: false });
      return streamId;
    }
    const stream = this.streams.get(cursor.streamId)!;
    let lastSeq = cursor.seq;
    let sent = 0;
    // Re-searched after every await: events may be appended (or evicted) while a send is pending.
    for (;;) {
      const next = this.nextToReplay(cursor, lastSeq);
      if (!next) break;
      await send(next.id, next.message);
      lastSeq = next.seq;
      sent++;
    }
    stream.replays++;
    const streamFinished = stream.finished;
    this.onReplay?.({ lastEventId, streamId: cursor.streamId, sent, cursorFound: true, streamFinished });
    if (streamFinished && this.replayLimit > 0 && stream.replays >= this.replayLimit) {
      this.evictStream(cursor.streamId, 'replay-limit');
    }
    return cursor.streamId;
  }

  /**
   * The next event to replay after `lastSeq` for a resume from `cursor`: the next event of the
   * cursor's own stream, as the spec requires. The lab's defective store variants override this.
   */
  protected nextToReplay(cursor: StoredEvent, lastSeq: number): StoredEvent | undefined {
    const stream = this.streams.get(cursor.streamId);
    return stream?.events[firstAfter(stream.events, lastSeq)];
  }

  isStreamFinished(streamId: StreamId): boolean {
    return this.streams.get(streamId)?.finished ?? false;
  }

  /** Drops every buffered event of a stream and remembers that it did. Returns the events dropped. */
  evictStream(streamId: StreamId, reason: EvictionReason = 'explicit'): number {
    const stream = this.streams.get(streamId);
    this.tombstones.set(streamId, reason);
    if (!stream) return 0;
    for (const event of stream.events) this.events.delete(event.id);
    this.streams.delete(streamId);
    this.evicted[reason] += stream.events.length;
    return stream.events.length;
  }

  /** Evicts the stream a cursor belongs to. Returns the events dropped. */
  evictCursor(eventId: EventId): number {
    const streamId = this.events.get(eventId)?.streamId ?? parseEventId(eventId)?.streamId;
    return streamId === undefined ? 0 : this.evictStream(streamId, 'explicit');
  }

  stats(): EventStoreStats {
    this.sweepExpired();
    return {
      epoch: this.epoch,
      events: this.events.size,
      streams: this.streams.size,
      stored: this.stored,
      replays: this.replays,
      evicted: { ...this.evicted },
    };
  }

  private sweepExpired(): void {
    const cutoff = this.now() - this.ttlMs;
    for (const event of this.events.values()) {
      if (event.storedAt > cutoff) break;
      this.evictOldest('ttl');
    }
  }

  private evictOldest(reason: EvictionReason): void {
    const oldest = this.events.values().next().value;
    if (!oldest) return;
    this.events.delete(oldest.id);
    const stream = this.streams.get(oldest.streamId);
    if (stream) {
      // The oldest event overall is also the oldest of its stream.
      stream.events.shift();
      if (stream.events.length === 0) this.streams.delete(oldest.streamId);
    }
    this.tombstones.set(oldest.streamId, reason);
    this.evicted[reason]++;
  }
}
