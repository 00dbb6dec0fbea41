import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_SESSION_ID,
  ErrorType,
  FindingKind,
  FindingRecord,
  RequestRecovery,
  ResumeEvidence,
  ResumeOutcome,
  isFailedResumptionOutcome,
} from '@resumewatch/semconv';
import type { RuleContext } from './context.js';
import type { ReissueRules } from './reissue.js';
import { LOST, LOST_RETRACTED, type Reissue } from './reissues.js';
import { UNKNOWN_SERVICE } from './services.js';
import type { Finding, SpanRecord } from './types.js';

/** The resume outcomes a request span may name as its last resume's. */
const OUTCOMES = new Set<string>(Object.values(ResumeOutcome));

/**
 * The lost-result family: a request that ended without its result after its stream had ended without
 * it (lost_result, and its outcome_corrected record), and the retractions of what a later span shows
 * wrong: a terminal that comes after all, a continuation that shows the request alive (the resumption
 * family's ambiguous_empty_replay and cursor_lost), a 2026-07-28 re-issue that recovered the call.
 */
export class LostResults {
  constructor(
    private readonly ctx: RuleContext,
    /** Where a 2026-07-28 broken stream's lost_result is kept, beside the re-issue that may retract it. */
    private readonly reissue: ReissueRules,
  ) {}

  /**
   * A client request span that ended at its deadline or by an abort after its stream ended without its
   * result, saying what the client did about it. Resumed: lost, unless its last resume's outcome is a
   * failed resumption the detector reports on its own (ambiguous_empty_replay, cursor_lost tell the loss).
   */
  onRequestEnd(slot: number, span: SpanRecord, recovery: RequestRecovery, error: string): void {
    const ctx = this.ctx;
    ctx.table.seenAt(slot, span.endTimeUnixMs > ctx.now ? span.endTimeUnixMs : ctx.now);
    const last = span.attributes[ATTR_MCP_RESUME_OUTCOME];
    const outcome = typeof last === 'string' && OUTCOMES.has(last) ? (last as ResumeOutcome) : undefined;
    if (outcome !== undefined && outcome !== ResumeOutcome.PARTIAL_REPLAY && isFailedResumptionOutcome(outcome)) return;
    const extra: Partial<Finding> = { recovery, request_end: error };
    if (recovery === RequestRecovery.RESUMED && outcome !== undefined) extra.outcome = outcome;
    this.lostResult(slot, span.traceId, span.startTimeUnixMs, span.endTimeUnixMs, span.spanId, extra);
  }

  /**
   * lost_result of a session-less server's request (session era, no Mcp-Session-Id): the request span
   * ended without its result after its stream ended without it, as `onRequestEnd` decides for a
   * session's request. Nothing keys it but its trace, and nothing can retract it: with no session there
   * is no resume to bring the result later (a re-issue is another request). Once per request span.
   */
  withoutSession(span: SpanRecord, recovery: RequestRecovery, error: string, req: string | number): void {
    if (span.spanId.length !== 16 || !(span.endTimeUnixMs >= span.startTimeUnixMs) || !(span.startTimeUnixMs >= 0))
      return;
    const ctx = this.ctx;
    if (!ctx.onFinding) return;
    const last = span.attributes[ATTR_MCP_RESUME_OUTCOME];
    const outcome = typeof last === 'string' && OUTCOMES.has(last) ? (last as ResumeOutcome) : undefined;
    const finding: Finding = {
      kind: FindingKind.LOST_RESULT,
      // Interned as every finding's service is: past MAX_CORE_SERVICES it is `other`'s.
      service: ctx.services.keyOf(ctx.services.idOf(span.service || UNKNOWN_SERVICE))!,
      session_id: '',
      request_id: typeof req === 'string' ? req : String(req),
      trace_id: span.traceId,
      first_time_unix_ms: span.startTimeUnixMs,
      last_time_unix_ms: span.endTimeUnixMs,
      span_ids: [span.spanId],
      recovery,
      request_end: error,
    };
    if (recovery === RequestRecovery.RESUMED && outcome !== undefined) finding.outcome = outcome;
    ctx.onFinding(finding);
  }

