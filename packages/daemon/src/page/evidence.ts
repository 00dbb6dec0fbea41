import type { Finding, SpanRecord } from '@resumewatch/detector';
import { HeldRequests, eventBytes, type HeldTimeline } from './held-requests.js';
import { RequestKeys, findingKey, timelineEvent, type TimelineEvent } from './timeline-event.js';

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
/**
 * What a span in the window is counted for: the span record it holds (its ids, times and the attributes
 * the decoder kept), estimated once rather than measured per span, since every span of healthy traffic
 * passes through the window and most leave it unread.
 */
const WINDOW_SPAN_BYTES = 512;

export interface EvidenceStats {
  bytes: number;
  requests: number;
  windowBytes: number;
  windowRequests: number;
}

/**
 * What the page draws a reported request's timeline from. Every accepted span of a request goes to a
 * small transient window (recent spans per request, as the decoder made them, byte-capped, the least
 * recent request first out); when the request's first finding fires its spans become timeline events in
 * the evidence, which then keeps its later spans too. Nothing is kept in the evidence for a request
 * without a finding, and both are bounded.
 */
export class Evidence {
  private readonly held: HeldRequests<TimelineEvent>;
  private readonly window: HeldRequests<SpanRecord>;
  private readonly keys = new RequestKeys();

  constructor(limits: EvidenceLimits) {
    this.held = new HeldRequests(limits.evidenceBytes, EVIDENCE_EVENTS, EVIDENCE_HEAD, eventBytes);
    this.window = new HeldRequests(limits.evidenceWindowBytes, WINDOW_EVENTS, WINDOW_HEAD, () => WINDOW_SPAN_BYTES);
  }

  /** A span the detector accepted. */
  observe(span: SpanRecord): void {
    const key = this.keys.of(span);
    if (key === undefined) return;
    if (this.held.has(key)) this.held.append(key, timelineEvent(span));
    else this.window.append(key, span);
  }

  /** A line of the findings stream: its request's spans are evidence from now on. */
  reported(f: Finding): void {
    const key = findingKey(f);
    if (this.held.has(key)) return this.held.touch(key);
    const spans = this.window.take(key);
    const events = spans ? spans.events.map(timelineEvent) : [];
    let bytes = 0;
    for (const event of events) bytes += eventBytes(event);
    this.held.put(key, { events, bytes, dropped: spans?.dropped ?? 0 });
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
