import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_SESSION_ID,
  ErrorType,
  FINDING_KINDS,
  SPAN_LISTENING_REFUSED,
  FindingKind,
  RequestRecovery,
  ResumeOutcome,
} from '@resumewatch/semconv';
import type { Finding, SpanRecord } from '@resumewatch/detector';
import { describe, expect, it } from 'vitest';
import { configWith } from '../src/doors/writing-pipeline.js';
import { Evidence } from '../src/page/evidence.js';
import { findingStory } from '../src/page/finding-story.js';
import { findingTimeline } from '../src/page/page-data.js';
import { RequestEnd, drawTimeline } from '../src/page/timeline-view.js';
import { EventType, timelineEvent } from '../src/page/timeline-event.js';
import { T0, requestEnded, resume, span } from '../../detector/test/helpers/spans.js';

// Every finding's story in one sentence, and each request's life drawn as a bar with its end marked.

function findingOf(kind: FindingKind, extra: Partial<Finding> = {}): Finding {
  return {
    kind,
    service: 'client',
    session_id: 's-1',
    request_id: '7',
    trace_id: 'a'.repeat(32),
    first_time_unix_ms: T0,
    last_time_unix_ms: T0 + 5000,
    span_ids: [],
    attempts: 12,
    duplicates: 2,
    status_code: 404,
    ...extra,
  };
}

function evidenceOf(spans: readonly SpanRecord[], finding: Finding): Evidence {
  const evidence = new Evidence(configWith());
  spans.forEach((s) => evidence.observe(s));
  evidence.reported(finding);
  return evidence;
}

describe("every finding's story", () => {
  it.each(FINDING_KINDS)('%s has its own sentence, with its times', (kind) => {
    const story = findingStory(findingOf(kind, { task_id: 'task-1', polls: 9 }));
    expect(story).toMatch(/^[A-Z].*[.]$/);
    // The times of its evidence, as a time of day.
    expect(story).toMatch(/\d\d:\d\d:\d\d\.\d{3} UTC/);
    const others = FINDING_KINDS.filter((k) => k !== kind).map((k) =>
      findingStory(findingOf(k, { task_id: 'task-1' })),
    );
    expect(others).not.toContain(story);
  });

  it('a loop tells its count, its session and its status', () => {
    const dead = findingStory(findingOf(FindingKind.DEAD_SESSION_LOOP, { attempts: 25, status_code: 404 }));
    expect(dead).toMatch(
      /25 requests on session s-1 between .* \(5 s\), each refused with 404, and initialized no new session/,
    );
    const listening = findingStory(findingOf(FindingKind.LISTENING_STREAM_LOOP, { attempts: 48, status_code: 405 }));
    expect(listening).toMatch(/listening stream on session s-1 48 times .* each answered 405/);
  });
});

describe("a request's life", () => {
  const r = { session: 's-1', request: 7 };

  it.each([
    [ErrorType.ABORTED, RequestEnd.ABORTED, 'abort'],
    [ErrorType.TIMEOUT, RequestEnd.TIMEOUT, 'deadline (timeout)'],
    [ErrorType.STREAM_BROKEN, RequestEnd.STREAM_BROKEN, 'broken stream'],
    [ErrorType.CANCELLED, RequestEnd.CANCELLED, 'cancel'],
    [undefined, RequestEnd.RESULT, 'its result'],
    [ErrorType.TOOL_ERROR, RequestEnd.RESULT, 'its result'],
  ])('a request span ended with error.type %s is a bar marked %s', (error, ended, said) => {
    const call = requestEnded(r, T0 + 5000, error, { start: T0 });
    const tl = drawTimeline({ events: [timelineEvent(call)], dropped: 0 });
    const bar = tl.events.find((e) => e.type === EventType.CALL)!;
    expect([bar.start, bar.end]).toEqual([T0, T0 + 5000]);
    expect(bar.ended).toBe(ended);
    expect(bar.ended_said).toBe(said);
  });

  it("lost_result: the request's 5 s of life, its end marked aborted, and its story", () => {
    const spans = [
      resume(r, T0 + 1000, 'st-2', 'st-1', { outcome: ResumeOutcome.EMPTY_REPLAY }),
      requestEnded(r, T0 + 5000, ErrorType.ABORTED, { start: T0, recovery: RequestRecovery.RESUMED }),
    ];
    const finding = findingOf(FindingKind.LOST_RESULT, {
      request_end: ErrorType.ABORTED,
      recovery: RequestRecovery.RESUMED,
      outcome: ResumeOutcome.EMPTY_REPLAY,
      first_time_unix_ms: T0,
    });
    const tl = findingTimeline(finding, evidenceOf(spans, finding))!;
    const call = tl.events.find((e) => e.type === EventType.CALL)!;
    expect(call.end - call.start).toBe(5000);
    expect(call.ended).toBe(RequestEnd.ABORTED);
    expect(tl.story).toBe(
      'The tools/call request 7 lived 5 s, from 22:13:20.000 UTC to 22:13:25.000 UTC, and ended aborted by the client ' +
        'without its result; its stream had ended without the result and the client resumed it (empty_replay): ' +
        'the result never reached the application.',
    );
  });
});

describe("a loop's timeline: its refused attempts", () => {
  /** Request `n` on the dead session s-1, answered 404. */
  const refusedRequest = (n: number): SpanRecord => {
    const s = requestEnded({ session: 's-1', request: n }, T0 + n * 100 + 20, '404', { start: T0 + n * 100 });
    return { ...s, attributes: { ...s.attributes, [ATTR_HTTP_RESPONSE_STATUS_CODE]: 404 } };
  };
  const refusedGet = (n: number): SpanRecord =>
    span(SPAN_LISTENING_REFUSED, T0 + n * 50, { [ATTR_MCP_SESSION_ID]: 's-1', [ATTR_HTTP_RESPONSE_STATUS_CODE]: 405 });

  it('dead_session_loop: each refused request a bar on one lane, its end marked by the refusal', () => {
    const spans = [1, 2, 3, 4, 5].map(refusedRequest).concat([refusedGet(1)]);
    const finding = findingOf(FindingKind.DEAD_SESSION_LOOP, { attempts: 5, request_id: '5' });
    const tl = findingTimeline(finding, evidenceOf(spans, finding))!;
    expect(tl.lanes.map((l) => l.label)).toEqual(['refused requests']);
    expect(tl.events.map((e) => e.type)).toEqual(Array(5).fill(EventType.CALL));
    expect(tl.events.map((e) => e.ended_said)).toEqual(Array(5).fill('refused 404'));
    expect(tl.story).toMatch(/^The client sent 5 requests on session s-1/);
  });

  it('listening_stream_loop: each refused GET where it happened, none of the requests', () => {
    const spans = [1, 2, 3, 4, 5, 6].map(refusedGet).concat([refusedRequest(1)]);
    const finding = findingOf(FindingKind.LISTENING_STREAM_LOOP, { attempts: 6, status_code: 405, request_id: '' });
    const tl = findingTimeline(finding, evidenceOf(spans, finding))!;
    expect(tl.lanes.map((l) => l.label)).toEqual(['listening stream opens']);
    expect(tl.events.map((e) => e.start - T0)).toEqual([50, 100, 150, 200, 250, 300]);
    expect(new Set(tl.events.map((e) => e.type))).toEqual(new Set([EventType.LISTENING_REFUSED]));
    expect(tl.story).toMatch(/6 times .* each answered 405: a listening-stream loop/);
  });
});
