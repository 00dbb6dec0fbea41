import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_KIND,
  ErrorType,
  GuardAction,
  RequestRecovery,
  ResumeEvidence,
  ResumeOutcome,
  StreamKind,
} from '@resumewatch/semconv';
import type { SpanRecord } from '@resumewatch/detector';
import type { OtlpBatch } from './otlp-recording.js';
import { otlpJson } from '../../../detector/test/helpers/otlp.js';
import { createHash } from 'node:crypto';
import {
  T0,
  modernRequest,
  reattach,
  requestEnded as endedWithoutResult,
  resume,
  seedScenario,
  shuffle,
  span,
  terminal,
  type Req,
} from '../../../detector/test/helpers/spans.js';

/**
 * A sequence of OTLP export requests that one detector receives in order. Its findings are those of its
 * services: `name` itself or `name/<part>`, so that sequences can share one `serve` without mixing.
 */
export interface Sequence {
  name: string;
  batches: OtlpBatch[];
}

export const belongsTo = (service: string, sequence: string): boolean =>
  service === sequence || service.startsWith(`${sequence}/`);

/** Spans per export request of the corpus: small, so that a kill falls between any two of a request's spans. */
const SPANS_PER_BATCH = 2;

function batches(service: string, spans: SpanRecord[]): OtlpBatch[] {
  const out: OtlpBatch[] = [];
  for (let i = 0; i < spans.length; i += SPANS_PER_BATCH) {
    const body = Buffer.from(JSON.stringify(otlpJson(spans.slice(i, i + SPANS_PER_BATCH), service)));
    out.push({ body, contentType: 'application/json' });
  }
  return out;
}

const withAttributes = (s: SpanRecord, attributes: SpanRecord['attributes']): SpanRecord => ({
  ...s,
  attributes: { ...s.attributes, ...attributes },
});

/** The seed loop that never ends: terminals replayed on every new stream, no eviction (its storm is open at the end). */
function endlessLoop(r: Req, loops: number): SpanRecord[] {
  return seedScenario(r, loops).slice(0, -2);
}

/**
 * Spans of GETs that each yield a resume span and a reattach span, the reattach spans `lag` GETs late:
 * a cut falls between the two spans of up to `lag` GETs (at least a storm's worth, were their reattach
 * spans taken for attempts after a restart).
 */
function lagged(resumes: SpanRecord[], reattaches: SpanRecord[], lag: number): SpanRecord[] {
  const out: SpanRecord[] = [];
  for (let i = 0; i < resumes.length + lag; i++) {
    if (i < resumes.length) out.push(resumes[i]!);
    if (i >= lag) out.push(reattaches[i - lag]!);
  }
  return out;
}

/** Reattach spans this many GETs behind their resume spans. */
const LAG = 4;

/** SEP-1699 polls, each a reattach and a resume of one GET, whose two spans arrive apart. */
function polls(r: Req, count: number): SpanRecord[] {
  const resumes: SpanRecord[] = [];
  const reattaches: SpanRecord[] = [];
  let prev = 'A';
  for (let i = 1; i <= count; i++) {
    const t = T0 + i * 300;
    const stream = `P${i}`;
    resumes.push(
      resume(r, t, stream, prev, {
        observed: false,
        outcome: ResumeOutcome.POLL,
        evidence: ResumeEvidence.BODY_END,
        replayed: 0,
      }),
    );
    reattaches.push(reattach(r, t, stream, prev));
    prev = stream;
  }
  const out = lagged(resumes, reattaches, LAG);
  const t = T0 + (count + 1) * 300;
  out.push(
    resume(r, t, 'LAST', prev, {
      observed: false,
      outcome: ResumeOutcome.CONTINUATION,
      evidence: ResumeEvidence.MESSAGE,
      replayed: 1,
      replayedTerminal: true,
    }),
    terminal(r, t + 10, 'LAST'),
    reattach(r, t, 'LAST', prev),
  );
  return out;
}

/** A quiet stream cut again and again before its result: continuations, their reattach spans late. */
function continuations(r: Req, cuts: number): SpanRecord[] {
  const resumes: SpanRecord[] = [];
  const reattaches: SpanRecord[] = [];
  for (let i = 1; i <= cuts; i++) {
    const t = T0 + i * 1000;
    resumes.push(
      resume(r, t, `Q${i}`, `Q${i - 1}`, {
        observed: false,
        outcome: ResumeOutcome.CONTINUATION,
        evidence: ResumeEvidence.MESSAGE,
        replayed: 1,
      }),
    );
    reattaches.push(reattach(r, t, `Q${i}`, `Q${i - 1}`));
  }
  return [...lagged(resumes, reattaches, LAG), terminal(r, T0 + cuts * 1000 + 500, `Q${cuts}`)];
}

