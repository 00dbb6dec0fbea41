import {
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_TERMINAL_FOREIGN,
  FindingKind,
  ResumeOutcome,
  isFailedResumptionOutcome,
} from '@resumewatch/semconv';
import type { RuleContext } from './context.js';
import { hash32 } from './ids.js';
import { M_CONFLICT, M_DUPLICATE, M_FOREIGN } from './marks.js';
import type { LostResults } from './lost.js';
import { droppedByGuard, isEvidencedEmptyReplay, refusedByGuard, resumeOutcome, statusOf } from './outcome.js';
import type { ReissueRules } from './reissue.js';
import type { ServerDefects } from './server-defects.js';
import type { Storms } from './storms.js';
import type { AttributeValue, SpanRecord } from './types.js';

/**
 * The resumption family: what a request's terminal and resume spans change in its state, and the rules
 * they decide. A terminal delivered more than once (duplicate_terminal), a resume of a request whose
 * terminal was delivered (resume_after_terminal), a resume that found nothing to replay
 * (ambiguous_empty_replay) or no cursor (cursor_lost). Attempts, storms and the signature are its other
 * half (storms.ts). A terminal marked foreign or conflicting goes to the server-defect family instead;
 * a continuation or a terminal retracts through the lost-result family.
 */
export class Resumption {
  constructor(
    private readonly ctx: RuleContext,
    private readonly storms: Storms,
    private readonly lost: LostResults,
    private readonly reissue: ReissueRules,
    private readonly defects: ServerDefects,
  ) {}

  /** A terminal (result or error) delivered to the application for the request. */
  terminal(
    slot: number,
    span: SpanRecord,
    hi: number,
    lo: number,
    time: number,
    service: string,
    marks: number,
    stream: AttributeValue | undefined,
  ): void {
    const table = this.ctx.table;
    const attrs = span.attributes;
    // marks (marks.ts): a terminal's foreign, conflict and duplicate marks are missing on almost every terminal.
    const foreign = (marks & M_FOREIGN) !== 0 && attrs[ATTR_MCP_TERMINAL_FOREIGN] === true;
    const conflict = (marks & M_CONFLICT) !== 0 && attrs[ATTR_MCP_TERMINAL_CONFLICT] === true;
    // A server defect, guard or not: it never counts as the client's duplicate or resume after terminal.
    if (foreign || conflict) return this.defects.terminal(slot, span, time, foreign, conflict);
    const streamHash = hash32(typeof stream === 'string' && stream.length > 0 ? stream : span.spanId);
    const hadTerminal = table.hasTerminal(slot);
    if (hadTerminal && droppedByGuard(attrs, marks)) return;
    let markedDuplicate = (marks & M_DUPLICATE) !== 0 && attrs[ATTR_MCP_TERMINAL_DUPLICATE] === true;
    if (markedDuplicate && table.foreignStream(slot) !== 0) {
      // The "first" terminal it duplicates was a foreign one: the server's defect, already reported.
      const first = attrs[ATTR_MCP_TERMINAL_FIRST_STREAM_ID];
      if (typeof first === 'string' && hash32(first) === table.foreignStream(slot)) markedDuplicate = false;
    }
    table.countTerminal(slot, markedDuplicate);
    this.ctx.events?.terminal(service, hadTerminal || markedDuplicate);
    let duplicateTime = time;
    if (!hadTerminal) {
      table.setFirstTerminal(slot, time, streamHash, hi, lo);
    } else if (streamHash === table.firstTerminalStream(slot)) {
      // The same stream delivering it again (a replay to the same stream) is no duplicate by itself.
      table.countFirstStreamDelivery(slot, time, hi, lo);
    } else if (time < table.firstTerminalAt(slot)) {
      // A delivery earlier than the one taken as first: that one becomes the duplicate.
      duplicateTime = table.firstTerminalAt(slot);
      table.demoteFirstTerminal(slot);
      table.setFirstTerminal(slot, time, streamHash, hi, lo);
    } else {
      table.noteDuplicateSpan(slot, hi, lo);
    }
    // The common case, a request's first terminal with nothing else known about it (no cold row: never
    // resumed, reattached or duplicated): no finding to retract, no duplicate, no resume before it.
    if (!hadTerminal && !markedDuplicate && !table.hasColdRow(slot)) return;
    // The request reached its terminal: no resume of it failed to get its result.
    this.lost.retractFailedResumption(slot, span, time, true);
    this.duplicateTerminal(slot, span.traceId, duplicateTime, span.spanId);
    // Spans out of order: a resume already seen turns out to be later than this terminal.
    const resumeTime = table.latestResumeAt(slot);
    if (resumeTime >= table.firstTerminalAt(slot))
      this.resumeAfterTerminal(slot, span.traceId, table.firstTerminalAt(slot), resumeTime, undefined);
    this.reissue.completedAfterCancellation(slot, span.traceId);
  }

