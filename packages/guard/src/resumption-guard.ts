import { BoundedMap } from '@resumewatch/bounded';
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

/** What the guard knows of a request; the same object moves from `open` to `finished` at its terminal. */
interface Entry {
  eventId: string | undefined;
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
  /** Unfinished requests: no retention (a request may stream for hours), only the cap. */
  private readonly open: BoundedMap<string, Entry>;
  /** Finished requests, ordered by terminal time, hence by expiry; released retentionMs after it. */
  private readonly finished: BoundedMap<string, Entry>;
  /** Shared by both maps (capTogether); each map alone is capped at it too. */
  private readonly cap: number;

  constructor(options: StreamResumptionGuardOptions = {}) {
    const cap = options.maxRequests ?? 10_000;
    const retentionMs = options.retentionMs ?? 600_000;
    const now = options.now ?? Date.now;
    if (!(cap > 0)) throw new RangeError(`maxRequests must be positive, got ${cap}`);
    if (!(retentionMs >= 0)) throw new RangeError(`retentionMs must not be negative, got ${retentionMs}`);
    this.cap = cap;
    this.open = new BoundedMap(cap, Infinity, now);
    this.finished = new BoundedMap(cap, retentionMs, now);
  }

  /** Requests dropped because the cap was reached. */
  get evictions(): number {
    return this.open.evictions + this.finished.evictions;
  }

  /** Keeps the last cursor of the request, and marks it terminal the moment a terminal event is seen. */
  observeEvent(requestId: RequestId, eventId: string | undefined, terminal: boolean): void {
    const key = String(requestId);
    const open = this.open.get(key);
    if (open) {
      if (eventId !== undefined) open.eventId = eventId;
      if (terminal) {
        this.open.delete(key);
        this.finished.set(key, open);
      }
      return;
    }
    const finished = this.finished.get(key);
    if (finished) {
      if (eventId !== undefined) finished.eventId = eventId;
      return;
    }
    if (terminal) this.finished.set(key, { eventId });
    else this.open.set(key, { eventId });
    this.capTogether();
  }

  isTerminal(requestId: RequestId): boolean {
    return this.finished.has(String(requestId));
  }

  /** The last event id seen for the request. */
  lastEventId(requestId: RequestId): string | undefined {
    const key = String(requestId);
    return (this.open.get(key) ?? this.finished.get(key))?.eventId;
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
    const ofSession = (key: string): boolean => key.startsWith(prefix);
    return this.open.deleteWhere(ofSession) + this.finished.deleteWhere(ofSession);
  }

  stats(): { open: number; finished: number; evictions: number } {
    this.finished.prune();
    return { open: this.open.size, finished: this.finished.size, evictions: this.evictions };
  }

  /**
   * One cap over both maps, unfinished requests evicted first (see the class comment). Expired
   * finished requests go before anything is evicted: they must not push out a live one.
   */
  private capTogether(): void {
    this.finished.prune();
    while (this.open.size + this.finished.size > this.cap)
      (this.open.size > 0 ? this.open : this.finished).evictOldest();
  }
}