  /**
   * lost_result: the request ended (its deadline, an abort) without its result after its stream had
   * ended without it, whatever the client did (resumed, could not, did not), unless its terminal is known.
   * Retracted by a terminal that arrives later; a continuation counted before it is corrected.
   */
  private lostResult(
    slot: number,
    traceId: string,
    first: number,
    last: number,
    spanId: string,
    extra: Partial<Finding>,
  ): void {
    const table = this.ctx.table;
    if (table.wasReported(slot, FindingKind.LOST_RESULT) || table.hasTerminal(slot)) return;
    table.ensureCold(slot);
    table.markReported(slot, FindingKind.LOST_RESULT);
    table.write(slot, 'lostAt', last);
    this.ctx.emit(slot, FindingKind.LOST_RESULT, traceId, first, last, [spanId], extra);
    this.correctContinuation(slot, traceId);
  }

  /** A resume the instrumentation decided at the request's end: it replayed messages, not the result. */
  onPartialReplay(slot: number, span: SpanRecord, time: number): void {
    const evidence = span.attributes[ATTR_MCP_RESUME_EVIDENCE];
    this.lostResult(slot, span.traceId, time, Math.max(time, span.endTimeUnixMs), span.spanId, {
      recovery: RequestRecovery.RESUMED,
      outcome: ResumeOutcome.PARTIAL_REPLAY,
      request_end: evidence === ResumeEvidence.DEADLINE ? ErrorType.TIMEOUT : ErrorType.ABORTED,
    });
  }

  /** A resume counted as `continuation`: kept (the latest), in case its request turns out to have lost its result. */
  countedContinuation(slot: number, span: SpanRecord, hi: number, lo: number, time: number): void {
    const table = this.ctx.table;
    if (!(table.read(slot, 'countedContinuationAt') > time)) {
      table.write(slot, 'countedContinuationAt', time);
      table.writeSpan(slot, 'countedContinuationSpan', hi, lo);
    }
    this.correctContinuation(slot, span.traceId);
  }

  /**
   * outcome_corrected: a resume counted as `continuation` before its request ended without its result
   * (lost_result, not retracted) was a partial replay. Once per request, whichever of the two came first.
   */
  private correctContinuation(slot: number, traceId: string): void {
    const table = this.ctx.table;
    const at = table.read(slot, 'countedContinuationAt');
    if (
      !table.wasReported(slot, FindingKind.LOST_RESULT) ||
      table.wasRetracted(slot, FindingKind.LOST_RESULT) ||
      !(at <= table.read(slot, 'lostAt')) ||
      table.read(slot, 'correctedAt') >= 0
    )
      return;
    table.write(slot, 'correctedAt', at);
    this.ctx.emit(
      slot,
      FindingKind.LOST_RESULT,
      traceId,
      at,
      table.read(slot, 'lostAt'),
      [table.readSpan(slot, 'countedContinuationSpan')!],
      { outcome: ResumeOutcome.PARTIAL_REPLAY },
      FindingRecord.OUTCOME_CORRECTED,
    );
  }

