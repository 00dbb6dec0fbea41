import { resumeVerdict } from '@resumewatch/semconv';
import type { ResumeObservation } from '@resumewatch/semconv';
import { decideResume } from './decision.js';
import type { ResumeDecision } from './decision.js';
import { InvalidResumptionError } from './errors.js';

export interface StreamResumptionGuardOptions {
  /** Most requests tracked, finished or not. Default 10,000. */
  maxRequests?: number;
  /**
   * How long a finished request's terminal flag is kept after its terminal event, so that a late
   * resume of it is still refused. Default 10 min.
   */
  retentionMs?: number;
  now?: () => number;
}

export interface ResumeHeaders {
  'Mcp-Session-Id': string;
  'Last-Event-ID': string;
}

interface Entry {
  eventId: string | undefined;
  expiresAt: number;
}

type RequestId = string | number;

/**
 * Guards the boundary between session reattachment and stream continuation. An event id is a
 * cursor into a stream, not proof the stream is resumable: resumption is valid only if the request
 * has not reached a terminal state and the server still holds the referenced cursor.
 *
 * State is bounded: unfinished requests are kept until the cap pushes the oldest out; finished ones
 * are released `retentionMs` after their terminal event. When the cap is reached, unfinished requests
 * go first, because forgetting a cursor only prevents a resume (safe), while forgetting a terminal
 * flag would let a finished request be resumed.
 */
export class StreamResumptionGuard {
  private readonly open = new Map<string, Entry>();
  /** Ordered by terminal time, hence by expiry. */
  private readonly finished = new Map<string, Entry>();
  private readonly cap: number;
  private readonly retentionMs: number;
  private readonly now: () => number;
  /** Requests dropped because the cap was reached. */
  evictions = 0;

  constructor(options: StreamResumptionGuardOptions = {}) {
    this.cap = options.maxRequests ?? 10_000;
    this.retentionMs = options.retentionMs ?? 600_000;
    this.now = options.now ?? Date.now;
    if (!(this.cap > 0)) throw new RangeError(`maxRequests must be positive, got ${this.cap}`);
    if (!(this.retentionMs >= 0)) throw new RangeError(`retentionMs must not be negative, got ${this.retentionMs}`);
  }

  /** Keeps the last cursor of the request, and marks it terminal the moment a terminal event is seen. */
  observeEvent(requestId: RequestId, eventId: string | undefined, terminal: boolean): void {
    const key = String(requestId);
    const open = this.open.get(key);
    if (open) {
      if (eventId !== undefined) open.eventId = eventId;
      if (terminal) {
        this.open.delete(key);
        open.expiresAt = this.now() + this.retentionMs;
        this.finished.set(key, open);
        this.sweep();
      }
      return;
    }
    const finished = this.liveFinished(key);
    if (finished) {
      if (eventId !== undefined) finished.eventId = eventId;
      return;
    }
    if (terminal) this.finished.set(key, { eventId, expiresAt: this.now() + this.retentionMs });
    else this.open.set(key, { eventId, expiresAt: Infinity });
    this.sweep();
  }

  isTerminal(requestId: RequestId): boolean {
    return this.liveFinished(String(requestId)) !== undefined;
  }

  /** The last event id seen for the request. */
  lastEventId(requestId: RequestId): string | undefined {
    const key = String(requestId);
    return (this.open.get(key) ?? this.liveFinished(key))?.eventId;
  }

  /** Headers of a resume, or InvalidResumptionError when the request is terminal or has no cursor. */
  buildResumeHeaders(requestId: RequestId, sessionId: string): ResumeHeaders {
    const key = String(requestId);
    // The stream ended because the work completed: replaying the cursor would duplicate a terminal
    // event under a new stream identity.
    if (this.isTerminal(key)) throw InvalidResumptionError.terminal(key, sessionId);
    const eventId = this.open.get(key)?.eventId;
    if (eventId === undefined) throw InvalidResumptionError.noCursor(key, sessionId);
    return { 'Mcp-Session-Id': sessionId, 'Last-Event-ID': eventId };
  }

  /**
   * Classifies what the wire has shown of a resume so far (`resumeVerdict` of @resumewatch/semconv,
   * then the decision table); undefined while the resumed stream is open and silent: no verdict yet.
   */
  interpretResumeResponse(requestId: RequestId, seen: ResumeObservation): ResumeDecision | undefined {
    const verdict = resumeVerdict(seen);
    return verdict && decideResume(verdict, this.isTerminal(String(requestId)));
  }

  /** Drops what is known of a request, e.g. when its id is used again for a new request. */
  forget(requestId: RequestId): boolean {
    const key = String(requestId);
    const a = this.open.delete(key);
    const b = this.finished.delete(key);
    return a || b;
  }

  /**
   * Drops every request of a session (keys `${sessionId}\n${id}`, as the wire listener keys them):
   * the session was DELETEd or its transport closed, so no resume of its requests is to be judged.
   */
  forgetSession(sessionId: string): number {
    const prefix = `${sessionId}\n`;
    let forgotten = 0;
    for (const map of [this.open, this.finished]) {
      for (const key of [...map.keys()]) if (key.startsWith(prefix) && map.delete(key)) forgotten++;
    }
    return forgotten;
  }

  stats(): { open: number; finished: number; evictions: number } {
    this.sweep();
    return { open: this.open.size, finished: this.finished.size, evictions: this.evictions };
  }

  private liveFinished(key: string): Entry | undefined {
    const entry = this.finished.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.finished.delete(key);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.finished) {
      if (entry.expiresAt > now) break;
      this.finished.delete(key);
    }
    while (this.open.size + this.finished.size > this.cap) {
      const victims = this.open.size > 0 ? this.open : this.finished;
      const oldest = victims.keys().next().value as string;
      victims.delete(oldest);
      this.evictions++;
    }
  }
}
