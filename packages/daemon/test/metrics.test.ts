import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  METHOD_INITIALIZE,
  ATTR_MCP_PROTOCOL_VERSION,
  LABEL_ERA,
  LABEL_VERSION,
  METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL,
  METRIC_MCP_REQUESTS_TOTAL,
  ProtocolEra,
  STATELESS_PROTOCOL_VERSION,
  protocolEra,
  FindingKind,
  LABEL_ACCEPTED,
  LABEL_DUPLICATE,
  LABEL_ENDED_BY,
  LABEL_KIND,
  LABEL_OUTCOME,
  LABEL_RESULT,
  LABEL_SERVER,
  LABEL_SERVICE,
  LABEL_SHAPE,
  METRIC_FINDINGS_RETRACTED_TOTAL,
  METRIC_FINDINGS_TOTAL,
  METRIC_LISTENING_RESUMES_TOTAL,
  METRIC_RECONNECT_STORMS_ACTIVE,
  METRIC_RECONNECT_STORMS_ENDED_TOTAL,
  METRIC_RESUME_ATTEMPTS_TOTAL,
  METRIC_RESUME_OUTCOMES_CORRECTED_TOTAL,
  METRIC_SERVER_DEFECTS_TOTAL,
  METRIC_SESSION_REATTACH_TOTAL,
  METRIC_SPANS_RECEIVED_TOTAL,
  METRIC_STATE_EVICTIONS_TOTAL,
  METRIC_TERMINAL_EVENTS_TOTAL,
  METRIC_TRACKED_REQUESTS,
  METRIC_LIVE_TASKS,
  METRIC_TASK_EVICTIONS_TOTAL,
  METRIC_TASK_POLLS_TOTAL,
  METRIC_SESSIONS_STARTED_TOTAL,
  METRIC_TASKS_CREATED_TOTAL,
  TASK_FINDING_KINDS,
  TaskShape,
  FindingRecord,
  ErrorType,
  RequestRecovery,
  ResumeEvidence,
  ResumeOutcome,
  SpanReceivedResult,
  StormEnd,
  StreamKind,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { DetectorMetrics } from '../src/index.js';
import { Detector, type DetectorStats, type Finding } from '@resumewatch/detector';
import { createTask } from '../../detector/test/helpers/task-spans.js';
import { T0, requestEnded, resume, seedScenario, span, terminal, type Req } from '../../detector/test/helpers/spans.js';

function wired(maxServices = 100) {
  const metrics = new DetectorMetrics(maxServices);
  const detector = new Detector({ events: metrics, onFinding: (f) => metrics.finding(f) });
  return { metrics, detector };
}

async function sample(metrics: DetectorMetrics, name: string, accept?: string): Promise<string[]> {
  const { body } = await metrics.render(accept);
  return body
    .split('\n')
    .filter((l) => l.startsWith(name + '{') || l.startsWith(name + ' '))
    .sort();
}

