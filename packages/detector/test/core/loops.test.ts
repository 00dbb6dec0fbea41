import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_MCP_CLIENT_INSTANCE_ID,
  ATTR_MCP_STREAM_RETRY_MS,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_KIND,
  FindingKind,
  MCP_METHOD_TOOLS_CALL,
  METHOD_INITIALIZE,
  SPAN_LISTENING_REFUSED,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
  StreamKind,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import {
  Detector,
  StateMismatchError,
  type AttributeValue,
  type DetectorInit,
  type DetectorState,
  type Finding,
  type SpanRecord,
} from '../../src/index.js';
import { T0, span } from '../helpers/spans.js';

const LOOPS: readonly string[] = [FindingKind.DEAD_SESSION_LOOP, FindingKind.LISTENING_STREAM_LOOP];

const NO_EVENTS = {
  span() {},
  terminal() {},
  resume() {},
  reattach() {},
  stormFinalized() {},
  serverDefect() {},
  listeningResume() {},
  request() {},
  negotiationRefused() {},
};

function run(spans: SpanRecord[], init: DetectorInit = {}): { findings: Finding[]; started: string[] } {
  const findings: Finding[] = [];
  const started: string[] = [];
  const detector = new Detector({
    ...init,
    onFinding: (f) => void (LOOPS.includes(f.kind) && findings.push(f)),
    events: {
      span() {},
      terminal() {},
      resume() {},
      reattach() {},
      stormFinalized() {},
      serverDefect() {},
      listeningResume() {},
      request() {},
      negotiationRefused() {},
      sessionStarted: (service) => void started.push(service),
    },
  });
  for (const s of spans) detector.ingest(s);
  return { findings, started };
}

/** A client's request span on `session`, answered `status`. */
function call(
  t: number,
  session: string | undefined,
  status: number,
  id: number,
  method: string = MCP_METHOD_TOOLS_CALL,
): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_METHOD_NAME]: method,
    [ATTR_JSONRPC_REQUEST_ID]: id,
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: status,
  };
  if (session !== undefined) attrs[ATTR_MCP_SESSION_ID] = session;
  if (status >= 400) attrs[ATTR_ERROR_TYPE] = String(status);
  return span('mcp.client', t, attrs);
}

/** An initialize answered with `session`. */
function initialize(t: number, session: string, id: number): SpanRecord {
  const s = call(t, undefined, 200, id, METHOD_INITIALIZE);
  return { ...s, attributes: { ...s.attributes, [ATTR_MCP_SESSION_ID]: session } };
}

/** A GET listening stream's reattach span, answered `status`. */
function listeningGet(t: number, session: string, status: number): SpanRecord {
  return span(SPAN_SESSION_REATTACH, t, {
    [ATTR_HTTP_REQUEST_METHOD]: 'GET',
    [ATTR_MCP_SESSION_ID]: session,
    [ATTR_MCP_STREAM_KIND]: StreamKind.LISTENING,
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: status,
    [ATTR_MCP_REATTACH_ACCEPTED]: status >= 200 && status < 300,
  });
}

/** A resume of the listening stream that lasted `ms` and carried `events` events. */
function listeningResume(t: number, session: string, ms: number, events: number): SpanRecord {
  const s = span(SPAN_STREAM_RESUME, t, {
    [ATTR_HTTP_REQUEST_METHOD]: 'GET',
    [ATTR_MCP_SESSION_ID]: session,
    [ATTR_MCP_STREAM_KIND]: StreamKind.LISTENING,
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
    [ATTR_MCP_RESUME_LAST_EVENT_ID]: 'e1',
    [ATTR_MCP_RESUME_REPLAYED_EVENTS]: events,
  });
  s.endTimeUnixMs = t + ms;
  return s;
}