  /** A resume (GET with Last-Event-ID) of the request's stream. */
  resume(slot: number, span: SpanRecord, hi: number, lo: number, time: number, service: string, marks: number): void {
    const ctx = this.ctx;
    const table = ctx.table;
    table.ensureCold(slot);
    const attrs = span.attributes;
    if (refusedByGuard(attrs, marks)) {
      ctx.events?.resume(service, ResumeOutcome.ERROR);
      return;
    }
    const status = statusOf(attrs, marks);
    const outcome = resumeOutcome(attrs, status);
    ctx.events?.resume(service, outcome);
    const observed = attrs[ATTR_MCP_REQUEST_TERMINAL_OBSERVED] === true;
    if (attrs[ATTR_MCP_RESUME_REPLAYED_TERMINAL] === true) {
      // A replayed terminal is a duplicate if one had been delivered before, or if it is not the first replay to deliver it.
      table.countReplayedTerminal(slot, observed);
      this.duplicateTerminal(slot, span.traceId, time, span.spanId);
    }
    table.noteResume(slot, time, hi, lo);
    const haveTerminal = table.hasTerminal(slot);
    if (observed || (haveTerminal && table.firstTerminalAt(slot) <= time)) {
      this.resumeAfterTerminal(
        slot,
        span.traceId,
        haveTerminal ? Math.min(table.firstTerminalAt(slot), time) : time,
        time,
        span.spanId,
      );
    } else if (
      outcome === ResumeOutcome.CONTINUATION ||
      outcome === ResumeOutcome.POLL ||
      outcome === ResumeOutcome.PARTIAL_REPLAY
    ) {
      // The request is alive: a poll or a continuation before its terminal is no attempt and no finding.
      // A partial replay carried messages too (the server held the stream), but its request then ended
      // without its result: lost.
      if (outcome !== ResumeOutcome.POLL) {
        table.noteContinuation(slot, time);
        this.lost.retractFailedResumption(slot, span, time, false);
      }
      if (outcome === ResumeOutcome.CONTINUATION) this.lost.countedContinuation(slot, span, hi, lo, time);
      else if (outcome === ResumeOutcome.PARTIAL_REPLAY) this.lost.onPartialReplay(slot, span, time);
      this.storms.notAttempt(slot, span);
      return;
    } else if (!haveTerminal && isFailedResumptionOutcome(outcome)) {
      if (outcome === ResumeOutcome.EMPTY_REPLAY) this.emptyReplay(slot, span, time, status);
      else this.cursorLost(slot, span, hi, lo, time, outcome, status);
    }
    this.storms.attempt(slot, span, hi, lo, time, isFailedResumptionOutcome(outcome), marks);
  }

  /**
   * duplicate_terminal: the request's terminal was delivered more than once (on distinct streams, marked
   * duplicate by the instrumentation, or replayed by a resume after one had been delivered).
   */
  private duplicateTerminal(slot: number, traceId: string, time: number, spanId: string): void {
    const table = this.ctx.table;
    if (table.wasReported(slot, FindingKind.DUPLICATE_TERMINAL)) return;
    const duplicates = table.duplicateDeliveries(slot);
    if (duplicates < 1) return;
    table.markReported(slot, FindingKind.DUPLICATE_TERMINAL);
    const haveTerminal = table.hasTerminal(slot);
    const first = haveTerminal ? Math.min(table.firstTerminalAt(slot), time) : time;
    const last = haveTerminal ? Math.max(table.firstTerminalAt(slot), time) : time;
    const ids: string[] = [];
    if (haveTerminal) ids.push(table.firstTerminalSpanId(slot));
    const duplicateSpan = table.duplicateSpanId(slot) ?? spanId;
    if (!ids.includes(duplicateSpan)) ids.push(duplicateSpan);
    this.ctx.emit(slot, FindingKind.DUPLICATE_TERMINAL, traceId, first, last, ids, { duplicates });
    // A storm was reported before any duplicate had arrived: the pattern is complete now.
    this.storms.signature(slot, traceId, last);
  }

