/**
 * The 2026-07-28 era's re-issues, by the trace of the first attempt they re-issue: what the detector
 * knows of each first attempt's fate on the server, and of the client request that re-issued it. The
 * two halves come from different spans, of different services, in any order; this keeps each until
 * the other arrives (or the re-issue's window passes), within a cap and a retention.
 *
 * Not in the request table: in this era a request has no session, and the two halves are tied by a
 * trace id, not by a (service, session, request). Few requests are re-issued or closed early, so an
 * object per entry is affordable where a row per request was not.
 */

/** What a span of the first attempt's trace said of it (ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION). */
export const Fate = {
  /** No span of the first attempt's trace has said. */
  UNKNOWN: 0,
  /** false: the stream closed and no result followed: the server stopped the work. */
  STOPPED: 1,
  /** true: the handler produced its result after its stream was closed: the work ran. */
  COMPLETED: 2,
} as const;
type Fate = (typeof Fate)[keyof typeof Fate];

/** One first attempt, keyed by its trace id. */
export interface Reissue {
  fate: Fate;
  /** The span that said the fate, '' while it is unknown; its start and end (Unix ms). */
  fateSpanId: string;
  fateStart: number;
  fateEnd: number;
  /** The re-issuing client request's service (the core's interned id), -1 while no re-issue is known. */
  service: number;
  sessionId: string;
  requestId: string;
  traceId: string;
  spanId: string;
  /** The first attempt's request span, as the re-issue names it ('' when it names none). */
  firstSpanId: string;
  start: number;
  end: number;
  /** When a re-issue whose first attempt's fate is still unknown is reported as possible. */
  settlesAt: number;
  /** REPORTED, SETTLED, LOST and LOST_RETRACTED bits. */
  flags: number;
  /**
   * The first attempt's own request span, when its stream broke (a lost_result): its service (the core's
   * interned id, -1 when not seen), request id, span id, start and end.
   */
  lostService: number;
  lostRequestId: string;
  lostSpanId: string;
  lostStart: number;
  lostEnd: number;
  /** Event time of the latest span of either half, or the deadline if later: retention runs from it. */
  touchedAt: number;
}

/** A finding was reported for this re-issue: nothing more will be. */
export const REPORTED = 1;
/** The re-issue's window has passed: the fate known then is its verdict (a later `completed` still reports). */
export const SETTLED = 2;
/** The first attempt's stream broke and no re-issue was known then: a lost_result was reported for it. */
export const LOST = 4;
/** That lost_result was retracted: the request was re-issued. */
export const LOST_RETRACTED = 8;

/** A fresh entry: no fate, no re-issue. */
export function emptyReissue(): Reissue {
  return {
    fate: Fate.UNKNOWN,
    fateSpanId: '',
    fateStart: 0,
    fateEnd: 0,
    service: -1,
    sessionId: '',
    requestId: '',
    traceId: '',
    spanId: '',
    firstSpanId: '',
    start: 0,
    end: 0,
    settlesAt: 0,
    flags: 0,
    lostService: -1,
    lostRequestId: '',
    lostSpanId: '',
    lostStart: 0,
    lostEnd: 0,
    touchedAt: 0,
  };
}

/**
 * The entries by first-attempt trace id, least recently touched first (a Map's insertion order, renewed
 * on every touch), and the re-issues waiting for their window, which advance() looks at without
 * walking every entry.
 */
export class Reissues {
  private readonly byTrace = new Map<string, Reissue>();
  /** Trace ids of re-issues neither reported nor settled. */
  readonly pending = new Set<string>();

  constructor(readonly cap: number) {}

  get size(): number {
    return this.byTrace.size;
  }

  get(trace: string): Reissue | undefined {
    return this.byTrace.get(trace);
  }

  /** The entry, made if new (the caller makes room first: see full), moved to the young end. */
  touch(trace: string, at: number): Reissue {
    let entry = this.byTrace.get(trace);
    if (entry === undefined) entry = emptyReissue();
    else this.byTrace.delete(trace);
    this.byTrace.set(trace, entry);
    if (at > entry.touchedAt) entry.touchedAt = at;
    return entry;
  }

  full(trace: string): boolean {
    return this.byTrace.size >= this.cap && !this.byTrace.has(trace);
  }

  /** The least recently touched entry's trace id, or undefined. */
  oldest(): string | undefined {
    const first = this.byTrace.keys().next();
    return first.done ? undefined : first.value;
  }

  delete(trace: string): void {
    this.byTrace.delete(trace);
    this.pending.delete(trace);
  }

  /** Every entry, least recently touched first. */
  entries(): IterableIterator<[string, Reissue]> {
    return this.byTrace.entries();
  }

  /** Puts an entry back as a state file gave it (in order: the last one loaded is the youngest). */
  restore(trace: string, entry: Reissue): void {
    this.byTrace.set(trace, entry);
    if (entry.service >= 0 && (entry.flags & (REPORTED | SETTLED)) === 0) this.pending.add(trace);
  }
}