describe('dead_session_loop', () => {
  it('is reported once when requests on a refused session id reach the threshold (404)', () => {
    const spans = [initialize(T0, 's1', 0)];
    for (let i = 1; i <= 10; i++) spans.push(call(T0 + i * 100, 's1', 404, i));
    const { findings } = run(spans);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      kind: FindingKind.DEAD_SESSION_LOOP,
      service: 'client',
      session_id: 's1',
      attempts: 5,
      status_code: 404,
      first_time_unix_ms: T0 + 100,
    });
    expect(findings[0]!.span_ids).toEqual(spans.slice(1, 6).map((s) => s.spanId));
  });

  it('counts 400, the answer some servers give for a session they do not know', () => {
    const spans = Array.from({ length: 5 }, (_, i) => call(T0 + i * 100, 's1', 400, i));
    expect(run(spans).findings.map((f) => [f.kind, f.status_code])).toEqual([[FindingKind.DEAD_SESSION_LOOP, 400]]);
  });

  it('counts refused reattach spans of request streams', () => {
    const spans = Array.from({ length: 5 }, (_, i) => {
      const s = span(SPAN_SESSION_REATTACH, T0 + i * 100, {
        [ATTR_MCP_SESSION_ID]: 's1',
        [ATTR_JSONRPC_REQUEST_ID]: i,
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: 404,
        [ATTR_MCP_REATTACH_ACCEPTED]: false,
      });
      return s;
    });
    expect(run(spans).findings.map((f) => f.kind)).toEqual([FindingKind.DEAD_SESSION_LOOP]);
  });

  it('healthy twin: a client that re-initializes after one refusal makes no finding', () => {
    const spans = [initialize(T0, 's1', 0), call(T0 + 100, 's1', 404, 1), initialize(T0 + 200, 's2', 2)];
    for (let i = 3; i <= 12; i++) spans.push(call(T0 + i * 100, 's2', 200, i));
    expect(run(spans).findings).toEqual([]);
  });

  it('an initialize between refusals starts the count over', () => {
    const spans = [
      ...[1, 2, 3, 4].map((i) => call(T0 + i * 100, 's1', 404, i)),
      initialize(T0 + 450, 's2', 5),
      ...[6, 7, 8, 9].map((i) => call(T0 + i * 100, 's1', 404, i)),
    ];
    expect(run(spans).findings).toEqual([]);
  });

  it('a 2xx on the session between 400s says it lives: those 400s were about the requests', () => {
    const spans = [
      ...[1, 2, 3].map((i) => call(T0 + i * 100, 's1', 400, i)),
      call(T0 + 350, 's1', 200, 4),
      ...[5, 6, 7, 8].map((i) => call(T0 + i * 100, 's1', 400, i)),
    ];
    expect(run(spans).findings).toEqual([]);
  });

  it('refusals spread beyond the window make no finding; the threshold is an option', () => {
    const slow = Array.from({ length: 10 }, (_, i) => call(T0 + i * 20_000, 's1', 404, i));
    expect(run(slow).findings).toEqual([]);
    const two = [call(T0, 's1', 404, 1), call(T0 + 1, 's1', 404, 2)];
    expect(run(two, { sessionLoopThreshold: 2 }).findings).toHaveLength(1);
  });

  it('the client and the server seeing the same refusals count them once', () => {
    const spans: SpanRecord[] = [];
    for (let i = 0; i < 4; i++) {
      spans.push(call(T0 + i * 100, 's1', 404, i));
      const server = call(T0 + i * 100, 's1', 404, i);
      server.kind = 2;
      spans.push(server);
    }
    expect(run(spans).findings).toEqual([]);
  });
});

