import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_SESSION_ID,
  FindingKind,
} from '@resumewatch/semconv';
import { uniq, type RuleContext, type RuleFamily } from './context.js';
import { hexWord } from './ids.js';
import { retractLostByReissue } from './lost.js';
import { Fate, REPORTED, SETTLED, type Reissue } from './reissues.js';
import { UNKNOWN_SERVICE } from './services.js';
import type { DetectorStats, SpanRecord } from './types.js';

/**
 * The re-issue family: work that runs again while the client believes it did not. In the 2026-07-28
 * era, a client re-issues a request whose stream broke, and a span of the first attempt's trace tells
 * whether that attempt ran on (duplicate_execution, or possible_duplicate_execution when its window
 * passes untold); both halves are kept by the first attempt's trace in the re-issues' store
 * (reissues.ts). In the session era, a request the client cancelled whose terminal came after all
 * (completed_after_cancellation), kept in the request table.
 */
export class ReissueRules implements RuleFamily {
  /**
   * Whether a span of the trace created a task (the tasks family's word). A re-issue whose first attempt
   * answered with a task handle ran: the tasks family reports it (duplicate_task, possible_duplicate_task),
   * and its fate is not unknown.
   */
  taskCreatedIn: (trace: string) => boolean = () => false;

  constructor(private readonly ctx: RuleContext) {}

  /**
   * A request span of a first attempt's trace (a server's, or the gateway's, which sees the upstream
   * finish) that says whether its handler went on to produce the result after the stream was closed.
   * `completed` wins over `stopped`, whatever the order: it is the evidence that the work ran.
   */
  firstAttemptFate(span: SpanRecord, completed: boolean): void {
    if (span.traceId.length !== 32 || span.spanId.length !== 16 || !(span.startTimeUnixMs >= 0)) return;
    if (!(span.endTimeUnixMs >= span.startTimeUnixMs)) return;
    const entry = this.entry(span.traceId, span.endTimeUnixMs);
    const fate = completed ? Fate.COMPLETED : Fate.STOPPED;
    // Of two spans saying the same, the earlier one is kept, so that the finding is the same in any order.
    if (fate > entry.fate || (fate === entry.fate && span.startTimeUnixMs < entry.fateStart)) {
      entry.fate = fate;
      entry.fateSpanId = span.spanId;
      entry.fateStart = span.startTimeUnixMs;
      entry.fateEnd = span.endTimeUnixMs;
    }
    this.duplicateExecution(span.traceId, entry);
  }

  /**
   * A client request span that re-issues the request of trace `firstTrace` (its stream broke before
   * the result). The first re-issue of an attempt counts; the same span again, or another re-issue of
   * the same attempt, changes nothing. Its verdict waits for the first attempt's fate until
   * `reissueSettleMs` after the re-issue ended.
   */
  reissued(span: SpanRecord, firstTrace: string): void {
    if (firstTrace.length !== 32 || span.traceId.length !== 32 || span.spanId.length !== 16) return;
    if (!(span.startTimeUnixMs >= 0) || !(span.endTimeUnixMs >= span.startTimeUnixMs)) return;
    const ctx = this.ctx;
    const deadline = span.endTimeUnixMs + ctx.options.reissueSettleMs;
    const entry = this.entry(firstTrace, deadline);
    if (entry.service >= 0) return;
    const attrs = span.attributes;
    const session = attrs[ATTR_MCP_SESSION_ID];
    const req = attrs[ATTR_JSONRPC_REQUEST_ID];
    const firstSpan = attrs[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID];
    entry.service = ctx.services.idOf(span.service || UNKNOWN_SERVICE);
    entry.sessionId = typeof session === 'string' ? session : '';
    entry.requestId = typeof req === 'string' ? req : typeof req === 'number' ? String(req) : '';
    entry.traceId = span.traceId;
    entry.spanId = span.spanId;
    entry.firstSpanId = typeof firstSpan === 'string' && firstSpan.length === 16 ? firstSpan : '';
    entry.start = span.startTimeUnixMs;
    entry.end = span.endTimeUnixMs;
    entry.settlesAt = deadline;
    ctx.reissues.pending.add(firstTrace);
    retractLostByReissue(ctx, firstTrace, entry);
    this.duplicateExecution(firstTrace, entry);
  }

  /** The first attempt's entry, touched at `at` (or the detector's time, if later); the least recently touched makes room. */
  entry(trace: string, at: number): Reissue {
    const ctx = this.ctx;
    const reissues = ctx.reissues;
    if (reissues.full(trace)) {
      const oldest = reissues.oldest()!;
      this.settle(oldest, reissues.get(oldest)!);
      reissues.delete(oldest);
      ctx.counts.evictions++;
    }
    return reissues.touch(trace, at > ctx.now ? at : ctx.now);
  }

  /** Re-issues whose window has passed get their verdict; first attempts idle past retention leave. */
  advance(horizon: number): void {
    const ctx = this.ctx;
    const reissues = ctx.reissues;
    for (const trace of reissues.pending) {
      const entry = reissues.get(trace)!;
      if (ctx.now >= entry.settlesAt) this.settle(trace, entry);
    }
    // A re-issue still in its window was touched at its deadline or later: it is never past the horizon.
    for (let trace = reissues.oldest(); trace !== undefined; trace = reissues.oldest()) {
      const entry = reissues.get(trace)!;
      if (!(entry.touchedAt < horizon)) break;
      this.settle(trace, entry);
      reissues.delete(trace);
      ctx.counts.released++;
    }
  }

