import { BoundedEventStore } from '../event-store.js';
import type { BoundedEventStoreOptions, ReplayRecord } from '../event-store.js';
import { MisnamesResumedStreamEventStore } from '../misnames-resumed-stream-store.js';
import { ReplayAllStreamsEventStore } from '../replay-all-streams-store.js';
import { labRequestContext } from '../request-context.js';
import { RequestIdKeyedEventStore } from '../request-keyed-store.js';
import type { LabStoreVariant } from '../store-variants.js';

/** What one generation of the (simulated) server process holds for the `shared-by-request-id` variant. */
export interface SharedStoreHolder {
  /** The one store of the `shared-by-request-id` variant, created on first use; lost on restart. */
  shared: RequestIdKeyedEventStore | undefined;
}

/**
 * The event store a new session gets on the path of `variant`. `sessionOf` names the session once the
 * transport has assigned its id; `onReplay` is told of every replay with the replaying session.
 */
export function createVariantStore(
  variant: LabStoreVariant,
  options: Omit<BoundedEventStoreOptions, 'onReplay'> | undefined,
  sessionOf: () => string | undefined,
  holder: SharedStoreHolder,
  onReplay: (record: ReplayRecord, sessionId: string | undefined) => void,
): BoundedEventStore {
  const report = (record: ReplayRecord): void => onReplay(record, sessionOf());
  switch (variant) {
    case 'bounded':
      return new BoundedEventStore({ ...options, onReplay: report });
    case 'never-evict':
      return new BoundedEventStore({ ...options, finishedStreamReplayLimit: 0, onReplay: report });
    case 'replay-all-streams':
      return new ReplayAllStreamsEventStore({ ...options, onReplay: report });
    case 'misnames-resumed-stream':
      return new MisnamesResumedStreamEventStore({ ...options, onReplay: report });
    case 'shared-by-request-id':
      // One store for every session: the replaying session is the one whose request is running.
      holder.shared ??= new RequestIdKeyedEventStore({
        ...options,
        onReplay: (record) => onReplay(record, labRequestContext.getStore()?.sessionId),
      });
      return holder.shared;
  }
}
