import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ResumeObservation } from '@resumewatch/semconv';
import { InvalidResumptionError, ResumeDecision, StreamResumptionGuard } from '../src/index.js';
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

describe('StreamResumptionGuard', () => {
  it('builds resume headers from the last cursor of an unfinished request', () => {
    const guard = new StreamResumptionGuard();
    guard.observeEvent('r1', 'e1', false);
    guard.observeEvent('r1', 'e2', false);
    expect(guard.buildResumeHeaders('r1', 's1')).toEqual({ 'Mcp-Session-Id': 's1', 'Last-Event-ID': 'e2' });
  });

  it('keeps the cursor when an event has no id', () => {
    const guard = new StreamResumptionGuard();
    guard.observeEvent(7, 'e1', false);
    guard.observeEvent(7, undefined, false);
    expect(guard.lastEventId(7)).toBe('e1');
    expect(guard.buildResumeHeaders('7', 's')['Last-Event-ID']).toBe('e1');
  });

  it('refuses to resume a terminal request, naming the request (the session only as a property)', () => {
    const guard = new StreamResumptionGuard();
    guard.observeEvent('r1', 'e1', false);
    guard.observeEvent('r1', 'e2', true);
    let error: unknown;
    try {
      guard.buildResumeHeaders('r1', 'sess-A');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidResumptionError);
    const invalid = error as InvalidResumptionError;
    expect(invalid.reason).toBe('terminal');
    expect(invalid.requestId).toBe('r1');
    expect(invalid.sessionId).toBe('sess-A');
    expect(invalid.message).toContain('"r1" is terminal');
    // The session id is on the error, never in its message (messages end up in logs).
    expect(invalid.message).not.toContain('sess-A');
  });

  it('refuses to resume a request without a cursor', () => {
    const guard = new StreamResumptionGuard();
    expect(() => guard.buildResumeHeaders('unknown', 's')).toThrow(/"unknown" has no observed event cursor/);
    guard.observeEvent('json', undefined, false);
    expect(() => guard.buildResumeHeaders('json', 's')).toThrow(InvalidResumptionError);
  });

  it('stays terminal once terminal, whatever arrives after', () => {
    const guard = new StreamResumptionGuard();
    guard.observeEvent('r', 'e1', true);
    guard.observeEvent('r', 'e2', false);
    expect(guard.isTerminal('r')).toBe(true);
    expect(guard.lastEventId('r')).toBe('e2');
  });

  describe('interpretResumeResponse', () => {
    const open = () => {
      const guard = new StreamResumptionGuard();
      guard.observeEvent('r', 'e1', false);
      return guard;
    };
    const finished = () => {
      const guard = new StreamResumptionGuard();
      guard.observeEvent('r', 'e1', true);
      return guard;
    };

    const seen = (status: number, extra: Partial<ResumeObservation> = {}): ResumeObservation => ({
      status,
      messages: 0,
      ended: undefined,
      pollingAnnounced: false,
      deadlinePassed: false,
      requestEnded: false,
      ...extra,
    });

    it('2xx with a message on an unfinished request is a valid continuation', () => {
      expect(open().interpretResumeResponse('r', seen(200, { messages: 1 }))).toBe(ResumeDecision.CONTINUATION_VALID);
    });
    it('2xx open and silent has no verdict yet, however long it has been silent', () => {
      expect(open().interpretResumeResponse('r', seen(200))).toBeUndefined();
    });
    it('2xx whose body ended clean without a message is an empty replay, not "nothing missed"', () => {
      expect(open().interpretResumeResponse('r', seen(200, { ended: 'clean' }))).toBe(
        ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY,
      );
      expect(new StreamResumptionGuard().interpretResumeResponse('x', seen(200, { ended: 'clean' }))).toBe(
        ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY,
      );
    });
    it('2xx whose body ended clean after polling was announced is a poll', () => {
      expect(open().interpretResumeResponse('r', seen(200, { ended: 'clean', pollingAnnounced: true }))).toBe(
        ResumeDecision.POLL_NO_ACTION,
      );
    });
    it('2xx still silent when the request deadline passed is an empty replay', () => {
      expect(open().interpretResumeResponse('r', seen(200, { deadlinePassed: true, pollingAnnounced: true }))).toBe(
        ResumeDecision.AMBIGUOUS_EMPTY_REPLAY_ESCALATE_TO_RETRY,
      );
    });
    it('a broken body or a request given up is an error, no action', () => {
      expect(open().interpretResumeResponse('r', seen(200, { ended: 'error' }))).toBe(
        ResumeDecision.RESUME_ERROR_NO_ACTION,
      );
      expect(open().interpretResumeResponse('r', seen(200, { requestEnded: true }))).toBe(
        ResumeDecision.RESUME_ERROR_NO_ACTION,
      );
    });
    it('2xx on a terminal request needs no action, empty or not', () => {
      expect(finished().interpretResumeResponse('r', seen(200, { ended: 'clean' }))).toBe(
        ResumeDecision.TERMINAL_ALREADY_OBSERVED_NO_ACTION,
      );
      expect(finished().interpretResumeResponse('r', seen(200, { messages: 2 }))).toBe(
        ResumeDecision.TERMINAL_ALREADY_OBSERVED_NO_ACTION,
      );
    });
    it.each([400, 404, 409])('%i means the cursor or the session is gone', (status) => {
      expect(open().interpretResumeResponse('r', seen(status))).toBe(ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH);
      expect(finished().interpretResumeResponse('r', seen(status))).toBe(
        ResumeDecision.BUFFER_EVICTED_RETRY_FROM_SCRATCH,
      );
    });
    it.each([0, 301, 401, 405, 500, 503])('%i is an error the client handles itself', (status) => {
      expect(open().interpretResumeResponse('r', seen(status))).toBe(ResumeDecision.RESUME_ERROR_NO_ACTION);
    });
  });

  describe('bounds', () => {
    it('releases a finished request after the retention', () => {
      let now = 0;
      const guard = new StreamResumptionGuard({ retentionMs: 1000, now: () => now });
      guard.observeEvent('r', 'e1', true);
      now = 999;
      expect(guard.isTerminal('r')).toBe(true);
      now = 1000;
      expect(guard.isTerminal('r')).toBe(false);
      expect(guard.stats()).toEqual({ open: 0, finished: 0, evictions: 0 });
    });

    it('sweeps expired finished requests on writes', () => {
      let now = 0;
      const guard = new StreamResumptionGuard({ retentionMs: 10, now: () => now });
      for (let i = 0; i < 100; i++) guard.observeEvent(i, 'e', true);
      now = 10;
      guard.observeEvent('late', 'e', false);
      expect(guard.stats()).toEqual({ open: 1, finished: 0, evictions: 0 });
    });

    it('keeps unfinished requests until the cap, evicting them before finished ones', () => {
      const guard = new StreamResumptionGuard({ maxRequests: 3 });
      guard.observeEvent('done', 'e', true);
      guard.observeEvent('a', 'e', false);
      guard.observeEvent('b', 'e', false);
      guard.observeEvent('c', 'e', false);
      expect(guard.stats()).toEqual({ open: 2, finished: 1, evictions: 1 });
      expect(guard.lastEventId('a')).toBeUndefined();
      expect(guard.isTerminal('done')).toBe(true);
      guard.observeEvent('d', 'e', true);
      guard.observeEvent('f', 'e', true);
      guard.observeEvent('g', 'e', true);
      expect(guard.stats().finished).toBe(3);
      expect(guard.isTerminal('done')).toBe(false);
    });

    it('forgets a request whose id is used again', () => {
      const guard = new StreamResumptionGuard();
      guard.observeEvent('r', 'e', true);
      expect(guard.forget('r')).toBe(true);
      expect(guard.isTerminal('r')).toBe(false);
      expect(guard.forget('r')).toBe(false);
    });

    it('rejects a cap that is not positive', () => {
      expect(() => new StreamResumptionGuard({ maxRequests: 0 })).toThrow(RangeError);
    });

    it('never holds more than the cap, for any sequence of events', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 8 }),
          fc.array(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.boolean(), fc.integer({ min: 0, max: 50 })), {
            maxLength: 200,
          }),
          (cap, steps) => {
            let now = 0;
            const guard = new StreamResumptionGuard({ maxRequests: cap, retentionMs: 100, now: () => now });
            for (const [id, terminal, dt] of steps) {
              now += dt;
              guard.observeEvent(id, `e${now}`, terminal);
              const { open, finished } = guard.stats();
              expect(open + finished).toBeLessThanOrEqual(cap);
            }
          },
        ),
      );
    });
  });

  it('matches a reference model of the seed procedure on any sequence of operations', () => {
    type Op =
      | { kind: 'event'; id: number; eventId: string; terminal: boolean }
      | { kind: 'resume'; id: number }
      | {
          kind: 'interpret';
          id: number;
          status: number;
          messages: number;
          ended: 'clean' | 'error' | undefined;
          polling: boolean;
        };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        kind: fc.constant('event' as const),
        id: fc.integer({ min: 0, max: 4 }),
        eventId: fc.string({ maxLength: 3 }),
        terminal: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('resume' as const), id: fc.integer({ min: 0, max: 4 }) }),
      fc.record({
        kind: fc.constant('interpret' as const),
        id: fc.integer({ min: 0, max: 4 }),
        status: fc.constantFrom(200, 400, 404, 409, 500),
        messages: fc.integer({ min: 0, max: 2 }),
        ended: fc.constantFrom('clean' as const, 'error' as const, undefined),
        polling: fc.boolean(),
      }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const guard = new StreamResumptionGuard();
        const terminal = new Set<number>();
        const cursor = new Map<number, string>();
        for (const o of ops) {
          if (o.kind === 'event') {
            guard.observeEvent(o.id, o.eventId, o.terminal);
            cursor.set(o.id, o.eventId);
            if (o.terminal) terminal.add(o.id);
          } else if (o.kind === 'resume') {
            if (terminal.has(o.id) || !cursor.has(o.id)) {
              expect(() => guard.buildResumeHeaders(o.id, 's')).toThrow(InvalidResumptionError);
            } else {
              expect(guard.buildResumeHeaders(o.id, 's')['Last-Event-ID']).toBe(cursor.get(o.id));
            }
          } else {
            const observation = {
              status: o.status,
              messages: o.messages,
              ended: o.ended,
              pollingAnnounced: o.polling,
              deadlinePassed: false,
              requestEnded: false,
            };
            expect(guard.interpretResumeResponse(o.id, observation)).toBe(expectedDecision(o, terminal.has(o.id)));
          }
        }
      }),
    );
  });
});
