import { restoreObserver, snapshotObserver } from '@resumewatch/wire';
import type { OpenRequestSpan } from '@resumewatch/instrumentation';
import { ResumeOutcome, StreamKind } from '@resumewatch/semconv';
import type { Observation } from './observation.js';

/** The observation's section of the --state-file, beside the built-in detector's state. */
export const OBSERVATION_SECTION = 'wire-observer';

/** The section's own version (its `wire` member carries the wire observer's: OBSERVER_STATE_VERSION). */
const VERSION = 1;

/**
 * An open request span: record index (in the wire part), trace id, span id, deadline (unix ms), protocol
 * version, resumed, its last resume's outcome.
 */
type SpanRow = [number, string, string, number, string | null, boolean, string | null];

const OUTCOMES = new Set<string>(Object.values(ResumeOutcome));
const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

/** The observation's part of the state file, as the daemon's state file keeps other parts (StatePart). */
export interface ObservationState {
  restore(section: unknown): string;
  snapshot(): unknown;
  /**
   * Takes the snapshot now and writes that one from then on, and hands the open request spans over to
   * the next process: at shutdown, before the connections are closed (which would end every open stream
   * and request span as the client's abort).
   */
  freeze(): void;
}

/**
 * The gateway's wire observer (sessions, streams, cursors, request records, proofs awaited) and its span
 * recorder's open request spans, kept in the --state-file across a restart. A request awaiting its
 * result at the snapshot gets its span again in the next process, in its trace, with the deadline it had:
 * tied to its result if the client resumes to it, reported lost at that deadline if nothing comes.
 */
export function observationState(observation: Observation, upstream: URL): ObservationState {
  let frozen: unknown;
  const take = (): unknown => {
    const wire = snapshotObserver(observation.observer);
    const spans: SpanRow[] = [];
    for (const open of observation.requestSpans.open()) {
      const at = wire.indexOf(open.record);
      if (at >= 0)
        spans.push([
          at,
          open.traceId,
          open.spanId,
          open.deadline,
          open.protocolVersion ?? null,
          open.resumed,
          open.lastResume ?? null,
        ]);
    }
    return { v: VERSION, wire: wire.state, spans };
  };
  return {
    snapshot: () => frozen ?? take(),
    freeze() {
      frozen = take();
      // Kept for the next process: not ended here as the abort the shutdown's closing of connections is not.
      observation.requestSpans.handOver();
    },
    restore(section) {
      if (typeof section !== 'object' || section === null) throw new Error('not an object');
      const { v, wire, spans } = section as { v?: unknown; wire?: unknown; spans?: unknown };
      if (v !== VERSION) throw new Error(`version ${String(v)}, this gateway reads ${VERSION}`);
      // Checked before anything is put back: a bad row leaves the observer empty.
      if (!Array.isArray(spans) || !spans.every(isSpanRow)) throw new Error('a malformed open request span');
      const restored = restoreObserver(observation.observer, wire);
      let reopened = 0;
      for (const [at, traceId, spanId, deadline, protocolVersion, resumed, lastResume] of spans as SpanRow[]) {
        const record = restored.recordAt(at);
        if (record === undefined || record.terminalCount > 0) continue;
        // Its streams as restored: one open at the snapshot was cut by the restart (ended on error).
        let broken = false;
        let cursor = false;
        const session = observation.observer.getSession(record.sessionId);
        for (const stream of session?.streams ?? []) {
          if (stream.kind === StreamKind.LISTENING || stream.ended === 'abort' || !stream.requests.includes(record))
            continue;
          broken = true;
          if (stream.deliveredEventId !== undefined) cursor = true;
        }
        const open: OpenRequestSpan = {
          record,
          traceId,
          spanId,
          deadline,
          protocolVersion: protocolVersion ?? undefined,
          broken,
          cursor,
          resumed,
          lastResume: (lastResume ?? undefined) as ResumeOutcome | undefined,
        };
        observation.requestSpans.reopen(open, upstream.href);
        reopened++;
      }
      return `restored ${restored.sessions} sessions and ${restored.requests} requests of the wire observer, ${reopened} awaiting their result`;
    },
  };
}

function isSpanRow(row: unknown): row is SpanRow {
  return (
    Array.isArray(row) &&
    row.length === 7 &&
    Number.isSafeInteger(row[0]) &&
    typeof row[1] === 'string' &&
    TRACE_ID.test(row[1]) &&
    typeof row[2] === 'string' &&
    SPAN_ID.test(row[2]) &&
    typeof row[3] === 'number' &&
    Number.isFinite(row[3]) &&
    (row[4] === null || (typeof row[4] === 'string' && row[4].length <= 64)) &&
    typeof row[5] === 'boolean' &&
    (row[6] === null || OUTCOMES.has(row[6] as string))
  );
}
