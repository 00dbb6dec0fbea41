import type { Finding, SpanRecord } from '@resumewatch/detector';
import { SpanReceivedResult } from '@resumewatch/semconv';
import { SpanColumns, type HeldTimeline } from './span-columns.js';
import { UNKNOWN_SERVICE } from '@resumewatch/detector';
import { RequestKeys, SpanScan, findingParts, isReissueFinding, isTaskFinding } from './timeline-event.js';
import { KEY_TASK, KEY_TRACE, SpanKey, keyOf, setKey } from './span-key.js';

export interface EvidenceLimits {
  /** Bytes of timelines held for reported requests. */
  evidenceBytes: number;
  /** Bytes of recent spans held for requests without a finding yet. */
  evidenceWindowBytes: number;
}

/**
 * Events of a reported request's timeline: the first ones and the latest, dropped ones counted. Also what
 * one timeline answer of the live page serialises at most (a re-issue's two attempts: twice this).
 */
export const EVIDENCE_EVENTS = 256;
const EVIDENCE_HEAD = 64;
/** A request without a finding needs only its start and its last cycles to be drawn once it has one. */
const WINDOW_EVENTS = 64;
const WINDOW_HEAD = 16;
/**
 * What a span in the window is counted for: about the span record it was made from (its ids, times and
 * the attributes the decoder kept), estimated once rather than measured per span, since every span of
 * healthy traffic passes through the window and most leave it unread. The window now holds what the span's
 * timeline event needs, in columns (SpanColumns), which is smaller; the count stays the record's, so that
 * the window holds the same spans and evicts the same requests as it did.
 */
const WINDOW_SPAN_BYTES = 512;

/** A re-issue's two attempts, each the timeline of its trace (undefined when none of its spans is held). */
export interface Attempts {
  first: HeldTimeline | undefined;
  reissue: HeldTimeline | undefined;
}

/**
 * What a task finding's timeline is drawn from: its task's spans; a duplicate's, the second task's too,
 * and the two attempts' traces (the spans of a call without a session: the client's side of each attempt).
 */
export interface TaskEvidence {
  task: HeldTimeline | undefined;
  second: HeldTimeline | undefined;
  first: HeldTimeline | undefined;
  reissue: HeldTimeline | undefined;
}

/**
 * Whether a span the detector answered `result` may be drawn: one it accepted, or one it had no use for
 * (IGNORED), which the evidence keeps only if it is an MCP span of a request (RequestKeys): a 2026-07-28
 * terminal, say, which the detector does not track but a re-issue's timeline shows. Not a duplicate or
 * an invalid span. (A sessionless span is not deduplicated by the detector: one sent twice is drawn twice.)
 */
export function drawable(result: SpanReceivedResult): boolean {
  return result === SpanReceivedResult.ACCEPTED || result === SpanReceivedResult.IGNORED;
}

export interface EvidenceStats {
  bytes: number;
  requests: number;
  windowBytes: number;
  windowRequests: number;
}

/**
 * What the page draws a reported request's timeline from. Every accepted span of a request goes to a
 * small transient window (recent spans per request, what their timeline events need, byte-capped, the least
 * recent request first out); when the request's first finding fires its events move to
 * the evidence, which then keeps its later spans too. Nothing is kept in the evidence for a request
 * without a finding, and both are bounded. A span without a session (2026-07-28) is kept by its trace,
 * one attempt of a call: a re-issue's finding moves both attempts' traces in, the first attempt's and
 * the re-issue's, and the page draws them on one time axis.
 */
export class Evidence {
  private readonly held: SpanColumns;
  private readonly window: SpanColumns;
  private readonly keys = new RequestKeys();
  /** The span being observed, its attributes read once for its keys and its columns. */
  private readonly scan = new SpanScan();
  /** A key a finding's request is held by (hold: used at once). */
  private readonly holding = new SpanKey();

  constructor(limits: EvidenceLimits) {
    this.held = new SpanColumns(limits.evidenceBytes, EVIDENCE_EVENTS, EVIDENCE_HEAD, undefined);
    this.window = new SpanColumns(limits.evidenceWindowBytes, WINDOW_EVENTS, WINDOW_HEAD, WINDOW_SPAN_BYTES);
  }

