import { ATTR_MCP_STREAM_ID, FindingKind, FindingRecord, StormEnd } from '@resumewatch/semconv';
import { uniq, type RuleContext, type RuleFamily } from './context.js';
import { IdSet } from './id-set.js';
import { hash32 } from './ids.js';
import { M_ALL } from './marks.js';
import { refusedByGuard } from './outcome.js';
import { NO_SLOT } from './slots.js';
import type { ForcedStormEnd } from './table.js';
import type { DetectorStats, SpanRecord } from './types.js';

/**
 * The resumption family's attempts, episodes and storms: each reattach or resume of a request is an
 * attempt, counted into its current episode; `stormThreshold` attempts within `stormWindowMs` are a
 * reconnect_storm, reported at once and again as a `storm_ended` record once it has ended and settled.
 * `signature` (a storm and a duplicate terminal of the same request) lives here beside the storm it
 * completes; the resumption family (resumption.ts) calls it for the duplicate half.
 */
export class Storms implements RuleFamily {
  /** Slots of the storms reported and not yet finalized, in the order they were reported. */
  readonly openStorms = new Set<number>();
  /** Streams counted as an attempt, by (stream hash, request incarnation): the two spans of one GET count once. */
  readonly attemptStreams: IdSet;
  /** Streams whose resume was a poll or a continuation of an unfinished request: not attempts. */
  readonly quietStreams: IdSet;

  constructor(private readonly ctx: RuleContext) {
    this.attemptStreams = new IdSet(ctx.options.dedupeCapacity);
    this.quietStreams = new IdSet(ctx.options.dedupeCapacity);
  }

  /**
   * One reattach/resume attempt of the request, counted into its current episode; attempts are distinct
   * new streams, so the two spans of one GET count once. `evicts`: the server answered 400/404/409, so
   * the session (and the storm, if this episode is one) ends with this attempt.
   */
  attempt(slot: number, span: SpanRecord, hi: number, lo: number, time: number, evicts: boolean, marks = M_ALL): void {
    if (refusedByGuard(span.attributes, marks)) return;
    const table = this.ctx.table;
    table.ensureCold(slot);
    const stream = span.attributes[ATTR_MCP_STREAM_ID];
    let streamHash: number;
    if (typeof stream === 'string' && stream.length > 0) {
      streamHash = hash32(stream);
      const key = table.incarnationKey(slot);
      if (this.quietStreams.contains(streamHash, key)) return;
      if (!this.attemptStreams.add(streamHash, key)) {
        // The second span of an attempt already counted: it can still tell that the server evicted it.
        if (evicts && table.episodeAttemptCount(slot) > 0 && streamHash === table.lastAttemptStream(slot))
          this.markEvicting(slot);
        return;
      }
    } else {
      streamHash = hash32(span.spanId);
    }
    // An attempt inside a storm already reported and ended belongs to that storm, not to a new one.
    if (!table.inStorm(slot) && time <= table.stormEndAt(slot)) return;
    const window = this.ctx.options.stormWindowMs;
    if (table.episodeAttemptCount(slot) > 0) {
      if (time > table.lastAttemptAt(slot) + window) this.closeEpisode(slot);
      else if (time < table.firstAttemptAt(slot) - window) return;
    }
    table.countAttempt(slot, time, hi, lo);
    if (!(time < table.lastAttemptAt(slot))) {
      table.setLastAttempt(slot, time, streamHash, span.traceId, hi, lo, evicts);
      if (table.stormEnded(slot) && !evicts) {
        // A later attempt: the storm did not end where it seemed to.
        table.reopenStorm(slot);
      }
    }
    if (!table.inStorm(slot)) this.reconnectStorm(slot, span, time);
    if (table.inStorm(slot) && table.lastAttemptEvicted(slot) && !table.stormEnded(slot)) {
      this.endStorm(slot, table.lastAttemptAt(slot), true);
    }
  }