/** The client's request span, from the call at T0 - 1 s to `end`, ended with `error` (a give-up, or a tool error). */
function requestEnded(r: Req, end: number, error: string): SpanRecord {
  const call = span(
    'tools/call stream_progress',
    T0 - 1000,
    {
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_MCP_SESSION_ID]: r.session,
      [ATTR_JSONRPC_REQUEST_ID]: r.request,
      [ATTR_ERROR_TYPE]: error,
    },
    { service: r.service },
  );
  return { ...call, endTimeUnixMs: end };
}

const rejected = (r: Req, t: number, stream: string, status = 409): SpanRecord =>
  resume(r, t, stream, 'A', {
    observed: false,
    outcome: ResumeOutcome.CURSOR_REJECTED,
    evidence: ResumeEvidence.STATUS,
    status,
    replayed: 0,
  });

const sessionLost = (r: Req, t: number, stream: string): SpanRecord =>
  resume(r, t, stream, 'A', { observed: false, outcome: ResumeOutcome.SESSION_NOT_FOUND, status: 404, replayed: 0 });

const continued = (r: Req, t: number, stream: string): SpanRecord =>
  resume(r, t, stream, 'A', {
    observed: false,
    outcome: ResumeOutcome.CONTINUATION,
    evidence: ResumeEvidence.MESSAGE,
    replayed: 1,
  });