  /**
   * lost_result, 2026-07-28 era: a client request span ended `stream_broken` (its stream ended before its
   * result; nothing resumes in this era). Kept by its trace beside the re-issues: a re-issue of it that is
   * already known means the client recovered it (no finding); one that comes later retracts it
   * (`retractLostByReissue`).
   */
  ofBrokenStream(span: SpanRecord): void {
    if (span.traceId.length !== 32 || span.spanId.length !== 16 || !(span.startTimeUnixMs >= 0)) return;
    if (!(span.endTimeUnixMs >= span.startTimeUnixMs)) return;
    const entry = this.reissue.entry(span.traceId, span.endTimeUnixMs);
    if (entry.service >= 0 || (entry.flags & LOST) !== 0) return;
    const ctx = this.ctx;
    const attrs = span.attributes;
    const req = attrs[ATTR_JSONRPC_REQUEST_ID];
    const session = attrs[ATTR_MCP_SESSION_ID];
    entry.flags |= LOST;
    entry.lostService = ctx.services.idOf(span.service || UNKNOWN_SERVICE);
    entry.lostRequestId = typeof req === 'string' ? req : typeof req === 'number' ? String(req) : '';
    entry.lostSpanId = span.spanId;
    entry.lostStart = span.startTimeUnixMs;
    entry.lostEnd = span.endTimeUnixMs;
    ctx.onFinding?.({
      kind: FindingKind.LOST_RESULT,
      service: ctx.services.keyOf(entry.lostService)!,
      session_id: typeof session === 'string' ? session : '',
      request_id: entry.lostRequestId,
      trace_id: span.traceId,
      first_time_unix_ms: entry.lostStart,
      last_time_unix_ms: entry.lostEnd,
      span_ids: [span.spanId],
      recovery: RequestRecovery.NOT_REISSUED,
      request_end: ErrorType.STREAM_BROKEN,
    });
  }

  /**
   * Retraction: a continuation at `time` (or a terminal at any time) shows the request alive, which
   * contradicts the ambiguous_empty_replay and cursor_lost findings reported before it. A terminal also
   * contradicts a lost_result: the result came after all.
   */
  retractFailedResumption(slot: number, span: SpanRecord, time: number, terminal: boolean): void {
    const ctx = this.ctx;
    const table = ctx.table;
    if (
      table.wasReported(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY) &&
      !table.wasRetracted(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY) &&
      (terminal || time >= table.emptyReplayAt(slot))
    ) {
      table.markRetracted(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY);
      ctx.emit(
        slot,
        FindingKind.AMBIGUOUS_EMPTY_REPLAY,
        span.traceId,
        table.emptyReplayAt(slot),
        time,
        [span.spanId],
        undefined,
        FindingRecord.RETRACTION,
      );
    }
    if (
      table.wasReported(slot, FindingKind.CURSOR_LOST) &&
      !table.wasRetracted(slot, FindingKind.CURSOR_LOST) &&
      (terminal || time >= table.cursorLostAt(slot))
    ) {
      table.markRetracted(slot, FindingKind.CURSOR_LOST);
      ctx.emit(
        slot,
        FindingKind.CURSOR_LOST,
        span.traceId,
        table.cursorLostAt(slot),
        time,
        [span.spanId],
        undefined,
        FindingRecord.RETRACTION,
      );
    }
    if (
      terminal &&
      table.wasReported(slot, FindingKind.LOST_RESULT) &&
      !table.wasRetracted(slot, FindingKind.LOST_RESULT)
    ) {
      table.markRetracted(slot, FindingKind.LOST_RESULT);
      ctx.emit(
        slot,
        FindingKind.LOST_RESULT,
        span.traceId,
        table.read(slot, 'lostAt'),
        time,
        [span.spanId],
        undefined,
        FindingRecord.RETRACTION,
      );
    }
  }
}

/**
 * The broken first attempt's lost_result is retracted by its re-issue: the client recovered the call.
 * A function over the context rather than a method: the re-issue family calls it, and this family needs
 * that one for its entries, so neither holds the other both ways.
 */
export function retractLostByReissue(ctx: RuleContext, firstTrace: string, entry: Reissue): void {
  if ((entry.flags & LOST) === 0 || (entry.flags & LOST_RETRACTED) !== 0) return;
  entry.flags |= LOST_RETRACTED;
  ctx.onFinding?.({
    kind: FindingKind.LOST_RESULT,
    record: FindingRecord.RETRACTION,
    service: ctx.services.keyOf(entry.lostService)!,
    session_id: '',
    request_id: entry.lostRequestId,
    trace_id: entry.traceId,
    first_time_unix_ms: entry.lostEnd,
    last_time_unix_ms: entry.start,
    span_ids: [entry.spanId],
    first_trace_id: firstTrace,
  });
}