  /** The stream of a poll or continuation is no attempt; if its reattach span already counted it, that is undone. */
  notAttempt(slot: number, span: SpanRecord): void {
    const stream = span.attributes[ATTR_MCP_STREAM_ID];
    if (typeof stream !== 'string' || stream.length === 0) return;
    const streamHash = hash32(stream);
    const key = this.ctx.table.incarnationKey(slot);
    if (this.quietStreams.add(streamHash, key) && this.attemptStreams.contains(streamHash, key))
      this.withdraw(slot, span.startTimeUnixMs);
  }

  /**
   * reconnect_storm: `stormThreshold` attempts of one episode within `stormWindowMs`. The ring holds the
   * threshold latest attempt times, so its span is the tightest window of that many attempts.
   */
  private reconnectStorm(slot: number, span: SpanRecord, time: number): void {
    const table = this.ctx.table;
    const oldest = table.oldestRingTime(slot);
    const newest = table.newestRingTime(slot);
    if (!(newest - oldest <= this.ctx.options.stormWindowMs)) return;
    table.startStorm(slot);
    this.openStorms.add(slot);
    this.ctx.emit(
      slot,
      FindingKind.RECONNECT_STORM,
      span.traceId,
      oldest,
      newest,
      uniq([table.firstAttemptSpanId(slot), span.spanId]),
      {
        attempts: table.episodeAttemptCount(slot),
      },
    );
    // Duplicates were delivered before the storm was complete: the pattern is complete now.
    this.signature(slot, span.traceId, time);
  }

  /**
   * signature: the seed pattern, reported once as soon as both halves are known (a duplicate terminal on a
   * distinct stream, and a reported storm, current or ended), in whichever order they were learnt.
   */
  signature(slot: number, traceId: string, time: number): void {
    const table = this.ctx.table;
    const current = table.inStorm(slot);
    if (table.wasReported(slot, FindingKind.SIGNATURE) || !(current || table.hasPastStorm(slot))) return;
    const duplicates = table.duplicateDeliveries(slot);
    if (duplicates < 1) return;
    table.markReported(slot, FindingKind.SIGNATURE);
    const stormFirst = current ? table.firstAttemptAt(slot) : table.pastStormFirstAt(slot);
    const stormLast = current ? table.lastAttemptAt(slot) : table.stormEndAt(slot);
    const first = table.hasTerminal(slot) ? Math.min(table.firstTerminalAt(slot), stormFirst) : stormFirst;
    const ids = [table.firstAttemptSpanId(slot), table.lastAttemptSpanId(slot)];
    const duplicateSpan = table.duplicateSpanId(slot);
    if (duplicateSpan !== undefined) ids.unshift(duplicateSpan);
    if (table.hasTerminal(slot)) ids.unshift(table.firstTerminalSpanId(slot));
    this.ctx.emit(slot, FindingKind.SIGNATURE, traceId, first, Math.max(stormLast, time), uniq(ids), {
      duplicates,
      attempts: current ? table.episodeAttemptCount(slot) : table.pastStormAttemptCount(slot),
    });
  }

  /** Ends quiet storms, reports settled ones; idle requests leave the table (a storm still inside its window ends as dropped). */
  advance(horizon: number): void {
    const ctx = this.ctx;
    const table = ctx.table;
    const window = ctx.options.stormWindowMs;
    for (const slot of this.openStorms) {
      // A storm ends when its window passes with no attempt; it is reported once it has settled.
      const quietFrom = table.lastAttemptAt(slot) + window;
      if (!table.stormEnded(slot) && ctx.now > quietFrom) this.endStorm(slot, quietFrom, false);
      if (table.stormEnded(slot) && ctx.now >= table.stormEndAt(slot) + ctx.options.settleMs) this.finalize(slot);
    }
    // Idle requests leave in least-recently-touched order.
    while (table.oldest !== NO_SLOT && table.lastSeenAt(table.oldest) < horizon) {
      const oldest = table.oldest;
      this.release(oldest, ctx.now > table.lastAttemptAt(oldest) + window ? undefined : StormEnd.DROPPED);
      ctx.counts.released++;
    }
  }

  /** End of input: ends and reports every open storm now, whatever the windows say. */
  flush(): void {
    for (const slot of this.openStorms) this.forceFinalize(slot, StormEnd.SHUTDOWN);
  }