describe('listening_stream_loop', () => {
  it('is reported when GETs answered 405 are re-opened beyond the threshold', () => {
    const spans = Array.from({ length: 48 }, (_, i) => listeningGet(T0 + i * 50, 's1', 405));
    const { findings } = run(spans);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      kind: FindingKind.LISTENING_STREAM_LOOP,
      session_id: 's1',
      attempts: 6,
      status_code: 405,
    });
  });

  it('counts the refused-GET spans the instrumentation makes for a GET that is no reattach, each span once', () => {
    const refused = (t: number): SpanRecord =>
      span(SPAN_LISTENING_REFUSED, t, {
        [ATTR_HTTP_REQUEST_METHOD]: 'GET',
        [ATTR_MCP_SESSION_ID]: 's1',
        [ATTR_MCP_STREAM_KIND]: StreamKind.LISTENING,
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: 405,
      });
    const spans = Array.from({ length: 5 }, (_, i) => refused(T0 + i * 10));
    // Delivered twice (an exporter's retry): still five, at the threshold, no loop.
    expect(run([...spans, ...spans]).findings).toEqual([]);
    expect(run([...spans, refused(T0 + 60)]).findings.map((f) => f.kind)).toEqual([FindingKind.LISTENING_STREAM_LOOP]);
  });

  it('is reported when listening streams close at once with no event and are re-opened', () => {
    const spans = Array.from({ length: 6 }, (_, i) => listeningResume(T0 + i * 100, 's1', 10, 0));
    expect(run(spans).findings.map((f) => f.kind)).toEqual([FindingKind.LISTENING_STREAM_LOOP]);
  });

  it('healthy twin: a client that stops after one 405 makes no finding', () => {
    expect(run([listeningGet(T0, 's1', 405)]).findings).toEqual([]);
  });

  it('healthy twin: listening streams that live, or carry events, make no finding', () => {
    const long = Array.from({ length: 10 }, (_, i) => listeningResume(T0 + i * 10_000, 's1', 5_000, 0));
    const busy = Array.from({ length: 10 }, (_, i) => listeningResume(T0 + i * 100, 's2', 10, 3));
    expect(run([...long, ...busy]).findings).toEqual([]);
  });

  it('exactly the threshold of re-opens is no loop; one more is', () => {
    const six = Array.from({ length: 6 }, (_, i) => listeningGet(T0 + i * 100, 's1', 405));
    expect(run(six.slice(0, 5)).findings).toEqual([]);
    expect(run(six).findings).toHaveLength(1);
  });

  it('counts a plain GET whose stream the server ended at once with no event (its refused span, 200)', () => {
    const closed = (t: number): SpanRecord => ({
      ...refusedGet(t, 200, { [ATTR_MCP_SESSION_ID]: 's1' }),
      endTimeUnixMs: t + 5,
    });
    const spans = Array.from({ length: 6 }, (_, i) => closed(T0 + i * 50));
    expect(run(spans).findings).toMatchObject([
      { kind: FindingKind.LISTENING_STREAM_LOOP, session_id: 's1', status_code: 200 },
    ]);
    // A stream that lived past "at once" was offered: no loop.
    const lived = spans.map((s) => ({ ...s, endTimeUnixMs: s.startTimeUnixMs + 5_000 }));
    expect(run(lived).findings).toEqual([]);
  });
});

/** The instrumentation's span of a refused plain GET of the listening stream (405, or 200 closed at once). */
function refusedGet(t: number, status: number, who: Record<string, AttributeValue>): SpanRecord {
  return span(SPAN_LISTENING_REFUSED, t, {
    [ATTR_HTTP_REQUEST_METHOD]: 'GET',
    [ATTR_MCP_STREAM_KIND]: StreamKind.LISTENING,
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: status,
    ...who,
  });
}

describe('listening_stream_loop of a stateless server (no session): keyed by client', () => {
  const byAddress = (address: string) => ({ [ATTR_CLIENT_ADDRESS]: address });
  const byInstance = (id: string) => ({ [ATTR_MCP_CLIENT_INSTANCE_ID]: id });

  it('is reported per client.address (the gateway), the client said on the finding', () => {
    const spans = Array.from({ length: 6 }, (_, i) => refusedGet(T0 + i * 50, 405, byAddress('10.0.0.7')));
    expect(run(spans).findings).toMatchObject([
      { kind: FindingKind.LISTENING_STREAM_LOOP, session_id: '', client: '10.0.0.7', attempts: 6, status_code: 405 },
    ]);
  });

  it('is reported per instrumented client (mcp.client.instance_id)', () => {
    const spans = Array.from({ length: 6 }, (_, i) => refusedGet(T0 + i * 50, 405, byInstance('a1b2c3d4e5f6')));
    expect(run(spans).findings).toMatchObject([{ client: 'a1b2c3d4e5f6', session_id: '' }]);
  });

  it('healthy twins: many clients that each stop after one 405 are no loop, nor a span that names no client', () => {
    const many = Array.from({ length: 20 }, (_, i) => refusedGet(T0 + i * 10, 405, byAddress(`10.0.0.${i}`)));
    const nobody = Array.from({ length: 20 }, (_, i) => refusedGet(T0 + i * 10, 405, {}));
    expect(run([...many, ...nobody]).findings).toEqual([]);
  });

  it("counts a stateless server's listening resumes that replayed nothing, keyed by client", () => {
    const resume = (t: number): SpanRecord => {
      const s = listeningResume(t, '', 10, 0);
      const { [ATTR_MCP_SESSION_ID]: _, ...attributes } = s.attributes;
      return { ...s, attributes: { ...attributes, ...byInstance('feedfacecafe') } };
    };
    const spans = Array.from({ length: 6 }, (_, i) => resume(T0 + i * 50));
    expect(run(spans).findings).toMatchObject([{ kind: FindingKind.LISTENING_STREAM_LOOP, client: 'feedfacecafe' }]);
    // And in the listening resumes metric, as a session's are.
    const resumes: string[] = [];
    const detector = new Detector({
      events: { ...NO_EVENTS, listeningResume: (service) => void resumes.push(service) },
    });
    for (const s of spans) detector.ingest(s);
    expect(resumes).toHaveLength(6);
  });
});