describe('detector metrics: storms ended, server defects, retractions, listening resumes', () => {
  it('counts MCP requests by service and protocol era, from the request spans that say their version', async () => {
    const { metrics, detector } = wired();
    const request = (service: string, version: string | undefined, kind: 2 | 3 = 3) =>
      span(
        'tools/call work',
        T0,
        {
          [ATTR_MCP_METHOD_NAME]: 'tools/call',
          ...(version ? { [ATTR_MCP_PROTOCOL_VERSION]: version } : {}),
        },
        { service, kind },
      );
    for (const s of [
      request('billing', '2025-06-18'),
      request('billing', '2025-11-25'),
      request('billing', '2026-07-28'),
      request('search', '2026-07-28', 2),
      request('search', undefined),
      request('search', 'not-a-date'),
    ])
      detector.ingest(s);
    expect(await sample(metrics, METRIC_MCP_REQUESTS_TOTAL)).toEqual([
      `${METRIC_MCP_REQUESTS_TOTAL}{${LABEL_SERVICE}="billing",${LABEL_ERA}="${ProtocolEra.SESSIONS}"} 2`,
      `${METRIC_MCP_REQUESTS_TOTAL}{${LABEL_SERVICE}="billing",${LABEL_ERA}="${ProtocolEra.STATELESS}"} 1`,
      `${METRIC_MCP_REQUESTS_TOTAL}{${LABEL_SERVICE}="search",${LABEL_ERA}="${ProtocolEra.STATELESS}"} 1`,
    ]);
    expect(protocolEra('2025-11-25')).toBe(ProtocolEra.SESSIONS);
    expect(protocolEra(STATELESS_PROTOCOL_VERSION)).toBe(ProtocolEra.STATELESS);
    expect(protocolEra('2027-01-01')).toBe(ProtocolEra.STATELESS);
    expect(protocolEra(undefined)).toBeUndefined();
  });

  it('counts a refused negotiation apart, by the version asked (capped), and not in its era (issue 31)', async () => {
    const { metrics, detector } = wired();
    const answered = (service: string, method: string, version: string, status: number, error?: string) =>
      span(
        method,
        T0,
        {
          [ATTR_MCP_METHOD_NAME]: method,
          [ATTR_MCP_PROTOCOL_VERSION]: version,
          [ATTR_HTTP_RESPONSE_STATUS_CODE]: status,
          ...(error ? { [ATTR_ERROR_TYPE]: error } : {}),
        },
        { service },
      );
    // A client of a session-era server: its 2026-07-28 probe refused, then initialize and a call accepted.
    for (const s of [
      answered('billing', 'server/discover', STATELESS_PROTOCOL_VERSION, 400, '400'),
      answered('billing', 'initialize', '2025-11-25', 200),
      answered('billing', 'tools/call', '2025-11-25', 200),
      // A call whose session is gone: not accepted, and no version refused.
      answered('billing', 'tools/call', '2025-11-25', 404, '404'),
    ])
      detector.ingest(s);
    // A client asking for ever new versions: 16 keep their label, the rest are `other`.
    for (let i = 0; i < 20; i++) detector.ingest(answered('fuzz', 'initialize', `2030-01-${10 + i}`, 400, '400'));
    expect(await sample(metrics, METRIC_MCP_REQUESTS_TOTAL)).toEqual([
      `${METRIC_MCP_REQUESTS_TOTAL}{${LABEL_SERVICE}="billing",${LABEL_ERA}="${ProtocolEra.SESSIONS}"} 2`,
    ]);
    const refused = await sample(metrics, METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL);
    expect(refused).toContain(
      `${METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL}{${LABEL_SERVICE}="billing",${LABEL_VERSION}="${STATELESS_PROTOCOL_VERSION}"} 1`,
    );
    const fuzz = refused.filter((l) => l.includes('"fuzz"'));
    // 15 of its own (the billing client's version took one of the 16), and `other` for the 5 past the cap.
    expect(fuzz).toHaveLength(16);
    expect(fuzz).toContain(
      `${METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL}{${LABEL_SERVICE}="fuzz",${LABEL_VERSION}="other"} 5`,
    );
  });

  it('counts how each storm ended, once, and no finding for the storm_ended record', async () => {
    const { metrics, detector } = wired();
    for (const s of seedScenario({ session: 's1', request: 1 }, 3)) detector.ingest(s);
    for (const s of seedScenario({ session: 's2', request: 1 }, 3).slice(0, -2)) detector.ingest(s);
    detector.flush();
    expect(await sample(metrics, METRIC_RECONNECT_STORMS_ENDED_TOTAL)).toEqual([
      `${METRIC_RECONNECT_STORMS_ENDED_TOTAL}{${LABEL_SERVICE}="client",${LABEL_ENDED_BY}="${StormEnd.EVICTED}"} 1`,
      `${METRIC_RECONNECT_STORMS_ENDED_TOTAL}{${LABEL_SERVICE}="client",${LABEL_ENDED_BY}="${StormEnd.SHUTDOWN}"} 1`,
    ]);
    expect(await sample(metrics, METRIC_FINDINGS_TOTAL)).toContain(
      `${METRIC_FINDINGS_TOTAL}{${LABEL_KIND}="${FindingKind.RECONNECT_STORM}",${LABEL_SERVICE}="client"} 2`,
    );
    expect(await sample(metrics, METRIC_FINDINGS_TOTAL)).toContain(
      `${METRIC_FINDINGS_TOTAL}{${LABEL_KIND}="${FindingKind.SIGNATURE}",${LABEL_SERVICE}="client"} 2`,
    );
  });

  it('counts server defects per server, capped like services', async () => {
    const { metrics, detector } = wired(2);
    const r: Req = { session: 's', request: 1 };
    for (const [i, server] of ['a.test', 'b.test', 'c.test', 'a.test'].entries()) {
      detector.ingest(terminal({ ...r, request: i }, T0 + i, `G${i}`, true, { foreign: true, server }));
    }
    detector.ingest(terminal(r, T0 + 10, 'H', false, { conflict: true, server: 'b.test' }));
    expect(await sample(metrics, METRIC_SERVER_DEFECTS_TOTAL)).toEqual([
      `${METRIC_SERVER_DEFECTS_TOTAL}{${LABEL_KIND}="${FindingKind.CONFLICTING_TERMINAL}",${LABEL_SERVER}="b.test"} 1`,
      `${METRIC_SERVER_DEFECTS_TOTAL}{${LABEL_KIND}="${FindingKind.FOREIGN_REPLAY}",${LABEL_SERVER}="a.test"} 2`,
      `${METRIC_SERVER_DEFECTS_TOTAL}{${LABEL_KIND}="${FindingKind.FOREIGN_REPLAY}",${LABEL_SERVER}="b.test"} 1`,
      `${METRIC_SERVER_DEFECTS_TOTAL}{${LABEL_KIND}="${FindingKind.FOREIGN_REPLAY}",${LABEL_SERVER}="other"} 1`,
    ]);
  });

  it('caps service labels at maxServices: the first ones keep theirs, the rest count under other', async () => {
    const { metrics, detector } = wired(2);
    for (const [i, service] of ['a', 'b', 'c', 'd', 'a'].entries())
      detector.ingest(terminal({ session: 's', request: i, service }, T0 + i, `T${i}`));
    const line = (service: string, n: number) =>
      `${METRIC_TERMINAL_EVENTS_TOTAL}{${LABEL_SERVICE}="${service}",${LABEL_DUPLICATE}="false"} ${n}`;
    expect(await sample(metrics, METRIC_TERMINAL_EVENTS_TOTAL)).toEqual([line('a', 2), line('b', 1), line('other', 2)]);
    expect(metrics.service('e')).toBe('other');
    expect(metrics.service('b')).toBe('b');
  });

  it('counts retractions by kind and service; the retracted finding stays counted in findings_total', async () => {
    const { metrics, detector } = wired();
    const r: Req = { session: 's', request: 1 };
    detector.ingest(
      resume(r, T0, 'B', 'A', {
        observed: false,
        outcome: ResumeOutcome.EMPTY_REPLAY,
        evidence: ResumeEvidence.BODY_END,
        replayed: 0,
      }),
    );
    detector.ingest(terminal(r, T0 + 100, 'B'));
    expect(await sample(metrics, METRIC_FINDINGS_RETRACTED_TOTAL)).toEqual([
      `${METRIC_FINDINGS_RETRACTED_TOTAL}{${LABEL_KIND}="${FindingKind.AMBIGUOUS_EMPTY_REPLAY}",${LABEL_SERVICE}="client"} 1`,
    ]);
    expect(await sample(metrics, METRIC_FINDINGS_TOTAL)).toEqual([
      `${METRIC_FINDINGS_TOTAL}{${LABEL_KIND}="${FindingKind.AMBIGUOUS_EMPTY_REPLAY}",${LABEL_SERVICE}="client"} 1`,
    ]);
  });

  it('counts a lost result, and the continuation it corrects under the outcome it was counted as', async () => {
    const { metrics, detector } = wired();
    const r: Req = { session: 's', request: 1 };
    detector.ingest(resume(r, T0, 'B', 'A', { observed: false, outcome: ResumeOutcome.CONTINUATION, replayed: 2 }));
    detector.ingest(
      requestEnded(r, T0 + 5000, ErrorType.TIMEOUT, {
        recovery: RequestRecovery.RESUMED,
        outcome: ResumeOutcome.CONTINUATION,
      }),
    );
    expect(await sample(metrics, METRIC_FINDINGS_TOTAL)).toEqual([
      `${METRIC_FINDINGS_TOTAL}{${LABEL_KIND}="${FindingKind.LOST_RESULT}",${LABEL_SERVICE}="client"} 1`,
    ]);
    // Counted as a continuation when it came; the correction says it was not one.
    expect(await sample(metrics, METRIC_RESUME_ATTEMPTS_TOTAL)).toEqual([
      `${METRIC_RESUME_ATTEMPTS_TOTAL}{${LABEL_SERVICE}="client",${LABEL_OUTCOME}="${ResumeOutcome.CONTINUATION}"} 1`,
    ]);
    expect(await sample(metrics, METRIC_RESUME_OUTCOMES_CORRECTED_TOTAL)).toEqual([
      `${METRIC_RESUME_OUTCOMES_CORRECTED_TOTAL}{${LABEL_SERVICE}="client",${LABEL_OUTCOME}="${ResumeOutcome.CONTINUATION}"} 1`,
    ]);
    // A result that came after all: the retraction is counted, the finding stays counted.
    detector.ingest(terminal(r, T0 + 6000, 'B'));
    expect(await sample(metrics, METRIC_FINDINGS_RETRACTED_TOTAL)).toEqual([
      `${METRIC_FINDINGS_RETRACTED_TOTAL}{${LABEL_KIND}="${FindingKind.LOST_RESULT}",${LABEL_SERVICE}="client"} 1`,
    ]);
  });

  it('counts listening-stream resumes apart from request resumes', async () => {
    const { metrics, detector } = wired();
    const r: Req = { session: 's', request: 1 };
    detector.ingest(
      resume(r, T0, 'G1', 'G0', { noRequest: true, streamKind: StreamKind.LISTENING, outcome: ResumeOutcome.POLL }),
    );
    detector.ingest(
      resume(r, T0 + 1, 'G2', 'G1', { noRequest: true, streamKind: StreamKind.LISTENING, outcome: ResumeOutcome.POLL }),
    );
    expect(await sample(metrics, METRIC_LISTENING_RESUMES_TOTAL)).toEqual([
      `${METRIC_LISTENING_RESUMES_TOTAL}{${LABEL_SERVICE}="client",${LABEL_OUTCOME}="${ResumeOutcome.POLL}"} 2`,
    ]);
    expect(await sample(metrics, METRIC_RESUME_ATTEMPTS_TOTAL)).toEqual([]);
    expect(detector.stats().tracked).toBe(0);
  });

  it('reads the plain counts at each scrape, the same in both formats, never counted twice', async () => {
    let stats = { tracked: 7, evictions: 3, tasks: 0, taskEvictions: 0 } as DetectorStats;
    // The detector's state, read at each scrape: storms of a (active) and b (ended) as the detector holds them.
    const metrics = new DetectorMetrics(2, {
      stats: () => stats,
      activeStormsByService: () => new Map([['a', 1]]),
      liveTasksByService: () => new Map(),
    });
    metrics.span(SpanReceivedResult.ACCEPTED);
    metrics.spans(SpanReceivedResult.INVALID, 4);
    metrics.terminal('a', false);
    metrics.terminal('a', true);
    metrics.terminal('b', false);
    metrics.terminal('c', true); // a third service: counted under `other`
    metrics.resume('a', ResumeOutcome.POLL);
    metrics.listeningResume('b', ResumeOutcome.POLL);
    metrics.reattach('a', true);
    metrics.reattach('b', false);
    const expected = (terminalsOfA: number, tracked: number) => ({
      [METRIC_SPANS_RECEIVED_TOTAL]: [
        `${METRIC_SPANS_RECEIVED_TOTAL}{${LABEL_RESULT}="${SpanReceivedResult.ACCEPTED}"} 1`,
        `${METRIC_SPANS_RECEIVED_TOTAL}{${LABEL_RESULT}="${SpanReceivedResult.INVALID}"} 4`,
      ],
      [METRIC_TERMINAL_EVENTS_TOTAL]: [
        `${METRIC_TERMINAL_EVENTS_TOTAL}{${LABEL_SERVICE}="a",${LABEL_DUPLICATE}="false"} ${terminalsOfA}`,
        `${METRIC_TERMINAL_EVENTS_TOTAL}{${LABEL_SERVICE}="a",${LABEL_DUPLICATE}="true"} 1`,
        `${METRIC_TERMINAL_EVENTS_TOTAL}{${LABEL_SERVICE}="b",${LABEL_DUPLICATE}="false"} 1`,
        `${METRIC_TERMINAL_EVENTS_TOTAL}{${LABEL_SERVICE}="other",${LABEL_DUPLICATE}="true"} 1`,
      ],
      [METRIC_RESUME_ATTEMPTS_TOTAL]: [
        `${METRIC_RESUME_ATTEMPTS_TOTAL}{${LABEL_SERVICE}="a",${LABEL_OUTCOME}="${ResumeOutcome.POLL}"} 1`,
      ],
      [METRIC_LISTENING_RESUMES_TOTAL]: [
        `${METRIC_LISTENING_RESUMES_TOTAL}{${LABEL_SERVICE}="b",${LABEL_OUTCOME}="${ResumeOutcome.POLL}"} 1`,
      ],
      [METRIC_SESSION_REATTACH_TOTAL]: [
        `${METRIC_SESSION_REATTACH_TOTAL}{${LABEL_SERVICE}="a",${LABEL_ACCEPTED}="true"} 1`,
        `${METRIC_SESSION_REATTACH_TOTAL}{${LABEL_SERVICE}="b",${LABEL_ACCEPTED}="false"} 1`,
      ],
      [METRIC_RECONNECT_STORMS_ACTIVE]: [
        `${METRIC_RECONNECT_STORMS_ACTIVE}{${LABEL_SERVICE}="a"} 1`,
        `${METRIC_RECONNECT_STORMS_ACTIVE}{${LABEL_SERVICE}="b"} 0`,
        `${METRIC_RECONNECT_STORMS_ACTIVE}{${LABEL_SERVICE}="other"} 0`,
      ],
      [METRIC_TRACKED_REQUESTS]: [`${METRIC_TRACKED_REQUESTS} ${tracked}`],
      [METRIC_STATE_EVICTIONS_TOTAL]: [`${METRIC_STATE_EVICTIONS_TOTAL} 3`],
    });
    const scrape = async (accept?: string) => {
      const out: Record<string, string[]> = {};
      for (const name of Object.keys(expected(0, 0))) out[name] = await sample(metrics, name, accept);
      return out;
    };
    expect(await scrape()).toEqual(expected(1, 7));
    expect(await scrape()).toEqual(expected(1, 7));
    // OpenMetrics renders counters with the same series (its _total suffix is part of the name already).
    expect(await scrape('application/openmetrics-text')).toEqual(expected(1, 7));
    metrics.terminal('a', false);
    stats = { tracked: 8, evictions: 3, tasks: 0, taskEvictions: 0 } as DetectorStats;
    expect(await scrape()).toEqual(expected(2, 8));
    expect(await scrape('application/openmetrics-text')).toEqual(expected(2, 8));
  });
});