  /** No more evidence will come: a re-issue whose first attempt's fate is unknown is reported as such. */
  flush(): void {
    const reissues = this.ctx.reissues;
    for (const trace of reissues.pending) this.settle(trace, reissues.get(trace)!);
  }

  stats(into: DetectorStats): void {
    into.reissues = this.ctx.reissues.size;
  }

  /**
   * The re-issue's window has passed (or its state has to go, or input ended): the fate known now is
   * its verdict. Unknown: possible_duplicate_execution; stopped: nothing (a later `completed` still
   * reports duplicate_execution while the entry is kept).
   */
  private settle(trace: string, entry: Reissue): void {
    this.ctx.reissues.pending.delete(trace);
    if (entry.service < 0 || (entry.flags & SETTLED) !== 0) return;
    entry.flags |= SETTLED;
    // A first attempt that created a task is no unknown fate: the tasks family has reported the re-issue.
    if (entry.fate === Fate.UNKNOWN && !this.taskCreatedIn(trace)) this.possibleDuplicateExecution(trace, entry);
  }

  /**
   * duplicate_execution: a re-issued request whose first attempt ran to completion on the server after
   * its stream broke (a span of the first attempt's trace said `completed_after_cancellation`), in
   * whichever order the two spans came: the side effect ran twice. Once per re-issue.
   */
  private duplicateExecution(firstTrace: string, entry: Reissue): void {
    if (entry.service < 0 || entry.fate !== Fate.COMPLETED || (entry.flags & REPORTED) !== 0) return;
    this.emitReissue(FindingKind.DUPLICATE_EXECUTION, firstTrace, entry);
  }

  /**
   * possible_duplicate_execution: a re-issued request whose first attempt's fate no span told within
   * the window: it may have run twice. Reported when the window passes, once per re-issue.
   */
  private possibleDuplicateExecution(firstTrace: string, entry: Reissue): void {
    if ((entry.flags & REPORTED) !== 0) return;
    this.emitReissue(FindingKind.POSSIBLE_DUPLICATE_EXECUTION, firstTrace, entry);
  }

  /** A re-issue's finding: the re-issuing client's service and request, the first attempt's trace beside its own. */
  private emitReissue(kind: FindingKind, firstTrace: string, entry: Reissue): void {
    const ctx = this.ctx;
    entry.flags |= REPORTED;
    ctx.reissues.pending.delete(firstTrace);
    if (!ctx.onFinding) return;
    const fate = entry.fate === Fate.COMPLETED;
    const ids = [entry.firstSpanId, fate ? entry.fateSpanId : '', entry.spanId].filter((id) => id.length > 0);
    ctx.onFinding({
      kind,
      service: ctx.services.keyOf(entry.service)!,
      session_id: entry.sessionId,
      request_id: entry.requestId,
      trace_id: entry.traceId,
      first_time_unix_ms: fate ? Math.min(entry.fateStart, entry.start) : entry.start,
      last_time_unix_ms: fate ? Math.max(entry.fateEnd, entry.end) : entry.end,
      span_ids: uniq(ids),
      first_trace_id: firstTrace,
    });
  }

  /** The client cancelled the request (`notifications/cancelled`) when its request span ended. */
  cancelled(slot: number, span: SpanRecord): void {
    const ctx = this.ctx;
    const table = ctx.table;
    const at = span.endTimeUnixMs;
    table.seenAt(slot, at > ctx.now ? at : ctx.now);
    // The earliest cancellation counts: the same span exported twice, or a retry's, changes nothing.
    if (!(at >= table.read(slot, 'cancelledAt'))) {
      table.write(slot, 'cancelledAt', at);
      table.writeSpan(slot, 'cancelledSpan', hexWord(span.spanId, 0), hexWord(span.spanId, 8));
    }
    this.completedAfterCancellation(slot, span.traceId);
  }

  /**
   * completed_after_cancellation: the client cancelled the request and its first terminal arrived at or
   * after the cancellation, by event time, whichever of the two spans came first. The application was
   * told the call failed while the work ran to completion (the server did not stop, or its result was
   * already under way): a retry runs the side effect twice, the harm of the replay loop.
   */
  completedAfterCancellation(slot: number, traceId: string): void {
    const table = this.ctx.table;
    const cancelledAt = table.read(slot, 'cancelledAt');
    if (
      table.wasReported(slot, FindingKind.COMPLETED_AFTER_CANCELLATION) ||
      !table.hasTerminal(slot) ||
      !(table.firstTerminalAt(slot) >= cancelledAt)
    )
      return;
    table.markReported(slot, FindingKind.COMPLETED_AFTER_CANCELLATION);
    this.ctx.emit(slot, FindingKind.COMPLETED_AFTER_CANCELLATION, traceId, cancelledAt, table.firstTerminalAt(slot), [
      table.readSpan(slot, 'cancelledSpan')!,
      table.firstTerminalSpanId(slot),
    ]);
  }
}
