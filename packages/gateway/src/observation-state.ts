import { restoreObserver, snapshotObserverSteps } from '@resumewatch/wire';
import type { RequestRecord } from '@resumewatch/wire';
import type { OpenRequestSpan } from '@resumewatch/instrumentation';
import { ResumeOutcome, StreamKind } from '@resumewatch/semconv';
import type { Observation } from './observation.js';

/** The observation's section of the --state-file, beside the built-in detector's state. */
export const OBSERVATION_SECTION = 'wire-observer';

/** The section's own version (its `wire` member carries the wire observer's: OBSERVER_STATE_VERSION). */
const VERSION = 2;

/**
 * An open request span, written beside its record in the wire part (the record's `x`): trace id, span
 * id, deadline (unix ms), protocol version, resumed, its last resume's outcome.
 */
type SpanRow = [string, string, number, string | null, boolean, string | null];

const OUTCOMES = new Set<string>(Object.values(ResumeOutcome));
const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

/** The observation's part of the state file, as the daemon's state file keeps other parts (StatePart). */
export interface ObservationState {
  restore(section: unknown): string;
  snapshot(): unknown;
  /**
   * The section's JSON text in steps, each a bounded piece of work (SNAPSHOT_STEP_BYTES of text and
   * one session at most past it): the periodic snapshot yields to the event loop between two.
   */
  snapshotText(): Iterable<string>;
  /**
   * Takes the snapshot now, whole, in one pass, and writes that one from then on, and hands the open
   * request spans over to the next process: at shutdown, before the connections are closed (which would
   * end every open stream and request span as the client's abort).
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
  let frozen: string | undefined;
  // Each open request span goes with its record, looked up as the record is written: a span and its
  // record are taken at the same step, whatever the steps between them.
  const spanOf = (record: RequestRecord): SpanRow | undefined => {
    const open = observation.requestSpans.openOf(record);
    return open
      ? [open.traceId, open.spanId, open.deadline, open.protocolVersion ?? null, open.resumed, open.lastResume ?? null]
      : undefined;
  };
  function* steps(): Generator<string> {
    let first = true;
    for (const step of snapshotObserverSteps(observation.observer, { extra: spanOf })) {
      yield first ? `{"v":${VERSION},"wire":${step}` : step;
      first = false;
    }
    yield '}';
  }
  const whole = (): string => {
    let text = '';
    for (const step of steps()) text += step;
    return text;
  };
  return {
    snapshot: () => JSON.parse(frozen ?? whole()) as unknown,
    snapshotText: () => (frozen === undefined ? steps() : [frozen]),
    freeze() {
      frozen = whole();
      // Kept for the next process: not ended here as the abort the shutdown's closing of connections is not.
      observation.requestSpans.handOver();
    },
    restore(section) {
      if (typeof section !== 'object' || section === null) throw new Error('not an object');
      const { v, wire } = section as { v?: unknown; wire?: unknown };
      if (v !== VERSION) throw new Error(`version ${String(v)}, this gateway reads ${VERSION}`);
      // Each span checked before anything is put back: a bad row leaves the observer empty.
      const restored = restoreObserver(observation.observer, wire, isSpanRow);
      let reopened = 0;
      for (const [record, row] of restored.extras) {
        const [traceId, spanId, deadline, protocolVersion, resumed, lastResume] = row as SpanRow;
        if (record.terminalCount > 0) continue;
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
    row.length === 6 &&
    typeof row[0] === 'string' &&
    TRACE_ID.test(row[0]) &&
    typeof row[1] === 'string' &&
    SPAN_ID.test(row[1]) &&
    typeof row[2] === 'number' &&
    Number.isFinite(row[2]) &&
    (row[3] === null || (typeof row[3] === 'string' && row[3].length <= 64)) &&
    typeof row[4] === 'boolean' &&
    (row[5] === null || OUTCOMES.has(row[5] as string))
  );
}
