import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ResumeEvidence, ResumeOutcome, resumeVerdict, verdictAtRequestEnd } from '@resumewatch/semconv';
import type { ResumeObservation } from '@resumewatch/semconv';
import { InvalidResumptionError, ResumeDecision, decideResume, isFailedResumption } from '../src/index.js';
import type { ResumeDecision as Decision } from '../src/index.js';

/** The decision table, written out independently of the implementation. */
function expectedDecision(
  o: { status: number; messages: number; ended: 'clean' | 'error' | undefined; polling: boolean },
  terminal: boolean,
): Decision | undefined {
  if (o.status === 400 || o.status === 404 || o.status === 409) return ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH;
  if (o.status !== 200) return ResumeDecision.RESUME_ERROR_NO_ACTION;
  if (o.messages === 0 && o.ended === undefined) return undefined;
  if (o.messages === 0 && o.ended === 'error') return ResumeDecision.RESUME_ERROR_NO_ACTION;
  if (terminal) return ResumeDecision.TERMINAL_ALREADY_OBSERVED_NO_ACTION;
  if (o.messages > 0) return ResumeDecision.CONTINUATION_VALID;
  return o.polling ? ResumeDecision.POLL_NO_ACTION : ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY;
}

/** What the guard decides of what the wire showed: `resumeVerdict`, then the decision table. */
function decide(seen: ResumeObservation, terminal: boolean): Decision | undefined {
  const verdict = resumeVerdict(seen);
  return verdict && decideResume(verdict, terminal);
}

const seen = (status: number, extra: Partial<ResumeObservation> = {}): ResumeObservation => ({
  status,
  messages: 0,
  ended: undefined,
  pollingAnnounced: false,
  deadlinePassed: false,
  requestEnded: false,
  ...extra,
});

describe('decideResume', () => {
  it('2xx with a message on an unfinished request is a valid continuation', () => {
    expect(decide(seen(200, { messages: 1 }), false)).toBe(ResumeDecision.CONTINUATION_VALID);
  });
  it('2xx open and silent has no verdict yet, however long it has been silent', () => {
    expect(decide(seen(200), false)).toBeUndefined();
  });
  it('2xx whose body ended clean without a message is an empty replay, not "nothing missed"', () => {
    expect(decide(seen(200, { ended: 'clean' }), false)).toBe(ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY);
  });
  it('2xx whose body ended clean after polling was announced is a poll', () => {
    expect(decide(seen(200, { ended: 'clean', pollingAnnounced: true }), false)).toBe(ResumeDecision.POLL_NO_ACTION);
  });
  it('2xx still silent when the request deadline passed is an empty replay', () => {
    expect(decide(seen(200, { deadlinePassed: true, pollingAnnounced: true }), false)).toBe(
      ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY,
    );
  });
  it('a broken body or a request given up is an error, no action', () => {
    expect(decide(seen(200, { ended: 'error' }), false)).toBe(ResumeDecision.RESUME_ERROR_NO_ACTION);
    expect(decide(seen(200, { requestEnded: true }), false)).toBe(ResumeDecision.RESUME_ERROR_NO_ACTION);
  });
  it('2xx on a terminal request needs no action, empty or not', () => {
    expect(decide(seen(200, { ended: 'clean' }), true)).toBe(ResumeDecision.TERMINAL_ALREADY_OBSERVED_NO_ACTION);
    expect(decide(seen(200, { messages: 2 }), true)).toBe(ResumeDecision.TERMINAL_ALREADY_OBSERVED_NO_ACTION);
  });
  it.each([400, 404, 409])('%i means the cursor or the session is gone', (status) => {
    expect(decide(seen(status), false)).toBe(ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH);
    expect(decide(seen(status), true)).toBe(ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH);
  });
  it.each([0, 301, 401, 405, 500, 503])('%i is an error the client handles itself', (status) => {
    expect(decide(seen(status), false)).toBe(ResumeDecision.RESUME_ERROR_NO_ACTION);
  });

  it('only an empty replay, a gone cursor and a partial replay leave the request to be retried', () => {
    const failed = Object.values(ResumeDecision).filter(isFailedResumption);
    expect(failed.sort()).toEqual(
      [
        ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY,
        ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH,
        ResumeDecision.PARTIAL_REPLAY_RETRY_WITH_IDEMPOTENCY,
      ].sort(),
    );
    // A partial replay is known at the request's end: the continuation decided again then.
    const partial = verdictAtRequestEnd(
      { outcome: ResumeOutcome.CONTINUATION, evidence: ResumeEvidence.MESSAGE },
      true,
    );
    expect(partial).toEqual({ outcome: ResumeOutcome.PARTIAL_REPLAY, evidence: ResumeEvidence.DEADLINE });
    expect(decideResume(partial, false)).toBe(ResumeDecision.PARTIAL_REPLAY_RETRY_WITH_IDEMPOTENCY);
    expect(decideResume(partial, true)).toBe(ResumeDecision.TERMINAL_ALREADY_OBSERVED_NO_ACTION);
  });

  it('matches the written-out table on any observation', () => {
    fc.assert(
      fc.property(
        fc.record({
          status: fc.constantFrom(0, 200, 400, 404, 409, 500),
          messages: fc.integer({ min: 0, max: 2 }),
          ended: fc.constantFrom('clean' as const, 'error' as const, undefined),
          polling: fc.boolean(),
        }),
        fc.boolean(),
        (o, terminal) => {
          const observation = seen(o.status, { messages: o.messages, ended: o.ended, pollingAnnounced: o.polling });
          expect(decide(observation, terminal)).toBe(expectedDecision(o, terminal));
        },
      ),
    );
  });
});

describe('InvalidResumptionError', () => {
  it('names the request, the session only as a property left out of logs', () => {
    const error = InvalidResumptionError.terminal('r1', 'sess-A');
    expect(error).toBeInstanceOf(Error);
    expect(error.reason).toBe('terminal');
    expect(error.requestId).toBe('r1');
    expect(error.sessionId).toBe('sess-A');
    expect(error.message).toContain('"r1" is terminal');
    // The session id is on the error, never in its message or its serialisation (messages end up in logs).
    expect(error.message).not.toContain('sess-A');
    expect(JSON.stringify(error)).not.toContain('sess-A');
  });
});