  stats(into: DetectorStats): void {
    let n = 0;
    for (const slot of this.openStorms) if (!this.ctx.table.stormEnded(slot)) n++;
    into.activeStorms = n;
  }

  /** The reported storms not yet ended, by service. */
  activeByService(): Map<string, number> {
    const out = new Map<string, number>();
    for (const slot of this.openStorms) {
      if (this.ctx.table.stormEnded(slot)) continue;
      const service = this.ctx.serviceOf(slot);
      out.set(service, (out.get(service) ?? 0) + 1);
    }
    return out;
  }

  /** Drops the request's state; an open storm of it ends now, `forcedBy` saying why (undefined: its window had passed). */
  release(slot: number, forcedBy: ForcedStormEnd | undefined): void {
    // Most requests leave with no storm open anywhere: the size is read before the Set is probed.
    if (this.openStorms.size !== 0 && this.openStorms.has(slot)) this.forceFinalize(slot, forcedBy);
    this.ctx.table.release(slot);
  }

  /** Removes one counted attempt (the one nearest `time`) from the current episode, unless it is already a storm. */
  private withdraw(slot: number, time: number): void {
    const table = this.ctx.table;
    if (!(table.episodeAttemptCount(slot) > 0) || table.inStorm(slot)) return;
    table.withdrawAttempt(slot, time);
  }

  /** The server evicted the session on the episode's latest attempt: a storm in progress ends there. */
  private markEvicting(slot: number): void {
    const table = this.ctx.table;
    table.markLastAttemptEvicted(slot);
    if (table.inStorm(slot) && !table.stormEnded(slot)) this.endStorm(slot, table.lastAttemptAt(slot), true);
  }

  /** The storm ends at `at`; its storm_ended record follows once settleMs has passed (at once on eviction with no settle time). */
  private endStorm(slot: number, at: number, byEviction: boolean): void {
    this.ctx.table.endStorm(slot, at);
    if (byEviction && this.ctx.options.settleMs <= 0) this.finalize(slot);
  }

  /** Ends an open storm now; `forcedBy` says why (undefined: the window passed quietly). */
  private forceFinalize(slot: number, forcedBy: ForcedStormEnd | undefined): void {
    const table = this.ctx.table;
    if (!table.stormEnded(slot)) {
      if (forcedBy !== undefined) table.forceStormEnd(slot, forcedBy);
      this.endStorm(slot, table.lastAttemptAt(slot) + this.ctx.options.stormWindowMs, false);
    }
    if (this.openStorms.has(slot)) this.finalize(slot);
  }

  /** Starts a new episode after a quiet gap, reporting the end of the storm the old one was, if any. */
  private closeEpisode(slot: number): void {
    if (this.ctx.table.inStorm(slot)) this.forceFinalize(slot, undefined);
    else this.ctx.table.resetEpisode(slot);
  }

  /** A reported storm has ended (and settled): one storm_ended record, never a second signature. */
  private finalize(slot: number): void {
    const ctx = this.ctx;
    const table = ctx.table;
    const attempts = table.episodeAttemptCount(slot);
    const endedBy = table.stormEndedBy(slot);
    const service = ctx.serviceOf(slot);
    ctx.events?.stormFinalized(service, attempts, endedBy);
    const first = table.firstAttemptAt(slot);
    const last = table.lastAttemptAt(slot);
    table.retireStorm(slot);
    this.openStorms.delete(slot);
    ctx.emit(
      slot,
      FindingKind.RECONNECT_STORM,
      table.lastAttemptTraceId(slot),
      first,
      last,
      uniq([table.firstAttemptSpanId(slot), table.lastAttemptSpanId(slot)]),
      // The whole storm's counts: duplicates too, so a reader sees one count per request at its end.
      {
        attempts,
        duplicates: table.duplicateDeliveries(slot) || undefined,
        ended_by: endedBy,
        ended_by_eviction: endedBy === StormEnd.EVICTED,
      },
      FindingRecord.STORM_ENDED,
    );
  }
}
