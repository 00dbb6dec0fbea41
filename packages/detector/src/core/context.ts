import { CappedLabels } from '@resumewatch/bounded';
import { FindingKind, FindingRecord, SpanReceivedResult } from '@resumewatch/semconv';
import type { DetectorOptions } from './options.js';
import { Reissues } from './reissues.js';
import { MAX_CORE_SERVICES, OTHER_SERVICE } from './services.js';
import { RequestTable } from './table.js';
import type { DetectorCounts } from './state-codec.js';
import type { AttributeValue, DetectorEvents, DetectorStats, Finding, SpanRecord } from './types.js';

/**
 * What every family of rules shares, one object for all of them: the request table and the re-issues'
 * store, the interned services, the detector's time and counters, its options, and the way out
 * (`emit`, `onFinding`, `events`). A family reads and changes the detector's state only through it (and
 * through the families it is given), never through the Detector, which only dispatches spans to them.
 */
export class RuleContext {
  readonly table: RequestTable;
  /** 2026-07-28 era: first attempts that were re-issued, or whose fate a server told, by trace id. */
  readonly reissues: Reissues;
  /** Services are interned to a small number; past MAX_CORE_SERVICES they share one, `other`'s. */
  readonly services = new CappedLabels<string>(MAX_CORE_SERVICES, OTHER_SERVICE);
  /** The detector's time (Unix ms): the latest advance(), -Infinity before the first. */
  now = -Infinity;
  /** Replaced whole by importState. */
  counts: DetectorCounts = {
    evictions: 0,
    released: 0,
    spans: {
      [SpanReceivedResult.ACCEPTED]: 0,
      [SpanReceivedResult.DUPLICATE]: 0,
      [SpanReceivedResult.INVALID]: 0,
      [SpanReceivedResult.IGNORED]: 0,
    },
  };

  constructor(
    readonly options: DetectorOptions,
    readonly onFinding: ((finding: Finding) => void) | undefined,
    readonly events: DetectorEvents | undefined,
    readonly clock: () => number,
  ) {
    this.table = new RequestTable(Math.max(1, options.maxRequests), Math.floor(options.stormThreshold));
    this.reissues = new Reissues(Math.max(1, options.maxRequests));
  }

  /** The service of the request in `slot`, by name. */
  serviceOf(slot: number): string {
    return this.services.keyOf(this.table.serviceId(slot))!;
  }

  /** Reports a finding of the request in `slot` (its service, session and request from the table). */
  emit(
    slot: number,
    kind: FindingKind,
    traceId: string,
    first: number,
    last: number,
    spanIds: string[],
    extra?: Partial<Finding>,
    record?: FindingRecord,
  ): void {
    if (!this.onFinding) return;
    const finding: Finding = {
      kind,
      ...(record ? { record } : {}),
      service: this.serviceOf(slot),
      session_id: this.table.sessionId(slot),
      request_id: this.table.requestId(slot),
      trace_id: traceId,
      first_time_unix_ms: first,
      last_time_unix_ms: last,
      span_ids: spanIds,
      ...extra,
    };
    this.onFinding(finding);
  }
}

/**
 * A family of rules, as the Detector sees it besides the span handlers it calls by name: what it does
 * when time moves, when input ends, and what it adds to stats(). Every hook is optional. The Detector
 * holds its families in one list (`Detector` constructor) and calls each hook in the list's order.
 *
 * A new family (tasks, say) is one file (`core/tasks.ts`: a class over the RuleContext that implements
 * this) and one line in that list. `request` is how it sees spans: every span with an MCP method name
 * (a request span) is handed to it. The built-in families' span handlers are called by name instead
 * (resumption.ts's `terminal` and `resume`, storms.ts's `attempt`, ...): their order is the findings'.
 *
 * State that must outlive a restart is not a hook: the state codec (state-codec.ts) writes a fixed
 * format, so a family that keeps some adds its holders to DetectorParts, Detector.exportState and
 * importState, and a new STATE_FORMAT. A family whose state may be lost on restart needs none of that.
 */
export interface RuleFamily {
  /**
   * A request span (a client's or a server's, any MCP method), once: after it is counted and timed, before
   * the client's given-up rules. `marks`: which rarely present attributes its record has (marks.ts);
   * `session` and `method`: its session id and method name attributes, as read with the marks.
   */
  request?(
    span: SpanRecord,
    marks: number,
    session: AttributeValue | undefined,
    method: AttributeValue | undefined,
  ): void;
  /** The detector's time moved to ctx.now: end what timed out; state last touched before `horizon` leaves. */
  advance?(horizon: number): void;
  /** End of input: what waits for a window is decided now. */
  flush?(): void;
  /** Adds this family's own figures to the detector's stats (fields of DetectorStats). */
  stats?(into: DetectorStats): void;
}

export function uniq(ids: string[]): string[] {
  return [...new Set(ids)];
}