  /**
   * resume_after_terminal: a resume of a request whose terminal had been delivered (by event time, or
   * as the instrumentation observed it). `resumeSpanId` undefined: the latest resume stored in the table.
   */
  private resumeAfterTerminal(
    slot: number,
    traceId: string,
    first: number,
    last: number,
    resumeSpanId: string | undefined,
  ): void {
    const table = this.ctx.table;
    if (table.wasReported(slot, FindingKind.RESUME_AFTER_TERMINAL)) return;
    table.markReported(slot, FindingKind.RESUME_AFTER_TERMINAL);
    const resumeSpan = resumeSpanId ?? table.latestResumeSpanId(slot);
    const ids = table.hasTerminal(slot) ? [table.firstTerminalSpanId(slot), resumeSpan] : [resumeSpan];
    this.ctx.emit(slot, FindingKind.RESUME_AFTER_TERMINAL, traceId, first, last, ids);
  }

  /**
   * ambiguous_empty_replay: an evidenced empty replay of a request with no terminal and no continuation
   * at or after it, by event time. Withdrawn by retractFailedResumption (lost.ts) if the request turns out alive.
   */
  private emptyReplay(slot: number, span: SpanRecord, time: number, status: number): void {
    const table = this.ctx.table;
    if (
      table.wasReported(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY) ||
      table.continuationAt(slot) >= time ||
      !isEvidencedEmptyReplay(span.attributes, span.kind)
    )
      return;
    table.markReported(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY);
    table.setEmptyReplayAt(slot, time);
    this.ctx.emit(slot, FindingKind.AMBIGUOUS_EMPTY_REPLAY, span.traceId, time, time, [span.spanId], {
      outcome: ResumeOutcome.EMPTY_REPLAY,
      status_code: status,
    });
  }

  /**
   * cursor_lost: a resume answered 404 at once, or 400/409 once a second resume of the request is
   * rejected too, for a request with no terminal and no continuation at or after the failure, by event
   * time. Withdrawn by retractFailedResumption (lost.ts) if the request turns out alive.
   */
  private cursorLost(
    slot: number,
    span: SpanRecord,
    hi: number,
    lo: number,
    time: number,
    outcome: ResumeOutcome,
    status: number,
  ): void {
    const table = this.ctx.table;
    let first = time;
    const ids = [span.spanId];
    if (outcome === ResumeOutcome.CURSOR_REJECTED) {
      // Provisional: the server may still hold the dropped connection, and the client's next resume succeed.
      if (!table.hasRejection(slot)) {
        table.setFirstRejection(slot, time, hi, lo);
        return;
      }
      const earlier = table.firstRejectionAt(slot);
      first = Math.min(earlier, time);
      if (earlier <= time) ids.unshift(table.firstRejectionSpanId(slot));
      else ids.push(table.firstRejectionSpanId(slot));
      time = Math.max(earlier, time);
    }
    if (table.wasReported(slot, FindingKind.CURSOR_LOST) || table.continuationAt(slot) >= time) return;
    table.markReported(slot, FindingKind.CURSOR_LOST);
    table.setCursorLostAt(slot, time);
    this.ctx.emit(slot, FindingKind.CURSOR_LOST, span.traceId, first, time, ids, { outcome, status_code: status });
  }

  /**
   * cursor_lost confirmed by the request's end: a lone 400/409 (provisional: the client may resume
   * again and succeed) and then the client gave the request up without its terminal event or a
   * continuation. Many clients stop after one rejection; the guard confirms the same way.
   */
  cursorLostOnGiveUp(slot: number, span: SpanRecord): void {
    const table = this.ctx.table;
    if (!table.hasColdRow(slot) || !table.hasRejection(slot) || table.hasTerminal(slot)) return;
    const rejectedAt = table.firstRejectionAt(slot);
    if (table.wasReported(slot, FindingKind.CURSOR_LOST) || table.continuationAt(slot) >= rejectedAt) return;
    const end = Math.max(span.endTimeUnixMs, rejectedAt);
    table.markReported(slot, FindingKind.CURSOR_LOST);
    table.setCursorLostAt(slot, end);
    this.ctx.emit(
      slot,
      FindingKind.CURSOR_LOST,
      span.traceId,
      rejectedAt,
      end,
      [table.firstRejectionSpanId(slot), span.spanId],
      {
        outcome: ResumeOutcome.CURSOR_REJECTED,
      },
    );
  }
}