describe('detector metrics: MCP tasks', () => {
  /** A finding line of the tasks family as the detector's stream carries it (the metrics read kind, service, trace). */
  const taskFinding = (kind: FindingKind, service: string, record?: FindingRecord): Finding => ({
    kind,
    ...(record ? { record } : {}),
    service,
    session_id: '',
    request_id: '',
    trace_id: '0af7651916cd43dd8448eb211c80319c',
    first_time_unix_ms: T0,
    last_time_unix_ms: T0,
    span_ids: ['b7ad6b7169203331'],
  });

  it('counts tasks created by service and shape, and polls by service, capped like services', async () => {
    const metrics = new DetectorMetrics(2);
    metrics.taskCreated('a', TaskShape.AUGMENTED);
    metrics.taskCreated('a', TaskShape.AUGMENTED);
    metrics.taskCreated('a', TaskShape.EXTENSION);
    metrics.taskCreated('b', TaskShape.EXTENSION);
    metrics.taskCreated('c', TaskShape.AUGMENTED); // a third service: counted under `other`
    for (let i = 0; i < 5; i++) metrics.taskPolled('a');
    metrics.taskPolled('c');
    const created = (service: string, shape: TaskShape, n: number) =>
      `${METRIC_TASKS_CREATED_TOTAL}{${LABEL_SERVICE}="${service}",${LABEL_SHAPE}="${shape}"} ${n}`;
    const polls = (service: string, n: number) => `${METRIC_TASK_POLLS_TOTAL}{${LABEL_SERVICE}="${service}"} ${n}`;
    for (const accept of [undefined, 'application/openmetrics-text']) {
      expect(await sample(metrics, METRIC_TASKS_CREATED_TOTAL, accept)).toEqual([
        created('a', TaskShape.AUGMENTED, 2),
        created('a', TaskShape.EXTENSION, 1),
        created('b', TaskShape.EXTENSION, 1),
        created('other', TaskShape.AUGMENTED, 1),
      ]);
      // b was never polled: no series of it (a poll rate of 0 is no series, as for every other counter).
      expect(await sample(metrics, METRIC_TASK_POLLS_TOTAL, accept)).toEqual([polls('a', 5), polls('other', 1)]);
    }
    // Counted once: a second scrape does not add the counts again.
    metrics.taskPolled('a');
    expect(await sample(metrics, METRIC_TASK_POLLS_TOTAL)).toEqual([polls('a', 6), polls('other', 1)]);
  });

  it('counts the sessions a real detector saw started, by service, each session id once (issue 39)', async () => {
    const metrics = new DetectorMetrics();
    const detector = new Detector({ events: metrics });
    const initialize = (service: string, session: string, spanId: string, kind: 2 | 3) =>
      detector.ingest({
        traceId: 'a'.repeat(32),
        spanId,
        name: METHOD_INITIALIZE,
        kind,
        startTimeUnixMs: 1_000,
        endTimeUnixMs: 1_001,
        service,
        attributes: { [ATTR_MCP_METHOD_NAME]: METHOD_INITIALIZE, [ATTR_MCP_SESSION_ID]: session },
      });
    initialize('a', 's1', '1'.repeat(16), 3);
    initialize('a', 's1', '2'.repeat(16), 2); // the server's span of the same session: once
    initialize('a', 's2', '3'.repeat(16), 3);
    initialize('b', 's3', '4'.repeat(16), 3);
    expect(await sample(metrics, METRIC_SESSIONS_STARTED_TOTAL)).toEqual([
      `${METRIC_SESSIONS_STARTED_TOTAL}{${LABEL_SERVICE}="a"} 2`,
      `${METRIC_SESSIONS_STARTED_TOTAL}{${LABEL_SERVICE}="b"} 1`,
    ]);
  });

  it('reads live tasks by service and task evictions from the detector at each scrape', async () => {
    let stats = { tracked: 0, evictions: 0, tasks: 12, taskEvictions: 0 } as DetectorStats;
    let live = new Map([
      ['a', 10],
      ['b', 2],
    ]);
    const metrics = new DetectorMetrics(2, {
      stats: () => stats,
      activeStormsByService: () => new Map(),
      liveTasksByService: () => live,
    });
    const gauge = (service: string, n: number) => `${METRIC_LIVE_TASKS}{${LABEL_SERVICE}="${service}"} ${n}`;
    expect(await sample(metrics, METRIC_LIVE_TASKS)).toEqual([gauge('a', 10), gauge('b', 2)]);
    expect(await sample(metrics, METRIC_TASK_EVICTIONS_TOTAL)).toEqual([`${METRIC_TASK_EVICTIONS_TOTAL} 0`]);
    // b's tasks ended (its series stays, at 0); a third and a fourth service past the cap of 2 add up under `other`.
    stats = { ...stats, tasks: 10_005, taskEvictions: 3 };
    live = new Map([
      ['a', 10_000],
      ['c', 4],
      ['d', 1],
    ]);
    for (const accept of [undefined, 'application/openmetrics-text']) {
      expect(await sample(metrics, METRIC_LIVE_TASKS, accept)).toEqual([
        gauge('a', 10_000),
        gauge('b', 0),
        gauge('other', 5),
      ]);
      expect(await sample(metrics, METRIC_TASK_EVICTIONS_TOTAL, accept)).toEqual([`${METRIC_TASK_EVICTIONS_TOTAL} 3`]);
    }
  });

  it("reads a real detector's live tasks by the service that created them, and a service with none as 0", async () => {
    const detector = new Detector({});
    const metrics = new DetectorMetrics(2, {
      stats: () => detector.stats(),
      activeStormsByService: () => detector.activeStormsByService(),
      liveTasksByService: () => detector.liveTasksByService(),
    });
    // No service seen yet: no series (as for the active storms); the evictions counter from the first scrape.
    expect(await sample(metrics, METRIC_LIVE_TASKS)).toEqual([]);
    expect(await sample(metrics, METRIC_TASK_EVICTIONS_TOTAL)).toEqual([`${METRIC_TASK_EVICTIONS_TOTAL} 0`]);
    metrics.terminal('quiet', false);
    for (const [i, service] of ['billing', 'billing', 'docs'].entries())
      detector.ingest(createTask(T0 + i, `t${i}`, { service }));
    expect((await sample(metrics, METRIC_LIVE_TASKS)).sort()).toEqual([
      `${METRIC_LIVE_TASKS}{${LABEL_SERVICE}="billing"} 2`,
      `${METRIC_LIVE_TASKS}{${LABEL_SERVICE}="other"} 1`,
      `${METRIC_LIVE_TASKS}{${LABEL_SERVICE}="quiet"} 0`,
    ]);
  });

  it('counts each task finding kind, with its trace as exemplar, and the retraction of a lost task result', async () => {
    const metrics = new DetectorMetrics();
    for (const kind of TASK_FINDING_KINDS) metrics.finding(taskFinding(kind, 'a'));
    metrics.finding(taskFinding(FindingKind.LOST_TASK_RESULT, 'a', FindingRecord.RETRACTION));
    expect(await sample(metrics, METRIC_FINDINGS_TOTAL)).toEqual(
      [...TASK_FINDING_KINDS]
        .sort()
        .map((kind) => `${METRIC_FINDINGS_TOTAL}{${LABEL_KIND}="${kind}",${LABEL_SERVICE}="a"} 1`),
    );
    expect(await sample(metrics, METRIC_FINDINGS_RETRACTED_TOTAL)).toEqual([
      `${METRIC_FINDINGS_RETRACTED_TOTAL}{${LABEL_KIND}="${FindingKind.LOST_TASK_RESULT}",${LABEL_SERVICE}="a"} 1`,
    ]);
    const openMetrics = await sample(metrics, METRIC_FINDINGS_TOTAL, 'application/openmetrics-text');
    expect(openMetrics.filter((l) => l.includes(`${LABEL_KIND}="${FindingKind.TASK_POLL_STORM}"`))).toEqual([
      expect.stringMatching(/ 1 # \{trace_id="0af7651916cd43dd8448eb211c80319c"\} 1/),
    ]);
  });
});