describe("listening_stream_loop and the server's retry: pace", () => {
  /** A stream closed at once that announced `retry` ms, re-opened `gap` ms after each end. */
  function paced(retry: number, gap: number, count = 10): SpanRecord[] {
    const spans: SpanRecord[] = [];
    let t = T0;
    for (let i = 0; i < count; i++) {
      const s = refusedGet(t, 200, { [ATTR_MCP_SESSION_ID]: 's1', [ATTR_MCP_STREAM_RETRY_MS]: retry });
      s.endTimeUnixMs = t + 5;
      spans.push(s);
      t = s.endTimeUnixMs + gap;
    }
    return spans;
  }

  it('a client that re-opens at or after the announced retry is healthy', () => {
    expect(run(paced(200, 200)).findings).toEqual([]);
    expect(run(paced(200, 350)).findings).toEqual([]);
  });

  it('a client that re-opens sooner than the announced retry loops', () => {
    expect(run(paced(200, 150)).findings).toMatchObject([{ kind: FindingKind.LISTENING_STREAM_LOOP, attempts: 6 }]);
  });

  it('a stream that announced no retry gives no pace to keep', () => {
    const spans = paced(200, 300).map((s) => {
      const { [ATTR_MCP_STREAM_RETRY_MS]: _, ...attributes } = s.attributes;
      return { ...s, attributes };
    });
    expect(run(spans).findings).toHaveLength(1);
  });
});

describe('sessions started', () => {
  it('counts each answered initialize once per session id, and none refused', () => {
    const server = initialize(T0, 's1', 0);
    server.kind = 2;
    const refused = call(T0 + 1, undefined, 400, 9, METHOD_INITIALIZE);
    const { started, findings } = run([
      initialize(T0, 's1', 0),
      server,
      initialize(T0 + 10, 's2', 1),
      initialize(T0 + 20, 's3', 2),
      refused,
    ]);
    expect(started).toEqual(['client', 'client', 'client']);
    expect(findings).toEqual([]);
  });
});

describe('state', () => {
  const LOOP_OPTIONS = [
    'sessionLoopThreshold',
    'sessionLoopWindowMs',
    'listeningLoopThreshold',
    'listeningLoopWindowMs',
  ];

  it('a state written before the loops family (none of its options) still loads, and the rules run after it', () => {
    const before = new Detector();
    before.ingest(call(T0, 's0', 200, 1));
    const state = before.exportState() as unknown as Record<string, unknown>;
    const options = state.options as Record<string, unknown>;
    for (const name of LOOP_OPTIONS) delete options[name];
    const findings: Finding[] = [];
    const after = new Detector({ onFinding: (f) => void (LOOPS.includes(f.kind) && findings.push(f)) });
    after.importState(state as unknown as DetectorState);
    for (let i = 0; i < 5; i++) after.ingest(call(T0 + 10 + i, 's1', 404, 10 + i));
    expect(findings.map((f) => f.kind)).toEqual([FindingKind.DEAD_SESSION_LOOP]);
  });

  it('refuses a state kept with another loop option', () => {
    const state = new Detector().exportState();
    state.options.sessionLoopThreshold = 7;
    expect(() => new Detector().importState(state)).toThrow(StateMismatchError);
  });
});
