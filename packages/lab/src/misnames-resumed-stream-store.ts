import { BoundedEventStore } from './event-store.js';
import type { EventId, StreamId } from './event-store.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * A deliberately defective store (store variant `misnames-resumed-stream`): a resume replays the
 * cursor's stream correctly, but names the resumed stream after the last event it replayed (the cursor
 * itself when it replayed nothing), as `@modelcontextprotocol/server-everything`'s store does. The SDK
 * registers the resumed connection under that name, while the request keeps sending on its stream's real
 * name, which no connection holds any more: what the request sends after the resume (its last progress
 * updates, its result) is stored and written nowhere. The resume replays the missed progress; the result
 * never comes. Bounded like its parent; only the name it returns differs.
 */
export class MisnamesResumedStreamEventStore extends BoundedEventStore {
  override async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    let last = lastEventId;
    await super.replayEventsAfter(lastEventId, {
      send: async (eventId, message) => {
        await send(eventId, message);
        last = eventId;
      },
    });
    return last;
  }
}
