import { BoundedEventStore } from './event-store.js';
import type { BoundedEventStoreOptions, StoredEvent, StreamId } from './event-store.js';
import { labRequestContext } from './request-context.js';

/** The SDK's name for every session's standalone GET stream. */
const STANDALONE_STREAM_ID = '_GET_stream';

/**
 * A deliberately defective store (store variant `shared-by-request-id`): ONE instance serves every
 * session, and a resume replays the events of every stream with the same key stored after the
 * cursor, where the key is the JSON-RPC request id of the POST that opened the stream (`_GET_stream`
 * for listening streams). That is what the Python SDK's example event store does (it names streams by
 * request id): session A's cursor replays session B's events when both used the same request id.
 *
 * The key of a stream is learned when its first event is stored, from the lab's request context.
 * Keys are kept per stream and dropped with the stream (bounded by the parent's capacity).
 */
export class RequestIdKeyedEventStore extends BoundedEventStore {
  private readonly keys = new Map<StreamId, string>();

  constructor(options: BoundedEventStoreOptions = {}) {
    super(options);
  }

  override async storeEvent(
    streamId: StreamId,
    message: Parameters<BoundedEventStore['storeEvent']>[1],
  ): Promise<string> {
    if (!this.keys.has(streamId)) {
      const key =
        streamId === STANDALONE_STREAM_ID
          ? STANDALONE_STREAM_ID
          : (labRequestContext.getStore()?.jsonRpcRequestId ?? streamId);
      this.keys.set(streamId, key);
    }
    const id = await super.storeEvent(streamId, message);
    this.forgetDroppedKeys();
    return id;
  }

  /** The key (request id) a stream was filed under. */
  keyOf(streamId: StreamId): string | undefined {
    return this.keys.get(streamId);
  }

  protected override nextToReplay(cursor: StoredEvent, lastSeq: number): StoredEvent | undefined {
    const key = this.keys.get(cursor.streamId) ?? cursor.streamId;
    for (const event of this.events.values()) {
      if (event.seq > lastSeq && (this.keys.get(event.streamId) ?? event.streamId) === key) return event;
    }
    return undefined;
  }

  private forgetDroppedKeys(): void {
    if (this.keys.size <= this.streams.size * 2 + 16) return;
    for (const streamId of this.keys.keys()) if (!this.streams.has(streamId)) this.keys.delete(streamId);
  }
}