  /**
   * A span the detector accepted. Both stores keep what the span's timeline event needs in columns
   * (SpanColumns), not the record nor the event: the window outlives the young generation's collections
   * (its latest 8,192 spans) and the evidence stays, so whatever objects they kept would be copied by the
   * scavenges, promoted and marked. The events made when the page reads them are the ones timelineEvent
   * makes of the spans: a record is not changed after the detector has it. `spanIdWords`: the span id's
   * two words when the door has them (SpanSink, as Detector.ingest takes them): its hex is not parsed again.
   */
  observe(span: SpanRecord, spanIdWords?: Uint32Array): void {
    const scan = this.scan;
    scan.read(span.attributes);
    const key = this.keys.requestParts(span, scan);
    if (key !== undefined) this.add(key, span, spanIdWords);
    // A task's span goes under its task's key too (each counted in both): a task finding's timeline is
    // every span of its task, its polls and its status notifications, each of them its own request.
    const task = this.keys.taskParts(span, scan);
    if (task !== undefined) this.add(task, span, spanIdWords);
    // A refused attempt or a listening stream goes under its session's key too: a loop's timeline.
    const loop = this.keys.loopParts(span, scan);
    if (loop !== undefined) this.add(loop, span, spanIdWords);
  }

  private add(key: SpanKey, span: SpanRecord, spanIdWords: Uint32Array | undefined): void {
    if (this.held.has(key)) this.held.appendScanned(key, span, this.scan, spanIdWords);
    else this.window.appendScanned(key, span, this.scan, spanIdWords);
  }

  /** A line of the findings stream: its request's spans (a re-issue's: both attempts') are evidence from now on. */
  reported(f: Finding): void {
    if (isTaskFinding(f)) {
      const service = f.service || UNKNOWN_SERVICE;
      const key = this.holding;
      this.hold(setKey(key, KEY_TASK, service, f.task_id, ''));
      if (f.duplicate_task_id) this.hold(setKey(key, KEY_TASK, service, f.duplicate_task_id, ''));
      // A duplicate's two attempts: the first's client span (no task id: its reply was never read).
      if (f.first_trace_id !== undefined) {
        this.hold(setKey(key, KEY_TRACE, f.first_trace_id, '', ''));
        this.hold(setKey(key, KEY_TRACE, f.trace_id, '', ''));
      }
      return;
    }
    if (!isReissueFinding(f)) return this.hold(this.keys.findingParts(f));
    this.hold(setKey(this.holding, KEY_TRACE, f.first_trace_id!, '', ''));
    this.hold(setKey(this.holding, KEY_TRACE, f.trace_id, '', ''));
  }

  private hold(key: SpanKey): void {
    if (this.held.has(key)) return this.held.touch(key);
    this.held.moveIn(key, this.window);
  }

  /** The timeline held for the finding's request; a re-issue's, both attempts' events together. */
  timeline(f: Finding): HeldTimeline | undefined {
    if (isTaskFinding(f)) {
      const parts = Object.values(this.task(f)).filter((h): h is HeldTimeline => h !== undefined);
      if (parts.length === 0) return undefined;
      // A span of a task's call without a session is held by its task and by its trace: listed once.
      const ids = new Set<string>();
      return {
        events: parts.flatMap((h) => h.events).filter((e) => !ids.has(e.span_id) && ids.add(e.span_id) !== undefined),
        bytes: parts.reduce((n, h) => n + h.bytes, 0),
        dropped: parts.reduce((n, h) => n + h.dropped, 0),
      };
    }
    if (!isReissueFinding(f)) return this.held.get(findingParts(f, new SpanKey()));
    const { first, reissue } = this.attempts(f);
    if (!first && !reissue) return undefined;
    const events = [...(first?.events ?? []), ...(reissue?.events ?? [])];
    return {
      events,
      bytes: (first?.bytes ?? 0) + (reissue?.bytes ?? 0),
      dropped: (first?.dropped ?? 0) + (reissue?.dropped ?? 0),
    };
  }

  /** A task finding's task (a duplicate's two tasks and two attempts), apart. */
  task(f: Finding & { task_id: string }): TaskEvidence {
    const service = f.service || UNKNOWN_SERVICE;
    const reissue = f.first_trace_id !== undefined;
    return {
      task: this.held.get(keyOf(KEY_TASK, service, f.task_id)),
      second: f.duplicate_task_id ? this.held.get(keyOf(KEY_TASK, service, f.duplicate_task_id)) : undefined,
      first: reissue ? this.held.get(keyOf(KEY_TRACE, f.first_trace_id!)) : undefined,
      reissue: reissue ? this.held.get(keyOf(KEY_TRACE, f.trace_id)) : undefined,
    };
  }

  /** A re-issue finding's two attempts, apart. */
  attempts(f: Finding): Attempts {
    return {
      first: isReissueFinding(f) ? this.held.get(keyOf(KEY_TRACE, f.first_trace_id!)) : undefined,
      reissue: this.held.get(keyOf(KEY_TRACE, f.trace_id)),
    };
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
