import { createHmac } from 'node:crypto';
import type { TracerProvider } from '@opentelemetry/api';
import { startLabServer } from '@resumewatch/lab';
import type { BoundedEventStore, LabServer } from '@resumewatch/lab';
import { instrumentEventStore, instrumentServerTransport } from '../../src/index.js';
import type { IdPolicyOptions } from '../../src/index.js';

// The rig of the id-policy tests (this package's test/id-policy.test.ts and the detector's
// e2e-id-policy.test.ts): a lab server whose stores tell every session id and event id
// they hand out, so that a test can look for raw ids where none may be.

/** What the `hmac` policy records for `id` under `key`: HMAC-SHA256, first 128 bits, hex (README, "Ids"). */
export function hmacId(key: string, id: string): string {
  return createHmac('sha256', key).update(id).digest('hex').slice(0, 32);
}

/** Every session id and event id the lab's stores handed out since the last `clear()`. */
export class IdLedger {
  readonly sessions = new Set<string>();
  readonly eventIds = new Set<string>();

  /** Records the store's session and patches it in place to record each event id it stores. */
  record(store: BoundedEventStore, sessionId: string): BoundedEventStore {
    this.sessions.add(sessionId);
    const storeEvent = store.storeEvent.bind(store);
    store.storeEvent = async (streamId, message) => {
      const id = await storeEvent(streamId, message);
      this.eventIds.add(id);
      return id;
    };
    return store;
  }

  /** The recorded raw ids that appear in `text`. */
  leaks(text: string): string[] {
    return [...this.sessions, ...this.eventIds].filter((id) => text.includes(id));
  }

  clear(): void {
    this.sessions.clear();
    this.eventIds.clear();
  }
}

/** Where the server side's spans go and how they record ids; asked for each new session. */
type ServerSpans = () => { tracerProvider: TracerProvider; ids: IdPolicyOptions };

/**
 * A lab server on loopback whose stores record into `ledger`; with `serverSpans`, each session's store
 * and transport are instrumented too (`instrumentEventStore`, `instrumentServerTransport`).
 */
export function startIdLedgerLab(ledger: IdLedger, serverSpans?: ServerSpans): Promise<LabServer> {
  if (!serverSpans)
    return startLabServer({
      retryIntervalMs: 50,
      wrapEventStore: (store, sessionId) => ledger.record(store, sessionId),
    });
  return startLabServer({
    retryIntervalMs: 50,
    wrapEventStore: (store, sessionId) => {
      const { tracerProvider, ids } = serverSpans();
      return instrumentEventStore(ledger.record(store, sessionId), { sessionId, tracerProvider, ...ids });
    },
    onTransport: (transport) => {
      const { tracerProvider, ids } = serverSpans();
      instrumentServerTransport(transport, { tracerProvider, ...ids });
    },
  });
}