/** Every sequence of the corpus, by name: its spans, in the order the detector receives them. */
function corpusSpans(): Record<string, (service: string) => SpanRecord[]> {
  const req = (service: string, request: number | string, session = `${service}-s`): Req => ({
    session,
    request,
    service,
  });
  return {
    /** The seed failure: duplicates, resumes after the terminal, a storm the eviction ends. */
    'seed-loop': (s) => seedScenario(req(s, 1), 6),
    /** Storms still open when the input ends: the endless loop, and bare reattaches of a request without a terminal. */
    'open-storms': (s) => {
      const bare = [1, 2, 3, 4, 5].map((i) => reattach(req(s, 2), T0 + i * 700, `R${i}`, `R${i - 1}`));
      return [...endlessLoop(req(s, 1), 7), ...bare];
    },
    /**
     * Duplicate terminals: on the same stream (none), on other streams (one finding, counted on); a
     * resume that arrives before a terminal that precedes it.
     */
    duplicates: (s) => [
      terminal(req(s, 1), T0, 'A'),
      terminal(req(s, 1), T0 + 1, 'A'),
      terminal(req(s, 1), T0 + 100, 'B', true),
      terminal(req(s, 1), T0 + 200, 'C', true),
      terminal(req(s, 1), T0 + 300, 'D', true),
      resume(req(s, 2), T0 + 500, 'B', 'A'),
      terminal(req(s, 2), T0, 'A'),
      resume(req(s, 2), T0 + 600, 'C', 'B'),
    ],
    /** Twenty polls whose reattach spans arrive late, then the result: no storm, no finding. */
    polls: (s) => polls(req(s, 1), 20),
    /** A quiet resumed stream cut six times before its result, its reattach spans late: no storm, no finding. */
    continuations: (s) => continuations(req(s, 1), 6),
    /** Empty replays on evidence; some contradicted later (retraction), one never. */
    'empty-replays': (s) => {
      const empty = (r: Req, t: number, evidence: ResumeEvidence, kind: SpanRecord['kind'] = 3) =>
        resume(r, t, 'B', 'A', { observed: false, outcome: ResumeOutcome.EMPTY_REPLAY, evidence, replayed: 0, kind });
      return [
        empty(req(s, 1), T0, ResumeEvidence.BODY_END),
        empty(req(s, 2), T0 + 10, ResumeEvidence.DEADLINE),
        resume(req(s, 3), T0 + 20, 'B', 'A', {
          observed: false,
          outcome: ResumeOutcome.EMPTY_REPLAY,
          replayed: 0,
          kind: 2,
        }),
        empty(req(s, 4), T0 + 30, ResumeEvidence.BODY_END),
        continued(req(s, 4), T0 + 900, 'C'),
        terminal(req(s, 1), T0 + 4000, 'B'),
        terminal(req(s, 4), T0 + 4100, 'C'),
      ];
    },
    /** Lost cursors: two rejections, a 404 at once, a 404 contradicted by a continuation. */
    'cursor-lost': (s) => [
      rejected(req(s, 1), T0, 'B'),
      sessionLost(req(s, 3), T0 + 5, 'B'),
      rejected(req(s, 1), T0 + 50, 'C', 400),
      sessionLost(req(s, 2), T0 + 60, 'B'),
      continued(req(s, 2), T0 + 200, 'C'),
      terminal(req(s, 2), T0 + 300, 'C'),
    ],
    /**
     * A lone 400/409, then: the request given up without its terminal (confirmed), a continuation and the
     * result (transient), or a tool error (not given up).
     */
    'lone-rejection': (s) => [
      rejected(req(s, 1), T0, 'B'),
      rejected(req(s, 2), T0 + 10, 'B', 400),
      rejected(req(s, 3), T0 + 20, 'B'),
      continued(req(s, 2), T0 + 60, 'C'),
      terminal(req(s, 2), T0 + 90, 'C'),
      requestEnded(req(s, 2), T0 + 100, ErrorType.ABORTED),
      requestEnded(req(s, 3), T0 + 110, ErrorType.TOOL_ERROR),
      requestEnded(req(s, 1), T0 + 20_000, ErrorType.TIMEOUT),
    ],
    /**
     * Cancelled requests whose result arrived all the same (the request span before the terminal, and
     * after it), one whose result came before the cancellation, one never answered: two findings.
     */
    cancelled: (s) => [
      requestEnded(req(s, 1), T0 + 100, ErrorType.CANCELLED),
      terminal(req(s, 1), T0 + 400, 'A'),
      terminal(req(s, 2), T0 + 500, 'A'),
      requestEnded(req(s, 2), T0 + 200, ErrorType.CANCELLED),
      terminal(req(s, 3), T0 + 50, 'A'),
      requestEnded(req(s, 3), T0 + 100, ErrorType.CANCELLED),
      requestEnded(req(s, 4), T0 + 100, ErrorType.CANCELLED),
    ],
    /**
     * 2026-07-28 re-issues of broken requests: the server completed the first attempt (duplicate
     * execution), it stopped it (nothing), no span tells (possible duplicate execution, once the
     * re-issue's evidence window has passed: after the restarts too). Traces of this sequence's own.
     */
    reissues: (s) => {
      const trace = (n: number) =>
        createHash('sha256').update(s).digest('hex').slice(0, 30) + n.toString(16).padStart(2, '0');
      const first = (n: number) =>
        modernRequest(T0 + n * 1000, { trace: trace(n), request: n, service: s, error: ErrorType.STREAM_BROKEN });
      const fate = (n: number, completed: boolean) =>
        modernRequest(T0 + n * 1000 + 50, {
          trace: trace(n),
          kind: 2,
          service: `${s}/server`,
          completedAfterCancellation: completed,
        });
      const reissue = (n: number) =>
        modernRequest(T0 + n * 1000 + 500, {
          trace: trace(n + 100),
          request: n + 100,
          service: s,
          reissueOf: first(n),
        });
      return [first(1), fate(1, true), reissue(1), reissue(2), first(2), first(3), reissue(3), fate(3, false)];
    },
    /**
     * Lost results: a continuation, then the request's deadline (the continuation corrected); a partial
     * replay; no event id; a cursor never used whose result came after all (retracted).
     */
    'lost-results': (s) => [
      continued(req(s, 1), T0 + 100, 'C'),
      endedWithoutResult(req(s, 1), T0 + 5000, ErrorType.TIMEOUT, {
        recovery: RequestRecovery.RESUMED,
        outcome: ResumeOutcome.CONTINUATION,
      }),
      {
        ...resume(req(s, 2), T0 + 200, 'C', 'A', {
          observed: false,
          outcome: ResumeOutcome.PARTIAL_REPLAY,
          evidence: ResumeEvidence.DEADLINE,
          replayed: 2,
        }),
        endTimeUnixMs: T0 + 5050,
      },
      endedWithoutResult(req(s, 3), T0 + 5100, ErrorType.ABORTED, { recovery: RequestRecovery.NO_EVENT_ID }),
      endedWithoutResult(req(s, 4), T0 + 5200, ErrorType.TIMEOUT, { recovery: RequestRecovery.NOT_RESUMED }),
      terminal(req(s, 4), T0 + 6000, 'A'),
    ],
    /** Server defects: a foreign replay into the listening stream, then the request's own copy flagged after it; a conflicting terminal. */
    'server-defects': (s) => [
      terminal(req(s, 1), T0, 'A'),
      resume(req(s, 1), T0 + 500, 'G2', 'G1', {
        noRequest: true,
        streamKind: StreamKind.LISTENING,
        outcome: ResumeOutcome.CONTINUATION,
        replayedTerminal: true,
      }),
      terminal(req(s, 1), T0 + 500, 'G2', true, { foreign: true, server: 'mcp.example.test', firstStream: 'A' }),
      terminal(req(s, 1), T0 + 600, 'G3', true, { foreign: true, server: 'mcp.example.test', firstStream: 'A' }),
      terminal(req(s, 2), T0, 'G9', false, { foreign: true }),
      terminal(req(s, 2), T0 + 100, 'A', true, { firstStream: 'G9' }),
      terminal(req(s, 3), T0, 'A'),
      resume(req(s, 3), T0 + 300, 'B', 'A', { observed: true, outcome: ResumeOutcome.CONTINUATION }),
      terminal(req(s, 3), T0 + 300, 'B', false, { conflict: true, server: '10.0.0.7', firstStream: 'A' }),
    ],
    /** What the guard stopped and the listening stream: no finding. */
    'guard-and-listening': (s) => {
      const r = req(s, 1);
      const refused = (x: SpanRecord) => withAttributes(x, { [ATTR_MCP_GUARD_ACTION]: GuardAction.RESUME_REFUSED });
      const listening = (i: number) =>
        withAttributes(reattach(r, T0 + 1000 + i * 100, `L${i}`, 'L0'), {
          [ATTR_MCP_STREAM_KIND]: StreamKind.LISTENING,
        });
      return [
        terminal(r, T0, 'A'),
        ...[1, 2, 3, 4].flatMap((i) => [
          refused(reattach(r, T0 + i * 10, `B${i}`, 'A')),
          refused(resume(r, T0 + i * 10, `B${i}`, 'A', { observed: true, outcome: ResumeOutcome.ERROR, status: 0 })),
        ]),
        withAttributes(terminal(r, T0 + 20, 'C', true), {
          [ATTR_MCP_GUARD_ACTION]: GuardAction.DUPLICATE_TERMINAL_DROPPED,
        }),
        ...[1, 2, 3, 4, 5].map(listening),
      ];
    },
    /** Several requests of two sessions at once, in a shuffled arrival order (event time decides). */
    interleaved: (s) =>
      shuffle(
        [
          ...seedScenario(req(s, 1), 4),
          ...seedScenario(req(s, 'abc', `${s}-s2`), 3, T0 + 2500),
          resume(req(s, 2), T0 + 100, 'B', 'A', {
            observed: false,
            outcome: ResumeOutcome.EMPTY_REPLAY,
            evidence: ResumeEvidence.BODY_END,
            replayed: 0,
          }),
          terminal(req(s, 2), T0 + 3000, 'B'),
          rejected(req(s, 3), T0, 'B'),
          rejected(req(s, 3), T0 + 10, 'C'),
        ],
        20,
      ),
  };
}

/**
 * The corpus: every sequence built like the core's tests, its times moved to `now` (the detector's
 * clock ends storms whose window passed: spans of 2023 would end at serve's first tick, at a moment no
 * run can repeat). A second sequence replays the seed loop delivered twice over (an exporter that
 * retries): span ids from before a restart must still be known after it.
 */
export function restartCorpus(now: number): Sequence[] {
  const shift = now - T0;
  const moved = (spans: SpanRecord[]): SpanRecord[] =>
    spans.map((s) => ({ ...s, startTimeUnixMs: s.startTimeUnixMs + shift, endTimeUnixMs: s.endTimeUnixMs + shift }));
  const out = Object.entries(corpusSpans()).map(([name, build]) => {
    const service = `corpus.${name}`;
    return { name: service, batches: batches(service, moved(build(service))) };
  });
  const redelivered = 'corpus.redelivered';
  const once = batches(redelivered, moved(seedScenario({ session: `${redelivered}-s`, request: 1 }, 5)));
  // Each export request again three requests later.
  const twice = once.flatMap((b, i) => (i >= 3 ? [b, once[i - 3]!] : [b])).concat(once.slice(-3));
  out.push({ name: redelivered, batches: twice });
  return out;
}
