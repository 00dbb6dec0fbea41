import type { ServerResponse } from 'node:http';
import { BoundedMap, RecentList } from '@resumewatch/bounded';
import type { ReplayRecord } from '../event-store.js';
import { ReplayCloseGate } from '../replay-close-gate.js';
import type { ReplayLogEntry } from './types.js';

/**
 * Ends replayed responses that have nothing more to send, and keeps the last replays for `/control/state`.
 * A GET with Last-Event-ID opens a gate on its response; the event store's replay report closes it.
 */
export class ReplayClosing {
  private readonly gates = new BoundedMap<string, ReplayCloseGate>(10_000, 600_000);
  private readonly replays = new RecentList<ReplayLogEntry>(200);

  /** Puts a gate on the response of a resume of `lastEventId` in `sessionId`, until the response closes. */
  watch(sessionId: string, lastEventId: string, res: ServerResponse): void {
    const key = `${sessionId}\n${lastEventId}`;
    this.gates.set(key, new ReplayCloseGate(res));
    res.once('close', () => this.gates.delete(key));
  }

  /** Ends a replayed response whose stream has nothing more to send; logs the replay. */
  afterReplay(record: ReplayRecord, sessionId: string | undefined): void {
    const gate = sessionId === undefined ? undefined : this.gates.get(`${sessionId}\n${record.lastEventId}`);
    // A replay of a finished stream, or of a stream this buffer never had, has nothing more to send.
    const closed = gate !== undefined && (record.streamFinished || !record.cursorFound);
    if (closed) gate.endAfter(record.sent);
    this.replays.push({ ...record, sessionId: sessionId ?? '', at: Date.now(), closed });
  }

  recent(): ReplayLogEntry[] {
    return this.replays.toArray();
  }
}
