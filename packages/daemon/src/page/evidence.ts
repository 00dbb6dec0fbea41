import type { Finding, SpanRecord } from '@resumewatch/detector';
import { HeldRequests, type HeldTimeline } from './held-requests.js';
import { findingKey, timelineEvent } from './timeline-event.js';

export interface EvidenceLimits {
  /** Bytes of timelines held for reported requests. */
  evidenceBytes: number;
  /** Bytes of recent spans held for requests without a finding yet. */
  evidenceWindowBytes: number;
}

/** Events of a reported request's timeline: the first ones and the latest, dropped ones counted. */
const EVIDENCE_EVENTS = 256;
const EVIDENCE_HEAD = 64;
/** A request without a finding needs only its start and its last cycles to be drawn once it has one. */
const WINDOW_EVENTS = 64;
const WINDOW_HEAD = 16;

export interface EvidenceStats {
  bytes: number;
  requests: number;
  windowBytes: number;
  windowRequests: number;
}

/**
 * What the page draws a reported request's timeline from. Every accepted span of a request goes to a
 * small transient window (recent spans per request, byte-capped, the least recent request first out);
 * when the request's first finding fires its spans move to the evidence, which then keeps its later
 * spans too. Nothing is kept in the evidence for a request without a finding, and both are bounded.
 */
export class Evidence {
  private readonly held: HeldRequests;
  private readonly window: HeldRequests;

  constructor(limits: EvidenceLimits) {
    this.held = new HeldRequests(limits.evidenceBytes, EVIDENCE_EVENTS, EVIDENCE_HEAD);
    this.window = new HeldRequests(limits.evidenceWindowBytes, WINDOW_EVENTS, WINDOW_HEAD);
  }

  /** A span the detector accepted. */
  observe(span: SpanRecord): void {
    const seen = timelineEvent(span);
    if (!seen) return;
    if (this.held.has(seen.key)) this.held.append(seen.key, seen.event);
    else this.window.append(seen.key, seen.event);
  }

  /** A line of the findings stream: its request's spans are evidence from now on. */
  reported(f: Finding): void {
    const key = findingKey(f);
    if (this.held.has(key)) return this.held.touch(key);
    this.held.put(key, this.window.take(key) ?? { events: [], bytes: 0, dropped: 0 });
  }

  /** The timeline held for the finding's request. */
  timeline(f: Finding): HeldTimeline | undefined {
    return this.held.get(findingKey(f));
  }

  stats(): EvidenceStats {
    return {
      bytes: this.held.bytes,
      requests: this.held.size,
      windowBytes: this.window.bytes,
      windowRequests: this.window.size,
    };
  }
}
