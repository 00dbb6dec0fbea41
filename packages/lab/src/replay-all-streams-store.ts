import { BoundedEventStore } from './event-store.js';
import type { StoredEvent } from './event-store.js';

/**
 * A deliberately defective store (store variant `replay-all-streams`): a resume replays every event
 * of the session stored after the cursor, whatever stream it belongs to. That is what the official
 * `@modelcontextprotocol/server-everything` store does: a resumed stream, including the listening
 * (standalone GET) stream, receives other requests' finished results and their priming events
 * (`data: {}`). The spec forbids it: a server MUST NOT replay messages that would have been
 * delivered on a different stream. Bounded like its parent; only the replay selection differs.
 */
export class ReplayAllStreamsEventStore extends BoundedEventStore {
  protected override nextToReplay(_cursor: StoredEvent, lastSeq: number): StoredEvent | undefined {
    // `events` is in seq order; a linear scan is fine for a lab defect bounded by the store's capacity.
    for (const event of this.events.values()) if (event.seq > lastSeq) return event;
    return undefined;
  }
}
