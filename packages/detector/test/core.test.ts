import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ErrorType,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_REQUEST_RECOVERY,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_STREAM_KIND,
  SPAN_STREAM_RESUME,
  FindingKind,
  FindingRecord,
  GuardAction,
  RequestRecovery,
  ResumeEvidence,
  ResumeOutcome,
  SpanReceivedResult,
  StormEnd,
  StreamKind,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { Detector, type DetectorEvents, type DetectorInit, type Finding, type SpanRecord } from '../src/index.js';
import {
  T0,
  essence,
  modernRequest,
  net,
  reattach,
  requestEnded,
  resume,
  seedScenario,
  shuffle,
  span,
  terminal,
  traceOf,
  type Req,
} from './helpers/spans.js';

function run(spans: SpanRecord[], init: DetectorInit = {}, end?: number): Finding[] {
  const findings: Finding[] = [];
  const d = new Detector({ ...init, onFinding: (f) => findings.push(f) });
  for (const s of spans) d.ingest(s);
  if (end !== undefined) d.advance(end);
  else d.flush();
  return findings;
}
const noEvents: DetectorEvents = {
  span: () => {},
  terminal: () => {},
  resume: () => {},
  reattach: () => {},
  stormFinalized: () => {},
  serverDefect: () => {},
  listeningResume: () => {},
  request: () => {},
  negotiationRefused: () => {},
};
/** Kinds of the findings proper (records about earlier findings left out). */
const kinds = (fs: Finding[]) =>
  fs
    .filter((f) => f.record === undefined)
    .map((f) => f.kind)
    .sort();
const records = (fs: Finding[]) => fs.filter((f) => f.record !== undefined);
const r: Req = { session: 'sess-1', request: 7 };
/** run(), with the lost_result of 2026-07-28 first attempts (and their retraction by the re-issue) left out. */
/**
 * The permutation tests build a detector per order (hundreds each; a detector sets its tables up at
 * about 6 ms): seconds of CPU, which take far longer than vitest's 30 s on a loaded machine. A limit,
 * not an expectation: nothing in them waits on time.
 */
const PERMUTATIONS_LIMIT_MS = 300_000;
const runReissues = (spans: SpanRecord[], init: DetectorInit = {}, end?: number): Finding[] =>
  run(spans, init, end).filter((f) => f.kind !== FindingKind.LOST_RESULT);

describe('detector core: finding kinds', () => {
  it('reports the seed pattern: duplicate, resume after terminal, storm, one signature as soon as complete, then how the storm ended', () => {
    const spans = seedScenario(r, 4);
    const fs = run(spans);
    expect(kinds(fs)).toEqual(
      [
        FindingKind.DUPLICATE_TERMINAL,
        FindingKind.RECONNECT_STORM,
        FindingKind.RESUME_AFTER_TERMINAL,
        FindingKind.SIGNATURE,
      ].sort(),
    );
    const sig = fs.find((f) => f.kind === FindingKind.SIGNATURE)!;
    // Complete at the third attempt (the storm), duplicates having been replayed before it.
    expect(sig).toEqual({
      kind: FindingKind.SIGNATURE,
      service: 'client',
      session_id: 'sess-1',
      request_id: '7',
      trace_id: spans[0]!.traceId,
      duplicates: 2,
      attempts: 3,
      first_time_unix_ms: T0,
      last_time_unix_ms: T0 + 3000,
      // The first terminal, the first duplicate, the storm's first and (then) latest attempts.
      span_ids: [spans[0]!.spanId, spans[3]!.spanId, spans[1]!.spanId, spans[7]!.spanId],
    });
    const storm = fs.find((f) => f.kind === FindingKind.RECONNECT_STORM && f.record === undefined)!;
    expect(storm.attempts).toBe(3);
    // The storm's end, once, after the signature: the whole storm, ended by the eviction.
    expect(records(fs)).toEqual([
      {
        kind: FindingKind.RECONNECT_STORM,
        record: FindingRecord.STORM_ENDED,
        service: 'client',
        session_id: 'sess-1',
        request_id: '7',
        trace_id: spans[0]!.traceId,
        first_time_unix_ms: T0 + 1000,
        last_time_unix_ms: T0 + 5000,
        span_ids: [spans[1]!.spanId, spans.at(-2)!.spanId],
        attempts: 5,
        duplicates: 4,
        ended_by: StormEnd.EVICTED,
        ended_by_eviction: true,
      },
    ]);
    expect(fs.findIndex((f) => f.kind === FindingKind.SIGNATURE)).toBeLessThan(
      fs.findIndex((f) => f.record === FindingRecord.STORM_ENDED),
    );
  });

  it('endless loop: the signature fires within the attempts that complete it, once, with no eviction and no quiet', () => {
    const seen: Finding[] = [];
    const d = new Detector({ onFinding: (f) => seen.push(f) });
    d.ingest(terminal(r, T0, 'A'));
    let prev = 'A';
    let signatureAt = -1;
    for (let i = 1; i <= 200; i++) {
      const t = T0 + i * 200;
      const stream = `L${i}`;
      d.ingest(reattach(r, t, stream, prev));
      d.ingest(
        resume(r, t, stream, prev, {
          observed: true,
          outcome: ResumeOutcome.CONTINUATION,
          evidence: ResumeEvidence.MESSAGE,
          replayedTerminal: true,
        }),
      );
      d.ingest(terminal(r, t + 10, stream, true));
      if (signatureAt < 0 && seen.some((f) => f.kind === FindingKind.SIGNATURE)) signatureAt = i;
      d.advance(t + 20);
      prev = stream;
    }
    // Threshold 3: the third attempt completes a storm whose duplicates are already known.
    expect(signatureAt).toBe(3);
    expect(kinds(seen)).toEqual(
      [
        FindingKind.DUPLICATE_TERMINAL,
        FindingKind.RECONNECT_STORM,
        FindingKind.RESUME_AFTER_TERMINAL,
        FindingKind.SIGNATURE,
      ].sort(),
    );
    expect(records(seen)).toEqual([]);
    expect(d.stats().activeStorms).toBe(1);
    // Shutdown ends it: one storm_ended record for the whole storm, no second signature.
    d.flush();
    expect(seen.filter((f) => f.kind === FindingKind.SIGNATURE)).toHaveLength(1);
    expect(records(seen)).toMatchObject([
      { record: FindingRecord.STORM_ENDED, attempts: 200, ended_by: StormEnd.SHUTDOWN, ended_by_eviction: false },
    ]);
    expect(d.stats().activeStorms).toBe(0);
  });

  it('endless loop seen through resume spans alone (a server that never evicts): the signature at the third resume', () => {
    const seen: Finding[] = [];
    const d = new Detector({ onFinding: (f) => seen.push(f) });
    for (let i = 1; i <= 100; i++) {
      d.ingest(
        resume(r, T0 + i * 500, `S${i}`, 'S0', {
          observed: true,
          replayedTerminal: true,
          outcome: ResumeOutcome.CONTINUATION,
          kind: 2,
        }),
      );
      d.advance(T0 + i * 500 + 10);
      expect(seen.filter((f) => f.kind === FindingKind.SIGNATURE)).toHaveLength(i >= 3 ? 1 : 0);
    }
    expect(seen.find((f) => f.kind === FindingKind.SIGNATURE)).toMatchObject({
      duplicates: 3,
      attempts: 3,
      first_time_unix_ms: T0 + 500,
      last_time_unix_ms: T0 + 1500,
    });
    expect(records(seen)).toEqual([]);
  });

  it('duplicate_terminal needs a second terminal on another stream', () => {
    expect(run([terminal(r, T0, 'A'), terminal(r, T0 + 1, 'A')])).toEqual([]);
    const fs = run([terminal(r, T0, 'A'), terminal(r, T0 + 5, 'B')]);
    expect(fs).toHaveLength(1);
    expect(fs[0]).toMatchObject({
      kind: FindingKind.DUPLICATE_TERMINAL,
      duplicates: 1,
      first_time_unix_ms: T0,
      last_time_unix_ms: T0 + 5,
    });
    expect(fs[0]!.span_ids).toHaveLength(2);
  });

  it('resume_after_terminal by the client attribute, and by correlation when it is absent', () => {
    const byAttr = run([resume(r, T0, 'B', 'A', { observed: true })]);
    expect(kinds(byAttr)).toEqual([FindingKind.RESUME_AFTER_TERMINAL]);
    const byCorrelation = run([terminal(r, T0, 'A'), resume(r, T0 + 100, 'B', 'A')]);
    expect(kinds(byCorrelation)).toEqual([FindingKind.RESUME_AFTER_TERMINAL]);
    // The terminal arrives after the resume but precedes it in event time.
    const late = run([resume(r, T0 + 100, 'B', 'A'), terminal(r, T0, 'A')]);
    expect(kinds(late)).toEqual([FindingKind.RESUME_AFTER_TERMINAL]);
    expect(late[0]!.span_ids).toHaveLength(2);
    // A resume before the terminal is an honest continuation.
    expect(run([resume(r, T0, 'B', 'A', { observed: false }), terminal(r, T0 + 100, 'B')])).toEqual([]);
  });

  it('works from server-side resume spans alone', () => {
    const srv: Req = { ...r, service: 'server' };
    const spans = [1, 2, 3].map((i) =>
      resume(srv, T0 + i * 1000, `S${i}`, 'S0', { observed: true, replayedTerminal: true, kind: 2 }),
    );
    spans.push(
      resume(srv, T0 + 4000, 'S4', 'S0', {
        observed: true,
        outcome: ResumeOutcome.CURSOR_REJECTED,
        status: 409,
        kind: 2,
      }),
    );
    const fs = run(spans);
    expect(kinds(fs)).toEqual(
      [
        FindingKind.DUPLICATE_TERMINAL,
        FindingKind.RECONNECT_STORM,
        FindingKind.RESUME_AFTER_TERMINAL,
        FindingKind.SIGNATURE,
      ].sort(),
    );
    expect(fs.find((f) => f.kind === FindingKind.SIGNATURE)).toMatchObject({ duplicates: 3, attempts: 3 });
    expect(records(fs)).toMatchObject([{ record: FindingRecord.STORM_ENDED, attempts: 4, ended_by: StormEnd.EVICTED }]);
  });

  it('server spans: two replays that each deliver the terminal are a duplicate, one is not', () => {
    const srv: Req = { ...r, service: 'server' };
    const first = resume(srv, T0, 'S1', 'S0', { observed: false, replayedTerminal: true, kind: 2 });
    expect(run([first])).toEqual([]);
    const second = resume(srv, T0 + 500, 'S2', 'S0', { observed: false, replayedTerminal: true, kind: 2 });
    expect(kinds(run([first, second]))).toEqual([FindingKind.DUPLICATE_TERMINAL]);
  });

  it('reconnect_storm: N attempts within W; a reattach and a resume of one GET are one attempt', () => {
    const failing = { outcome: ResumeOutcome.ERROR, status: 503 };
    const pairs = [0, 1].flatMap((i) => [
      reattach(r, T0 + i * 1000, `G${i}`, 'A'),
      resume(r, T0 + i * 1000 + 1, `G${i}`, 'A', failing),
    ]);
    expect(run(pairs)).toEqual([]);
    const three = [...pairs, reattach(r, T0 + 2000, 'G2', 'A')];
    const fs = run(three);
    expect(kinds(fs)).toEqual([FindingKind.RECONNECT_STORM]);
    expect(fs[0]!.attempts).toBe(3);
    // Spread wider than W: no storm.
    expect(run([0, 1, 2].map((i) => reattach(r, T0 + i * 40_000, `W${i}`, 'A')))).toEqual([]);
    // Configurable threshold and window.
    expect(
      kinds(
        run(
          [0, 1].map((i) => reattach(r, T0 + i * 40_000, `X${i}`, 'A')),
          { stormThreshold: 2, stormWindowMs: 50_000 },
        ),
      ),
    ).toEqual([FindingKind.RECONNECT_STORM]);
  });

  it('a storm ends when W passes quietly: its storm_ended record says so, the signature came before', () => {
    const spans = [terminal(r, T0, 'A'), terminal(r, T0 + 10, 'B', true)];
    for (let i = 0; i < 4; i++) spans.push(reattach(r, T0 + 1000 + i * 1000, `R${i}`, 'A'));
    const findings: Finding[] = [];
    const ended: [string, number, string][] = [];
    const d = new Detector({
      onFinding: (f) => findings.push(f),
      events: { ...noEvents, stormFinalized: (...a) => void ended.push(a) },
    });
    for (const s of spans) d.ingest(s);
    expect(d.stats().activeStorms).toBe(1);
    expect(findings.find((f) => f.kind === FindingKind.SIGNATURE)).toMatchObject({ attempts: 3, duplicates: 1 });
    d.advance(T0 + 4000 + 59_000);
    expect(records(findings)).toEqual([]);
    d.advance(T0 + 4000 + 60_001);
    expect(d.stats().activeStorms).toBe(0);
    expect(records(findings)).toMatchObject([
      { record: FindingRecord.STORM_ENDED, attempts: 4, ended_by: StormEnd.QUIET, ended_by_eviction: false },
    ]);
    expect(ended).toEqual([['client', 4, StormEnd.QUIET]]);
    expect(findings.filter((f) => f.kind === FindingKind.SIGNATURE)).toHaveLength(1);
  });

  it('ambiguous_empty_replay and cursor_lost only for requests without a terminal', () => {
    const empty = resume(r, T0, 'B', 'A', {
      observed: false,
      replayed: 0,
      status: 200,
      evidence: ResumeEvidence.BODY_END,
    });
    expect(run([empty])).toMatchObject([
      { kind: FindingKind.AMBIGUOUS_EMPTY_REPLAY, status_code: 200, outcome: ResumeOutcome.EMPTY_REPLAY },
    ]);
    const fs = run([resume(r, T0, 'B', 'A', { status: 404 })]);
    expect(fs).toMatchObject([
      { kind: FindingKind.CURSOR_LOST, status_code: 404, outcome: ResumeOutcome.SESSION_NOT_FOUND },
    ]);
    // After a terminal, the same answers are the end of a storm, not a lost cursor.
    expect(kinds(run([terminal(r, T0, 'A'), resume(r, T0 + 5, 'B', 'A', { status: 404 })]))).toEqual([
      FindingKind.RESUME_AFTER_TERMINAL,
    ]);
    expect(run([resume(r, T0, 'B', 'A', { status: 200, replayed: 3 })])).toEqual([]);
  });

  it('what the guard stopped in the client is no finding: a refused resume, a dropped duplicate', () => {
    const guarded = (record: SpanRecord, action: string): SpanRecord => ({
      ...record,
      attributes: { ...record.attributes, [ATTR_MCP_GUARD_ACTION]: action },
    });
    const resumes: string[] = [];
    const d = new Detector({
      onFinding: () => expect.fail('no finding expected'),
      events: { ...noEvents, resume: (_s, o) => void resumes.push(o) },
    });
    const spans = [
      terminal(r, T0, 'A'),
      guarded(reattach(r, T0 + 10, 'B', 'A'), GuardAction.RESUME_REFUSED),
      guarded(
        resume(r, T0 + 10, 'B', 'A', { observed: true, outcome: ResumeOutcome.ERROR, status: 0 }),
        GuardAction.RESUME_REFUSED,
      ),
      guarded(terminal(r, T0 + 20, 'C', true), GuardAction.DUPLICATE_TERMINAL_DROPPED),
    ];
    for (const record of spans) expect(d.ingest(record)).toBe(SpanReceivedResult.ACCEPTED);
    d.flush();
    expect(resumes).toEqual([ResumeOutcome.ERROR]);
    // Without the guard's word the same resume is one.
    expect(kinds(run([terminal(r, T0, 'A'), resume(r, T0 + 10, 'B', 'A', { observed: true })]))).toEqual([
      FindingKind.RESUME_AFTER_TERMINAL,
    ]);
  });

  it('emits the finding synchronously while ingesting the span that completes it', () => {
    const seen: Finding[] = [];
    const d = new Detector({ onFinding: (f) => seen.push(f) });
    d.ingest(terminal(r, T0, 'A'));
    expect(seen).toHaveLength(0);
    d.ingest(terminal(r, T0 + 10, 'B', true));
    expect(seen.map((f) => f.kind)).toEqual([FindingKind.DUPLICATE_TERMINAL]);
  });
});

describe('detector core: messy delivery', () => {
  it('counts a span delivered twice once', () => {
    const spans = seedScenario(r, 3);
    const once = run(spans).map(essence).sort();
    const d = new Detector();
    const twice: Finding[] = [];
    const d2 = new Detector({ onFinding: (f) => twice.push(f) });
    for (const s of spans) {
      d2.ingest(s);
      expect(d2.ingest({ ...s, attributes: { ...s.attributes } })).toBe(SpanReceivedResult.DUPLICATE);
    }
    for (const s of spans) d2.ingest(s);
    d2.flush();
    expect(twice.map(essence).sort()).toEqual(once);
    expect(d.stats().spans.accepted).toBe(0);
    expect(d2.stats().spans.duplicate).toBe(spans.length * 2);
  });

  it('gives the same findings for any arrival order (permutations)', { timeout: PERMUTATIONS_LIMIT_MS }, () => {
    const other: Req = { session: 'sess-2', request: 'abc', service: 'server' };
    const spans = [
      ...seedScenario(r, 4),
      ...seedScenario({ session: 'sess-3', request: 1 }, 2, T0 + 3000),
      terminal(other, T0, 'A'),
      resume(other, T0 + 100, 'B', 'A'),
      resume({ session: 'sess-4', request: 2 }, T0, 'X', 'W', { observed: false, status: 409 }),
    ];
    const reference = run(spans, { settleMs: 60_000 }).map(essence).sort();
    expect(reference.length).toBeGreaterThanOrEqual(9);
    const referenceKinds = run(spans)
      .map((f) => JSON.stringify([f.kind, f.service, f.session_id, f.request_id]))
      .sort();
    for (let seed = 1; seed <= 300; seed++) {
      const order = shuffle(spans, seed);
      expect(run(order, { settleMs: 60_000 }).map(essence).sort()).toEqual(reference);
      // Without a settle delay, which findings exist still does not depend on the order.
      expect(
        run(order)
          .map((f) => JSON.stringify([f.kind, f.service, f.session_id, f.request_id]))
          .sort(),
      ).toEqual(referenceKinds);
    }
  });

  it('a settle delay reports the storm_ended record once the window has passed; the signature does not wait', () => {
    const findings: Finding[] = [];
    const d = new Detector({ settleMs: 5000, onFinding: (f) => findings.push(f) });
    for (const s of seedScenario(r, 3)) d.ingest(s);
    expect(findings.filter((f) => f.kind === FindingKind.SIGNATURE)).toHaveLength(1);
    expect(records(findings)).toEqual([]);
    d.advance(T0 + 4000 + 4999);
    expect(records(findings)).toEqual([]);
    d.advance(T0 + 4000 + 5000);
    expect(records(findings)).toMatchObject([
      { record: FindingRecord.STORM_ENDED, attempts: 4, ended_by: StormEnd.EVICTED },
    ]);
    expect(findings.filter((f) => f.kind === FindingKind.SIGNATURE)).toHaveLength(1);
  });

  it('ignores spans that lack what the detection needs, without throwing', () => {
    const d = new Detector();
    expect(d.ingest(span('GET', T0, {}))).toBe(SpanReceivedResult.IGNORED);
    expect(d.ingest(terminal({ session: '', request: 1 }, T0, 'A'))).toBe(SpanReceivedResult.IGNORED);
    const bad = terminal(r, T0, 'A');
    expect(d.ingest({ ...bad, spanId: 'xyz' })).toBe(SpanReceivedResult.INVALID);
    expect(d.ingest({ ...bad, startTimeUnixMs: NaN })).toBe(SpanReceivedResult.INVALID);
    expect(d.stats().tracked).toBe(0);
  });
});

describe('detector core: bounded state', () => {
  it('caps tracked requests and counts evictions', () => {
    const d = new Detector({ maxRequests: 100 });
    for (let i = 0; i < 1000; i++) d.ingest(terminal({ session: `flood-${i}`, request: 1 }, T0 + i, 'A'));
    expect(d.stats().tracked).toBe(100);
    expect(d.stats().evictions).toBe(900);
  });

  it('tracks services past the 4096th as other', () => {
    const findings: Finding[] = [];
    const d = new Detector({ onFinding: (f) => findings.push(f) });
    for (let i = 0; i < 4100; i++) {
      const req: Req = { session: `svc-${i}`, request: 1, service: `service-${i}` };
      expect(d.ingest(terminal(req, T0, 'A'))).toBe(SpanReceivedResult.ACCEPTED);
      d.ingest(terminal(req, T0 + 5, 'B', true));
    }
    expect(d.stats().tracked).toBe(4100);
    expect(findings.map((f) => f.service).slice(4094)).toEqual([
      'service-4094',
      'service-4095',
      'other',
      'other',
      'other',
      'other',
    ]);
  });

  it('evicts the least recently touched request', () => {
    const findings: Finding[] = [];
    const d = new Detector({ maxRequests: 2, onFinding: (f) => findings.push(f) });
    d.ingest(terminal({ session: 'keep', request: 1 }, T0, 'A'));
    d.ingest(terminal({ session: 'old', request: 1 }, T0, 'A'));
    d.ingest(resume({ session: 'keep', request: 1 }, T0 + 1, 'B', 'A', { observed: false }));
    d.ingest(terminal({ session: 'new', request: 1 }, T0 + 2, 'A'));
    // 'keep' survived and still correlates its earlier terminal.
    expect(findings.map((f) => f.session_id)).toEqual(['keep']);
    d.ingest(terminal({ session: 'old', request: 1 }, T0 + 3, 'B'));
    expect(findings).toHaveLength(1);
  });

  it('releases state after the retention time, reporting an open storm first', () => {
    const findings: Finding[] = [];
    const d = new Detector({ retentionMs: 10_000, stormWindowMs: 600_000, onFinding: (f) => findings.push(f) });
    for (const s of seedScenario(r, 3).slice(0, -2)) d.ingest(s);
    d.ingest(terminal({ session: 'other', request: 1 }, T0, 'A'));
    expect(d.stats().tracked).toBe(2);
    d.advance(T0 + 9_000);
    expect(d.stats().tracked).toBe(2);
    d.advance(T0 + 3_100 + 10_001);
    expect(d.stats()).toMatchObject({ tracked: 0, released: 2, evictions: 0 });
    // The storm was still inside its window when its state went.
    expect(records(findings)).toMatchObject([
      { record: FindingRecord.STORM_ENDED, attempts: 3, ended_by: StormEnd.DROPPED },
    ]);
  });

  it('tick() follows the injected clock', () => {
    let now = T0;
    const d = new Detector({ retentionMs: 1000, clock: () => now });
    d.ingest(terminal(r, T0, 'A'));
    d.tick();
    expect(d.stats().tracked).toBe(1);
    now = T0 + 2000;
    d.tick();
    expect(d.stats().tracked).toBe(0);
  });
});

/** A detector that records its findings and the per-span events the metrics see. */
function observed(init: DetectorInit = {}) {
  const findings: Finding[] = [];
  const resumes: string[] = [];
  const listening: string[] = [];
  const defects: [string, string][] = [];
  const d = new Detector({
    ...init,
    onFinding: (f) => findings.push(f),
    events: {
      ...noEvents,
      resume: (_s, o) => void resumes.push(o),
      listeningResume: (_s, o) => void listening.push(o),
      serverDefect: (k, s) => void defects.push([k, s]),
    },
  });
  return { d, findings, resumes, listening, defects };
}

describe('detector core: evidence only, no verdict from silence (issue 9)', () => {
  it("a task polled 20 times, then answered, is no storm and no finding, whatever the order of a poll's two spans", () => {
    const o = observed();
    o.d.ingest(span('tools/call slow', T0, { 'mcp.method.name': 'tools/call' }));
    let prev = 'A';
    for (let i = 1; i <= 20; i++) {
      const t = T0 + i * 300;
      const pair = [
        reattach(r, t, `P${i}`, prev),
        resume(r, t, `P${i}`, prev, {
          observed: false,
          outcome: ResumeOutcome.POLL,
          evidence: ResumeEvidence.BODY_END,
          replayed: 0,
        }),
      ];
      for (const s of i % 2 ? pair : pair.reverse()) o.d.ingest(s);
      prev = `P${i}`;
    }
    o.d.ingest(reattach(r, T0 + 6300, 'P21', prev));
    o.d.ingest(
      resume(r, T0 + 6300, 'P21', prev, {
        observed: false,
        outcome: ResumeOutcome.CONTINUATION,
        evidence: ResumeEvidence.MESSAGE,
        replayed: 1,
        replayedTerminal: true,
      }),
    );
    o.d.ingest(terminal(r, T0 + 6310, 'P21'));
    o.d.flush();
    expect(o.findings).toEqual([]);
    expect(o.d.stats().activeStorms).toBe(0);
    expect(o.resumes.filter((x) => x === ResumeOutcome.POLL)).toHaveLength(20);
  });

  it('a quiet resume that continues, cut again and again before the result, is no storm and no finding', () => {
    const spans: SpanRecord[] = [];
    for (let i = 1; i <= 6; i++) {
      spans.push(reattach(r, T0 + i * 1000, `Q${i}`, `Q${i - 1}`));
      spans.push(
        resume(r, T0 + i * 1000, `Q${i}`, `Q${i - 1}`, {
          observed: false,
          outcome: ResumeOutcome.CONTINUATION,
          evidence: ResumeEvidence.MESSAGE,
          replayed: 1,
        }),
      );
    }
    spans.push(terminal(r, T0 + 6500, 'Q6'));
    expect(run(spans)).toEqual([]);
    // The same attempts after the terminal are the seed loop's storm.
    const after = spans.map((s) =>
      s.name === SPAN_STREAM_RESUME
        ? { ...s, attributes: { ...s.attributes, [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: true } }
        : s,
    );
    expect(kinds(run(after))).toContain(FindingKind.RECONNECT_STORM);
  });

  it('a resume of the listening stream keeps no request state and is no finding, even when it replays a terminal', () => {
    const o = observed();
    o.d.ingest(terminal(r, T0, 'A'));
    for (let i = 1; i <= 5; i++) {
      const t = T0 + i * 100;
      o.d.ingest({
        ...reattach(r, t, `G${i}`, 'G0'),
        attributes: { ...reattach(r, t, `G${i}`, 'G0').attributes, [ATTR_MCP_STREAM_KIND]: StreamKind.LISTENING },
      });
      // As an older emitter records it: attributed to the request through the replayed terminal.
      o.d.ingest(
        resume(r, t, `G${i}`, 'G0', {
          observed: true,
          replayedTerminal: true,
          outcome: ResumeOutcome.CONTINUATION,
          streamKind: StreamKind.LISTENING,
        }),
      );
      o.d.ingest(
        resume(r, t, `H${i}`, 'H0', { noRequest: true, outcome: ResumeOutcome.POLL, streamKind: StreamKind.LISTENING }),
      );
    }
    o.d.flush();
    expect(o.findings).toEqual([]);
    expect(o.listening).toEqual(Array(5).fill([ResumeOutcome.CONTINUATION, ResumeOutcome.POLL]).flat());
    expect(o.resumes).toEqual([]);
    expect(o.d.stats()).toMatchObject({ tracked: 1, spans: { accepted: 16, ignored: 0 } });
  });

  it("ambiguous_empty_replay only on evidence: the end of the body or the deadline, never a server span's or a silent one", () => {
    const emptyBy = (evidence?: ResumeEvidence, kind?: SpanRecord['kind']) =>
      run([
        resume(r, T0, 'B', 'A', {
          observed: false,
          outcome: ResumeOutcome.EMPTY_REPLAY,
          replayed: 0,
          ...(evidence ? { evidence } : {}),
          ...(kind ? { kind } : {}),
        }),
      ]);
    expect(kinds(emptyBy(ResumeEvidence.BODY_END))).toEqual([FindingKind.AMBIGUOUS_EMPTY_REPLAY]);
    expect(kinds(emptyBy(ResumeEvidence.DEADLINE))).toEqual([FindingKind.AMBIGUOUS_EMPTY_REPLAY]);
    // The server replayed nothing and kept the stream open: what a quiet, healthy server does.
    expect(emptyBy(undefined, 2)).toEqual([]);
    expect(kinds(emptyBy(ResumeEvidence.BODY_END, 2))).toEqual([FindingKind.AMBIGUOUS_EMPTY_REPLAY]);
    // No outcome, 2xx, nothing replayed, no evidence: nothing to decide on, counted as error.
    const o = observed();
    o.d.ingest(resume(r, T0, 'B', 'A', { observed: false, replayed: 0 }));
    expect(o.findings).toEqual([]);
    expect(o.resumes).toEqual([ResumeOutcome.ERROR]);
    // The client gave the request up while the resumed stream was silent: no failed resumption.
    expect(
      run([
        resume(r, T0, 'B', 'A', {
          observed: false,
          outcome: ResumeOutcome.ERROR,
          evidence: ResumeEvidence.REQUEST_END,
          replayed: 0,
        }),
      ]),
    ).toEqual([]);
    // Polls are never findings.
    expect(
      run([
        resume(r, T0, 'B', 'A', {
          observed: false,
          outcome: ResumeOutcome.POLL,
          evidence: ResumeEvidence.BODY_END,
          replayed: 0,
        }),
      ]),
    ).toEqual([]);
  });

  it('a 400/409 is provisional: cursor_lost once a second resume of the request is rejected too', () => {
    const rejected = (t: number, stream: string, status = 409) =>
      resume(r, t, stream, 'A', {
        observed: false,
        outcome: ResumeOutcome.CURSOR_REJECTED,
        evidence: ResumeEvidence.STATUS,
        status,
        replayed: 0,
      });
    for (const status of [400, 409]) expect(run([rejected(T0, 'B', status)])).toEqual([]);
    // The SDK server's 409 while it still holds the dropped connection, then the retry succeeds.
    const transient = [
      rejected(T0, 'B'),
      resume(r, T0 + 50, 'C', 'A', { observed: false, outcome: ResumeOutcome.CONTINUATION, replayed: 2 }),
      terminal(r, T0 + 80, 'C'),
    ];
    expect(run(transient)).toEqual([]);
    const first = rejected(T0, 'B');
    const second = rejected(T0 + 50, 'C');
    for (const order of [
      [first, second],
      [second, first],
    ]) {
      expect(run(order)).toEqual([
        {
          kind: FindingKind.CURSOR_LOST,
          service: 'client',
          session_id: 'sess-1',
          request_id: '7',
          trace_id: first.traceId,
          first_time_unix_ms: T0,
          last_time_unix_ms: T0 + 50,
          span_ids: [first.spanId, second.spanId],
          outcome: ResumeOutcome.CURSOR_REJECTED,
          status_code: 409,
        },
      ]);
    }
  });

  it('a lone 400/409 is confirmed by the request given up without its terminal, as the guard confirms it', () => {
    const rejected = resume(r, T0, 'B', 'A', {
      observed: false,
      outcome: ResumeOutcome.CURSOR_REJECTED,
      evidence: ResumeEvidence.STATUS,
      status: 409,
      replayed: 0,
    });
    const givenUp = (error: string, t = T0 + 300_000, kind: SpanRecord['kind'] = 3) =>
      span(
        'tools/call stream_progress',
        t - 300_000,
        {
          [ATTR_MCP_METHOD_NAME]: 'tools/call',
          [ATTR_MCP_SESSION_ID]: r.session,
          [ATTR_JSONRPC_REQUEST_ID]: r.request,
          [ATTR_ERROR_TYPE]: error,
        },
        { kind },
      );
    for (const error of [ErrorType.TIMEOUT, ErrorType.ABORTED, ErrorType.CANCELLED]) {
      const ended = { ...givenUp(error), endTimeUnixMs: T0 + 300_000 };
      expect(run([rejected, ended])).toEqual([
        {
          kind: FindingKind.CURSOR_LOST,
          service: 'client',
          session_id: 'sess-1',
          request_id: '7',
          trace_id: ended.traceId,
          first_time_unix_ms: T0,
          last_time_unix_ms: T0 + 300_000,
          span_ids: [rejected.spanId, ended.spanId],
          outcome: ResumeOutcome.CURSOR_REJECTED,
        },
      ]);
    }
    // Not a give-up: a request that ended with its result, a tool error, or a server's span of it.
    expect(run([rejected, givenUp(ErrorType.TOOL_ERROR)])).toEqual([]);
    expect(run([rejected, givenUp(ErrorType.TIMEOUT, T0 + 300_000, 2)])).toEqual([]);
    // The retry succeeded, or the terminal came: the rejection was transient.
    const continued = resume(r, T0 + 50, 'C', 'A', {
      observed: false,
      outcome: ResumeOutcome.CONTINUATION,
      replayed: 1,
    });
    expect(run([rejected, continued, givenUp(ErrorType.TIMEOUT)])).toEqual([]);
    expect(run([rejected, terminal(r, T0 + 80, 'A'), givenUp(ErrorType.ABORTED)])).toEqual([]);
    // A request given up that was never rejected, or is not tracked at all, makes no state and no finding.
    expect(run([givenUp(ErrorType.TIMEOUT)])).toEqual([]);
  });

  it('retracts a failed resumption when a later span shows a continuation or the terminal: a record, once', () => {
    const empty = resume(r, T0, 'B', 'A', {
      observed: false,
      outcome: ResumeOutcome.EMPTY_REPLAY,
      evidence: ResumeEvidence.DEADLINE,
      replayed: 0,
    });
    const late = terminal(r, T0 + 4000, 'B');
    const fs = run([empty, late]);
    expect(fs).toEqual([
      expect.objectContaining({ kind: FindingKind.AMBIGUOUS_EMPTY_REPLAY }),
      {
        kind: FindingKind.AMBIGUOUS_EMPTY_REPLAY,
        record: FindingRecord.RETRACTION,
        service: 'client',
        session_id: 'sess-1',
        request_id: '7',
        trace_id: late.traceId,
        first_time_unix_ms: T0,
        last_time_unix_ms: T0 + 4000,
        span_ids: [late.spanId],
      },
    ]);
    // Known in the other order, the finding never exists.
    expect(run([late, empty])).toEqual([]);
    // A continuation after the failure retracts it; one before it does not.
    const cont = (t: number) =>
      resume(r, t, `C${t}`, 'A', {
        observed: false,
        outcome: ResumeOutcome.CONTINUATION,
        evidence: ResumeEvidence.MESSAGE,
      });
    expect(records(run([empty, cont(T0 + 10)]))).toMatchObject([
      { kind: FindingKind.AMBIGUOUS_EMPTY_REPLAY, record: FindingRecord.RETRACTION },
    ]);
    expect(run([cont(T0 - 10), empty])).toMatchObject([{ kind: FindingKind.AMBIGUOUS_EMPTY_REPLAY }]);
    expect(records(run([cont(T0 - 10), empty]))).toEqual([]);
    // cursor_lost (404) too; the retraction comes once, however many spans contradict.
    const lost = resume(r, T0, 'B', 'A', {
      observed: false,
      outcome: ResumeOutcome.SESSION_NOT_FOUND,
      status: 404,
      replayed: 0,
    });
    const both = run([lost, cont(T0 + 10), terminal(r, T0 + 20, 'X')]);
    expect(both.map((f) => [f.kind, f.record])).toEqual([
      [FindingKind.CURSOR_LOST, undefined],
      [FindingKind.CURSOR_LOST, FindingRecord.RETRACTION],
    ]);
  });
});

describe('detector core: completed after cancellation', () => {
  /** The client's request span, ended at `end` with `error` (undefined: it ended with its result). */
  const requestSpan = (end: number, error: string | undefined, kind: SpanRecord['kind'] = 3, req: Req = r) => ({
    ...span(
      'tools/call side_effect',
      end - 1000,
      {
        [ATTR_MCP_METHOD_NAME]: 'tools/call',
        [ATTR_MCP_SESSION_ID]: req.session,
        [ATTR_JSONRPC_REQUEST_ID]: req.request,
        ...(error === undefined ? {} : { [ATTR_ERROR_TYPE]: error }),
      },
      { kind },
    ),
    endTimeUnixMs: end,
  });

  it('reports a terminal that arrived after the client cancelled, whichever span comes first', () => {
    const cancelled = requestSpan(T0 + 100, ErrorType.CANCELLED);
    const result = terminal(r, T0 + 500, 'A');
    for (const order of [
      [cancelled, result],
      [result, cancelled],
    ]) {
      expect(run(order)).toEqual([
        {
          kind: FindingKind.COMPLETED_AFTER_CANCELLATION,
          service: 'client',
          session_id: 'sess-1',
          request_id: '7',
          trace_id: result.traceId,
          first_time_unix_ms: T0 + 100,
          last_time_unix_ms: T0 + 500,
          span_ids: [cancelled.spanId, result.spanId],
        },
      ]);
    }
  });

  it('only for a cancellation the server was told of: not a timeout, an abort, an error or a result', () => {
    const result = terminal(r, T0 + 500, 'A');
    for (const error of [ErrorType.TIMEOUT, ErrorType.ABORTED, ErrorType.TOOL_ERROR, '500', undefined]) {
      expect(run([requestSpan(T0 + 100, error), result]), String(error)).toEqual([]);
      expect(run([result, requestSpan(T0 + 100, error)]), String(error)).toEqual([]);
    }
    // A server's span of the request (kind SERVER) says nothing of what the client was told.
    expect(run([requestSpan(T0 + 100, ErrorType.CANCELLED, 2), result])).toEqual([]);
  });

  it('not when no terminal came, nor when the terminal came before the cancellation', () => {
    expect(run([requestSpan(T0 + 100, ErrorType.CANCELLED)])).toEqual([]);
    const early = terminal(r, T0 + 50, 'A');
    const cancelled = requestSpan(T0 + 100, ErrorType.CANCELLED);
    expect(run([early, cancelled])).toEqual([]);
    expect(run([cancelled, early])).toEqual([]);
    // The application had its result: a duplicate after the cancellation is the duplicate's finding only.
    expect(kinds(run([early, cancelled, terminal(r, T0 + 500, 'B')]))).toEqual([FindingKind.DUPLICATE_TERMINAL]);
    // Another request's terminal is not this one's.
    expect(run([cancelled, terminal({ session: 'sess-1', request: 8 }, T0 + 500, 'A')])).toEqual([]);
  });

  it('reports once per request, however many terminals and copies of the cancelled span arrive', () => {
    const cancelled = requestSpan(T0 + 100, ErrorType.CANCELLED);
    const fs = run([cancelled, terminal(r, T0 + 500, 'A'), { ...cancelled }, terminal(r, T0 + 600, 'B')]);
    expect(kinds(fs)).toEqual([FindingKind.COMPLETED_AFTER_CANCELLATION, FindingKind.DUPLICATE_TERMINAL].sort());
    // A second request of the session is a finding of its own.
    const other: Req = { session: 'sess-1', request: 8 };
    const both = run([
      cancelled,
      requestSpan(T0 + 200, ErrorType.CANCELLED, 3, other),
      terminal(r, T0 + 500, 'A'),
      terminal(other, T0 + 700, 'C'),
    ]);
    expect(both.map((f) => [f.kind, f.request_id])).toEqual([
      [FindingKind.COMPLETED_AFTER_CANCELLATION, '7'],
      [FindingKind.COMPLETED_AFTER_CANCELLATION, '8'],
    ]);
  });
});

describe('detector core: server defects (issue 12)', () => {
  it("a foreign terminal is foreign_replay, blamed on server.address, never the client's duplicate or resume after terminal", () => {
    for (const guard of [undefined, GuardAction.DUPLICATE_TERMINAL_DROPPED]) {
      const o = observed();
      const live = terminal(r, T0, 'A');
      // The listening stream G2's resume replayed the finished request's result.
      const foreign = terminal(r, T0 + 500, 'G2', true, {
        foreign: true,
        server: 'mcp.example.test',
        firstStream: 'A',
        ...(guard ? { guard } : {}),
      });
      o.d.ingest(live);
      o.d.ingest(
        resume(r, T0 + 500, 'G2', 'G1', {
          noRequest: true,
          streamKind: StreamKind.LISTENING,
          outcome: ResumeOutcome.CONTINUATION,
          replayedTerminal: true,
        }),
      );
      o.d.ingest(foreign);
      o.d.ingest(terminal(r, T0 + 600, 'G3', true, { foreign: true, server: 'mcp.example.test', firstStream: 'A' }));
      o.d.flush();
      expect(o.findings).toEqual([
        {
          kind: FindingKind.FOREIGN_REPLAY,
          service: 'client',
          session_id: 'sess-1',
          request_id: '7',
          trace_id: foreign.traceId,
          first_time_unix_ms: T0 + 500,
          last_time_unix_ms: T0 + 500,
          span_ids: [foreign.spanId],
          server: 'mcp.example.test',
          stream_id: 'G2',
          first_stream_id: 'A',
        },
      ]);
      // Every occurrence counts per server; the finding is once per request.
      expect(o.defects).toEqual([
        [FindingKind.FOREIGN_REPLAY, 'mcp.example.test'],
        [FindingKind.FOREIGN_REPLAY, 'mcp.example.test'],
      ]);
    }
    // A foreign first terminal, then the request's own one flagged as its duplicate: the server's doing.
    const fs = run([
      terminal(r, T0, 'G2', false, { foreign: true }),
      terminal(r, T0 + 100, 'A', true, { firstStream: 'G2' }),
    ]);
    expect(fs).toMatchObject([{ kind: FindingKind.FOREIGN_REPLAY, server: 'unknown_server' }]);
    expect(fs).toHaveLength(1);
  });

  it("a conflicting terminal is conflicting_terminal, with or without the guard's report", () => {
    for (const guard of [undefined, GuardAction.CONFLICTING_TERMINAL_REPORTED]) {
      const conflicting = terminal(r, T0 + 300, 'B', false, {
        conflict: true,
        server: '10.0.0.7',
        firstStream: 'A',
        ...(guard ? { guard } : {}),
      });
      const fs = run([
        terminal(r, T0, 'A'),
        resume(r, T0 + 300, 'B', 'A', { observed: true, outcome: ResumeOutcome.CONTINUATION }),
        conflicting,
      ]);
      expect(fs.filter((f) => f.kind !== FindingKind.RESUME_AFTER_TERMINAL)).toEqual([
        {
          kind: FindingKind.CONFLICTING_TERMINAL,
          service: 'client',
          session_id: 'sess-1',
          request_id: '7',
          trace_id: conflicting.traceId,
          first_time_unix_ms: T0 + 300,
          last_time_unix_ms: T0 + 300,
          span_ids: [conflicting.spanId],
          server: '10.0.0.7',
          stream_id: 'B',
          first_stream_id: 'A',
        },
      ]);
    }
    // Both flags: both kinds.
    expect(
      kinds(run([terminal(r, T0, 'A'), terminal(r, T0 + 5, 'G', false, { foreign: true, conflict: true })])),
    ).toEqual([FindingKind.CONFLICTING_TERMINAL, FindingKind.FOREIGN_REPLAY].sort());
  });
});

describe('detector core: order independence of the new rules', () => {
  it(
    'the findings that stand do not depend on arrival order (permutations)',
    { timeout: PERMUTATIONS_LIMIT_MS },
    () => {
      const req = (session: string, request: number | string): Req => ({ session, request });
      const spans: SpanRecord[] = [
        ...seedScenario(r, 4),
        resume(req('e', 1), T0, 'B', 'A', {
          observed: false,
          outcome: ResumeOutcome.EMPTY_REPLAY,
          evidence: ResumeEvidence.BODY_END,
          replayed: 0,
        }),
        terminal(req('e', 1), T0 + 900, 'B'),
        resume(req('k', 1), T0, 'B', 'A', {
          observed: false,
          outcome: ResumeOutcome.CURSOR_REJECTED,
          status: 409,
          replayed: 0,
        }),
        resume(req('k', 1), T0 + 10, 'C', 'A', {
          observed: false,
          outcome: ResumeOutcome.CURSOR_REJECTED,
          status: 409,
          replayed: 0,
        }),
        resume(req('n', 1), T0, 'B', 'A', {
          observed: false,
          outcome: ResumeOutcome.SESSION_NOT_FOUND,
          status: 404,
          replayed: 0,
        }),
        terminal(req('f', 2), T0, 'A'),
        terminal(req('f', 2), T0 + 10, 'G', true, { foreign: true, server: 's1', firstStream: 'A' }),
        terminal(req('c', 2), T0, 'A'),
        terminal(req('c', 2), T0 + 10, 'B', false, { conflict: true, server: 's2', firstStream: 'A' }),
        // Cancelled by the client at T0 + 100, completed at T0 + 400.
        {
          ...span(
            'tools/call side_effect',
            T0 - 900,
            {
              [ATTR_MCP_METHOD_NAME]: 'tools/call',
              [ATTR_MCP_SESSION_ID]: 'x',
              [ATTR_JSONRPC_REQUEST_ID]: 3,
              [ATTR_ERROR_TYPE]: ErrorType.CANCELLED,
            },
            { kind: 3 },
          ),
          endTimeUnixMs: T0 + 100,
        },
        terminal(req('x', 3), T0 + 400, 'A'),
      ];
      const reference = net(run(spans, { settleMs: 60_000 }))
        .map(essence)
        .sort();
      expect(reference.map((e) => JSON.parse(e)[0]).sort()).toEqual(
        [
          FindingKind.DUPLICATE_TERMINAL,
          FindingKind.RESUME_AFTER_TERMINAL,
          FindingKind.RECONNECT_STORM,
          FindingKind.RECONNECT_STORM,
          FindingKind.SIGNATURE,
          FindingKind.CURSOR_LOST,
          FindingKind.CURSOR_LOST,
          FindingKind.FOREIGN_REPLAY,
          FindingKind.CONFLICTING_TERMINAL,
          FindingKind.COMPLETED_AFTER_CANCELLATION,
        ].sort(),
      );
      for (let seed = 1; seed <= 200; seed++) {
        const order = shuffle(spans, seed);
        expect(
          net(run(order, { settleMs: 60_000 }))
            .map(essence)
            .sort(),
        ).toEqual(reference);
      }
    },
  );
});

describe('detector core: duplicate execution (2026-07-28 era)', () => {
  // The first attempt, its stream broken before the result; the re-issue, a new request of its own trace.
  const first = modernRequest(T0, { trace: traceOf(1), request: 1, error: ErrorType.STREAM_BROKEN });
  const reissue = modernRequest(T0 + 1000, { trace: traceOf(2), request: 2, reissueOf: first });
  /** The server's span of the first attempt (another service, trace of the first attempt). */
  const server = (completed: boolean, t = T0 + 50) =>
    modernRequest(t, { trace: traceOf(1), kind: 2, service: 'mcp-server', completedAfterCancellation: completed });
  const WINDOW = 60_000;
  // The broken first attempts' own lost_result, retracted by their re-issue, is tested under "lost results".
  const run = runReissues;

  it('duplicate_execution: the server completed the first attempt after its stream broke, whichever span comes first', () => {
    const completed = server(true, T0 + 50);
    for (const order of [
      [first, completed, reissue],
      [reissue, completed, first],
      [completed, reissue],
      [reissue, completed],
    ]) {
      expect(run(order)).toEqual([
        {
          kind: FindingKind.DUPLICATE_EXECUTION,
          service: 'client',
          session_id: '',
          request_id: '2',
          trace_id: traceOf(2),
          first_time_unix_ms: T0 + 50,
          last_time_unix_ms: T0 + 1100,
          span_ids: [first.spanId, completed.spanId, reissue.spanId],
          first_trace_id: traceOf(1),
        },
      ]);
    }
  });

  it('duplicate_execution from the gateway alone: its own span of the first attempt says the upstream completed it', () => {
    const gatewayFirst = modernRequest(T0, {
      trace: traceOf(3),
      service: 'resumewatch-gateway',
      error: ErrorType.STREAM_BROKEN,
      completedAfterCancellation: true,
    });
    const gatewayReissue = modernRequest(T0 + 500, {
      trace: traceOf(4),
      service: 'resumewatch-gateway',
      request: 9,
      reissueOf: gatewayFirst,
    });
    for (const order of [
      [gatewayFirst, gatewayReissue],
      [gatewayReissue, gatewayFirst],
    ]) {
      expect(run(order)).toMatchObject([
        {
          kind: FindingKind.DUPLICATE_EXECUTION,
          service: 'resumewatch-gateway',
          request_id: '9',
          trace_id: traceOf(4),
          first_trace_id: traceOf(3),
          span_ids: [gatewayFirst.spanId, gatewayReissue.spanId],
        },
      ]);
    }
  });

  it('nothing after a server that stopped the first attempt, in any order, within the window or after it', () => {
    const stopped = server(false);
    for (const order of [
      [first, stopped, reissue],
      [reissue, stopped, first],
    ]) {
      expect(run(order, {}, T0 + 10 * WINDOW)).toEqual([]);
      expect(run(order)).toEqual([]);
    }
  });

  it("possible_duplicate_execution when no span tells the first attempt's fate within the window after the re-issue ended", () => {
    const reissueEnd = reissue.endTimeUnixMs;
    expect(run([first, reissue], {}, reissueEnd + WINDOW - 1)).toEqual([]);
    const expected = [
      {
        kind: FindingKind.POSSIBLE_DUPLICATE_EXECUTION,
        service: 'client',
        session_id: '',
        request_id: '2',
        trace_id: traceOf(2),
        first_time_unix_ms: reissue.startTimeUnixMs,
        last_time_unix_ms: reissueEnd,
        span_ids: [first.spanId, reissue.spanId],
        first_trace_id: traceOf(1),
      },
    ];
    expect(run([first, reissue], {}, reissueEnd + WINDOW)).toEqual(expected);
    // The end of input: no more evidence will come.
    expect(run([reissue])).toEqual(expected);
    // The window is an option.
    expect(run([reissue], { reissueSettleMs: 5000 }, reissueEnd + 5000)).toEqual(expected);
  });

  it('the fate that arrives within the window decides; completed wins over stopped; after the window the verdict stands', () => {
    const o = observed();
    o.d.ingest(reissue);
    o.d.ingest(server(false));
    o.d.advance(T0 + 2000);
    // A second span of the first attempt's trace (the gateway's) says the upstream completed it all the same.
    o.d.ingest(server(true, T0 + 60));
    expect(kinds(o.findings)).toEqual([FindingKind.DUPLICATE_EXECUTION]);

    const late = observed();
    late.d.ingest(reissue);
    late.d.advance(reissue.endTimeUnixMs + WINDOW);
    late.d.ingest(server(true));
    late.d.flush();
    expect(kinds(late.findings)).toEqual([FindingKind.POSSIBLE_DUPLICATE_EXECUTION]);
  });

  it('a Multi Round-Trip round is never a re-issue, nor a server span, even when the first attempt completed', () => {
    const round = modernRequest(T0 + 1000, { trace: traceOf(2), reissueOf: first, inputRound: true });
    expect(run([first, server(true), round])).toEqual([]);
    expect(run([round])).toEqual([]);
    const serverSide = modernRequest(T0 + 1000, { trace: traceOf(2), reissueOf: first, kind: 2 });
    expect(run([server(true), serverSide])).toEqual([]);
  });

  it('reports once per re-issue: copies of its spans, a second re-issue of the same attempt; each attempt on its own', () => {
    const again = modernRequest(T0 + 3000, { trace: traceOf(5), request: 3, reissueOf: first });
    const fs = run([reissue, { ...reissue }, server(true), server(true, T0 + 70), again, { ...reissue }]);
    expect(fs.map((f) => [f.kind, f.request_id])).toEqual([[FindingKind.DUPLICATE_EXECUTION, '2']]);
    const other = modernRequest(T0 + 200, { trace: traceOf(6), request: 6, error: ErrorType.STREAM_BROKEN });
    const both = run([
      reissue,
      server(true),
      modernRequest(T0 + 900, { trace: traceOf(7), request: 7, reissueOf: other }),
    ]);
    expect(both.map((f) => [f.kind, f.request_id])).toEqual([
      [FindingKind.DUPLICATE_EXECUTION, '2'],
      [FindingKind.POSSIBLE_DUPLICATE_EXECUTION, '7'],
    ]);
  });

  it('ignores a re-issue link that is no trace id, and a span without its ids', () => {
    const bad = modernRequest(T0 + 1000, { trace: traceOf(2), reissueOf: { ...first, traceId: 'short' } });
    expect(run([bad])).toEqual([]);
    expect(run([{ ...reissue, spanId: '' }])).toEqual([]);
  });

  it('the findings do not depend on arrival order (permutations)', { timeout: PERMUTATIONS_LIMIT_MS }, () => {
    const spans: SpanRecord[] = [first, reissue, server(true)];
    const stoppedFirst = modernRequest(T0, { trace: traceOf(8), request: 8, error: ErrorType.STREAM_BROKEN });
    spans.push(
      stoppedFirst,
      modernRequest(T0 + 900, { trace: traceOf(9), request: 9, reissueOf: stoppedFirst }),
      modernRequest(T0 + 60, { trace: traceOf(8), kind: 2, service: 'mcp-server', completedAfterCancellation: false }),
      modernRequest(T0 + 900, { trace: traceOf(10), request: 10, reissueOf: { ...first, traceId: traceOf(11) } }),
      modernRequest(T0 + 950, { trace: traceOf(12), request: 12, reissueOf: first, inputRound: true }),
    );
    const reference = run(spans).map(essence).sort();
    expect(reference.map((e) => JSON.parse(e)[0]).sort()).toEqual(
      [FindingKind.DUPLICATE_EXECUTION, FindingKind.POSSIBLE_DUPLICATE_EXECUTION].sort(),
    );
    for (let seed = 1; seed <= 100; seed++) expect(run(shuffle(spans, seed)).map(essence).sort()).toEqual(reference);
  });

  it('bounded: first attempts past the cap evict the least recently touched, which settles as possible; retention releases', () => {
    const o = observed({ maxRequests: 2 });
    const attempts = [1, 2, 3].map((n) =>
      modernRequest(T0 + n * 1000, {
        trace: traceOf(100 + n),
        request: n,
        reissueOf: { ...first, traceId: traceOf(n) },
      }),
    );
    for (const a of attempts) o.d.ingest(a);
    expect(o.d.stats()).toMatchObject({ reissues: 2, evictions: 1 });
    // The evicted re-issue could wait no longer for its first attempt's fate.
    expect(o.findings.map((f) => [f.kind, f.request_id])).toEqual([[FindingKind.POSSIBLE_DUPLICATE_EXECUTION, '1']]);
    o.d.ingest(modernRequest(T0, { trace: traceOf(2), kind: 2, completedAfterCancellation: true }));
    expect(o.findings.map((f) => f.request_id)).toEqual(['1', '2']);
    // A server span alone is kept for a re-issue to come, within the cap too: it evicts the re-issue of 3.
    o.d.ingest(modernRequest(T0, { trace: traceOf(50), kind: 2, completedAfterCancellation: true }));
    expect(o.d.stats()).toMatchObject({ reissues: 2, evictions: 2 });
    o.d.advance(T0 + 20 * WINDOW);
    expect(o.d.stats()).toMatchObject({ reissues: 0, released: 2 });
    expect(o.findings.map((f) => [f.kind, f.request_id])).toEqual([
      [FindingKind.POSSIBLE_DUPLICATE_EXECUTION, '1'],
      [FindingKind.DUPLICATE_EXECUTION, '2'],
      [FindingKind.POSSIBLE_DUPLICATE_EXECUTION, '3'],
    ]);
  });
});

describe('detector core: lost results (issue 31)', () => {
  const at = T0 + 10_000;
  /** A resume of request `req` at `t`: a continuation (a message arrived), or what the instrumentation decided at the request's end. */
  const resumed = (t: number, outcome: ResumeOutcome, evidence: ResumeEvidence, req: Req = r) =>
    resume(req, t, `R${t}`, 'A', { observed: false, outcome, evidence, replayed: 2 });
  const continuation = resumed(T0 + 1000, ResumeOutcome.CONTINUATION, ResumeEvidence.MESSAGE);
  const partial = { ...resumed(T0 + 1000, ResumeOutcome.PARTIAL_REPLAY, ResumeEvidence.DEADLINE), endTimeUnixMs: at };
  /** The client's request span, ended at its deadline after it was resumed: its last resume a partial replay. */
  const timedOut = requestEnded(r, at, ErrorType.TIMEOUT, {
    recovery: RequestRecovery.RESUMED,
    outcome: ResumeOutcome.PARTIAL_REPLAY,
    start: T0,
  });

  it('a resume that replayed messages, not the result, then the request ended at its deadline: lost_result, once, in either order', () => {
    const expected = {
      kind: FindingKind.LOST_RESULT,
      service: 'client',
      session_id: 'sess-1',
      request_id: '7',
      recovery: RequestRecovery.RESUMED,
      outcome: ResumeOutcome.PARTIAL_REPLAY,
      request_end: ErrorType.TIMEOUT,
      last_time_unix_ms: at,
    };
    for (const order of [[partial, timedOut], [timedOut, partial], [partial], [timedOut]]) {
      const fs = run(order);
      expect(fs).toMatchObject([expected]);
      expect(fs).toHaveLength(1);
    }
    // Each piece of evidence names itself: the request span, or the resume decided at the request's end.
    expect(run([timedOut])[0]).toMatchObject({ first_time_unix_ms: T0, span_ids: [timedOut.spanId] });
    expect(run([partial])[0]).toMatchObject({ first_time_unix_ms: T0 + 1000, span_ids: [partial.spanId] });
    // The client aborted it instead (closed its stream, deleted its session): lost too.
    const aborted = {
      ...resumed(T0 + 1000, ResumeOutcome.PARTIAL_REPLAY, ResumeEvidence.REQUEST_END),
      endTimeUnixMs: at,
    };
    expect(run([aborted])).toMatchObject([{ kind: FindingKind.LOST_RESULT, request_end: ErrorType.ABORTED }]);
  });

  it('a resume already counted as continuation is corrected by a record when its request ends without its result, whichever comes first', () => {
    const ended = requestEnded(r, at, ErrorType.TIMEOUT, {
      recovery: RequestRecovery.RESUMED,
      outcome: ResumeOutcome.CONTINUATION,
      start: T0,
    });
    for (const order of [
      [continuation, ended],
      [ended, continuation],
    ]) {
      const o = observed();
      for (const s of order) o.d.ingest(s);
      expect(o.findings).toEqual([
        {
          kind: FindingKind.LOST_RESULT,
          service: 'client',
          session_id: 'sess-1',
          request_id: '7',
          trace_id: ended.traceId,
          first_time_unix_ms: T0,
          last_time_unix_ms: at,
          span_ids: [ended.spanId],
          recovery: RequestRecovery.RESUMED,
          outcome: ResumeOutcome.CONTINUATION,
          request_end: ErrorType.TIMEOUT,
        },
        {
          kind: FindingKind.LOST_RESULT,
          record: FindingRecord.OUTCOME_CORRECTED,
          service: 'client',
          session_id: 'sess-1',
          request_id: '7',
          trace_id: expect.any(String),
          first_time_unix_ms: T0 + 1000,
          last_time_unix_ms: at,
          span_ids: [continuation.spanId],
          outcome: ResumeOutcome.PARTIAL_REPLAY,
        },
      ]);
      // The resume was counted as what its span said; the record is the correction.
      expect(o.resumes).toEqual([ResumeOutcome.CONTINUATION]);
    }
    // A continuation after the request's end (another request's resume of the same id, a late span) is not corrected.
    const later = resumed(at + 500, ResumeOutcome.CONTINUATION, ResumeEvidence.MESSAGE);
    expect(records(run([ended, later]))).toEqual([]);
    // Once per request, however many continuations came before.
    const again = resumed(T0 + 2000, ResumeOutcome.CONTINUATION, ResumeEvidence.MESSAGE);
    expect(records(run([continuation, again, ended]))).toHaveLength(1);
    expect(records(run([continuation, ended, again]))).toHaveLength(1);
  });

  it('says what the client did: could not resume (no event id), or did not resume', () => {
    for (const recovery of [RequestRecovery.NO_EVENT_ID, RequestRecovery.NOT_RESUMED]) {
      for (const error of [ErrorType.TIMEOUT, ErrorType.ABORTED]) {
        const ended = requestEnded(r, at, error, { recovery });
        expect(run([ended])).toEqual([
          {
            kind: FindingKind.LOST_RESULT,
            service: 'client',
            session_id: 'sess-1',
            request_id: '7',
            trace_id: ended.traceId,
            first_time_unix_ms: at - 1000,
            last_time_unix_ms: at,
            span_ids: [ended.spanId],
            recovery,
            request_end: error,
          },
        ]);
      }
    }
  });

  it('a stream that broke with no event id (no cursor, nothing resumes it): lost_result at its break, retracted by a late terminal', () => {
    const broken = requestEnded(r, at, ErrorType.STREAM_BROKEN, { recovery: RequestRecovery.NO_EVENT_ID });
    expect(run([broken])).toEqual([
      {
        kind: FindingKind.LOST_RESULT,
        service: 'client',
        session_id: 'sess-1',
        request_id: '7',
        trace_id: broken.traceId,
        first_time_unix_ms: at - 1000,
        last_time_unix_ms: at,
        span_ids: [broken.spanId],
        recovery: RequestRecovery.NO_EVENT_ID,
        request_end: ErrorType.STREAM_BROKEN,
      },
    ]);
    // Keyed by its session as any session's request: a terminal that does come after all retracts it.
    const late = terminal(r, at + 100, 'A');
    expect(run([broken, late]).map((f) => [f.kind, f.record])).toEqual([
      [FindingKind.LOST_RESULT, undefined],
      [FindingKind.LOST_RESULT, FindingRecord.RETRACTION],
    ]);
    expect(run([late, broken])).toEqual([]);
  });

  it("a session-less server's request (session era, no Mcp-Session-Id): lost_result by its trace, never when cancelled", () => {
    const sessionless = (error: string, recovery: RequestRecovery | undefined): SpanRecord => {
      const s = requestEnded(r, at, error, recovery === undefined ? {} : { recovery });
      const attributes = { ...s.attributes };
      delete attributes[ATTR_MCP_SESSION_ID];
      return { ...s, attributes };
    };
    for (const [error, recovery] of [
      [ErrorType.STREAM_BROKEN, RequestRecovery.NO_EVENT_ID],
      [ErrorType.TIMEOUT, RequestRecovery.NO_EVENT_ID],
      [ErrorType.ABORTED, RequestRecovery.NOT_RESUMED],
    ] as const) {
      const ended = sessionless(error, recovery);
      expect(run([ended])).toEqual([
        {
          kind: FindingKind.LOST_RESULT,
          service: 'client',
          session_id: '',
          request_id: '7',
          trace_id: ended.traceId,
          first_time_unix_ms: at - 1000,
          last_time_unix_ms: at,
          span_ids: [ended.spanId],
          recovery,
          request_end: error,
        },
      ]);
    }
    // Cancelled, or given up with no stream ended before: nothing.
    expect(run([sessionless(ErrorType.CANCELLED, RequestRecovery.NO_EVENT_ID)])).toEqual([]);
    expect(run([sessionless(ErrorType.TIMEOUT, undefined)])).toEqual([]);
  });

  it('never on silence, a cancellation, a known terminal, a server span, or a loss another finding tells', () => {
    // A request given up whose stream never ended without its result (a slow server): nothing says it was lost.
    expect(run([requestEnded(r, at, ErrorType.TIMEOUT)])).toEqual([]);
    // Cancelled by the client (notifications/cancelled): given up on purpose.
    expect(run([requestEnded(r, at, ErrorType.CANCELLED, { recovery: RequestRecovery.RESUMED })])).toEqual([]);
    // A server's span, an unknown recovery, a request span without ids.
    expect(run([requestEnded(r, at, ErrorType.TIMEOUT, { recovery: RequestRecovery.NO_EVENT_ID, kind: 2 })])).toEqual(
      [],
    );
    expect(run([span('tools/call x', T0, { ...timedOut.attributes, [ATTR_MCP_REQUEST_RECOVERY]: 'maybe' })])).toEqual(
      [],
    );
    expect(run([{ ...timedOut, spanId: 'short' }])).toEqual([]);
    // Its last resume was an empty replay or a lost cursor: ambiguous_empty_replay and cursor_lost tell the loss.
    for (const outcome of [ResumeOutcome.EMPTY_REPLAY, ResumeOutcome.SESSION_NOT_FOUND, ResumeOutcome.CURSOR_REJECTED])
      expect(
        kinds(run([requestEnded(r, at, ErrorType.TIMEOUT, { recovery: RequestRecovery.RESUMED, outcome })])),
      ).toEqual([]);
    // The terminal arrived first: never reported; later: retracted (a record), once.
    const late = terminal(r, at + 100, 'A');
    expect(run([late, timedOut, partial])).toEqual([]);
    const fs = run([timedOut, late, partial, terminal(r, at + 200, 'B')]);
    expect(fs.map((f) => [f.kind, f.record])).toEqual([
      [FindingKind.LOST_RESULT, undefined],
      [FindingKind.LOST_RESULT, FindingRecord.RETRACTION],
      // The second terminal, on another stream, is a duplicate delivery of the result that did come.
      [FindingKind.DUPLICATE_TERMINAL, undefined],
    ]);
    expect(fs[1]).toMatchObject({ first_time_unix_ms: at, last_time_unix_ms: at + 100, span_ids: [late.spanId] });
  });

  it('a partial replay is no reconnect attempt, and retracts an earlier empty replay as a continuation does', () => {
    const empty = resume(r, T0, 'B', 'A', {
      observed: false,
      outcome: ResumeOutcome.EMPTY_REPLAY,
      evidence: ResumeEvidence.BODY_END,
      replayed: 0,
    });
    const fs = run([empty, partial]);
    expect(fs.map((f) => [f.kind, f.record])).toEqual([
      [FindingKind.AMBIGUOUS_EMPTY_REPLAY, undefined],
      [FindingKind.AMBIGUOUS_EMPTY_REPLAY, FindingRecord.RETRACTION],
      [FindingKind.LOST_RESULT, undefined],
    ]);
    const polls = Array.from({ length: 6 }, (_, i) =>
      resumed(T0 + i * 100, ResumeOutcome.PARTIAL_REPLAY, ResumeEvidence.DEADLINE),
    );
    expect(kinds(run(polls, { stormThreshold: 3 }))).toEqual([FindingKind.LOST_RESULT]);
  });

  describe('the 2026-07-28 era: a broken stream loses the result; its re-issue recovers it', () => {
    const first = modernRequest(T0, { trace: traceOf(1), request: 1, error: ErrorType.STREAM_BROKEN });
    const reissue = modernRequest(T0 + 1000, { trace: traceOf(2), request: 2, reissueOf: first });

    it('lost_result at once, with not_reissued; retracted by the re-issue, or never reported when the re-issue came first', () => {
      expect(run([first])).toEqual([
        {
          kind: FindingKind.LOST_RESULT,
          service: 'client',
          session_id: '',
          request_id: '1',
          trace_id: traceOf(1),
          first_time_unix_ms: T0,
          last_time_unix_ms: T0 + 100,
          span_ids: [first.spanId],
          recovery: RequestRecovery.NOT_REISSUED,
          request_end: ErrorType.STREAM_BROKEN,
        },
      ]);
      const fs = run([first, reissue]).filter((f) => f.kind === FindingKind.LOST_RESULT);
      expect(fs[1]).toEqual({
        kind: FindingKind.LOST_RESULT,
        record: FindingRecord.RETRACTION,
        service: 'client',
        session_id: '',
        request_id: '1',
        trace_id: traceOf(2),
        first_time_unix_ms: T0 + 100,
        last_time_unix_ms: T0 + 1000,
        span_ids: [reissue.spanId],
        first_trace_id: traceOf(1),
      });
      expect(run([reissue, first]).filter((f) => f.kind === FindingKind.LOST_RESULT)).toEqual([]);
      // Once: the same span twice, a second re-issue.
      const again = modernRequest(T0 + 3000, { trace: traceOf(3), request: 3, reissueOf: first });
      expect(
        run([first, { ...first }, reissue, again])
          .filter((f) => f.kind === FindingKind.LOST_RESULT)
          .map((f) => f.record),
      ).toEqual([undefined, FindingRecord.RETRACTION]);
    });

    it("not for the client's own close (the era's cancellation), a server's span, or a Multi Round-Trip round", () => {
      expect(run([modernRequest(T0, { trace: traceOf(4), error: ErrorType.ABORTED })])).toEqual([]);
      expect(run([modernRequest(T0, { trace: traceOf(5), error: ErrorType.STREAM_BROKEN, kind: 2 })])).toEqual([]);
      // A round is no re-issue: the broken first attempt stays lost.
      const round = modernRequest(T0 + 1000, { trace: traceOf(6), reissueOf: first, inputRound: true });
      expect(kinds(net(run([first, round])))).toEqual([FindingKind.LOST_RESULT]);
    });
  });

  it(
    'the findings that stand do not depend on arrival order (permutations)',
    { timeout: PERMUTATIONS_LIMIT_MS },
    () => {
      const req = (session: string): Req => ({ session, request: 1 });
      const brokenFirst = modernRequest(T0, { trace: traceOf(7), request: 7, error: ErrorType.STREAM_BROKEN });
      const spans: SpanRecord[] = [
        // Resumed, a continuation, then the deadline: lost, and the continuation corrected.
        resumed(T0 + 100, ResumeOutcome.CONTINUATION, ResumeEvidence.MESSAGE, req('c')),
        requestEnded(req('c'), at, ErrorType.TIMEOUT, {
          recovery: RequestRecovery.RESUMED,
          outcome: ResumeOutcome.CONTINUATION,
        }),
        // A partial replay and its request span.
        { ...resumed(T0 + 100, ResumeOutcome.PARTIAL_REPLAY, ResumeEvidence.DEADLINE, req('p')), endTimeUnixMs: at },
        requestEnded(req('p'), at, ErrorType.TIMEOUT, {
          recovery: RequestRecovery.RESUMED,
          outcome: ResumeOutcome.PARTIAL_REPLAY,
        }),
        // No event id: lost; its late result retracts it.
        requestEnded(req('n'), at, ErrorType.ABORTED, { recovery: RequestRecovery.NO_EVENT_ID }),
        // Lost, then its result after all (a continuation counted before it: nothing stands for it).
        resumed(T0 + 100, ResumeOutcome.CONTINUATION, ResumeEvidence.MESSAGE, req('t')),
        requestEnded(req('t'), at, ErrorType.TIMEOUT, { recovery: RequestRecovery.RESUMED }),
        terminal(req('t'), at + 500, 'A'),
        // 2026-07-28: one broken and re-issued, one broken and left.
        first2026(),
        modernRequest(T0 + 900, { trace: traceOf(9), request: 9, reissueOf: first2026() }),
        brokenFirst,
      ];
      function first2026(): SpanRecord {
        return {
          ...modernRequest(T0, { trace: traceOf(8), request: 8, error: ErrorType.STREAM_BROKEN }),
          spanId: 'f'.repeat(16),
        };
      }
      const standing = (fs: Finding[]) =>
        net(fs)
          .filter((f) => f.kind === FindingKind.LOST_RESULT)
          .map((f) => JSON.stringify([f.record, f.session_id, f.request_id, f.recovery, f.request_end]))
          .sort();
      const reference = standing(run(spans));
      expect(reference.map((e) => JSON.parse(e) as unknown[])).toEqual(
        [
          [null, 'c', '1', RequestRecovery.RESUMED, ErrorType.TIMEOUT],
          [FindingRecord.OUTCOME_CORRECTED, 'c', '1', null, null],
          [null, 'p', '1', RequestRecovery.RESUMED, ErrorType.TIMEOUT],
          [null, 'n', '1', RequestRecovery.NO_EVENT_ID, ErrorType.ABORTED],
          [null, '', '7', RequestRecovery.NOT_REISSUED, ErrorType.STREAM_BROKEN],
        ]
          .map((e) => JSON.stringify(e))
          .sort()
          .map((e) => JSON.parse(e) as unknown[]),
      );
      for (let seed = 1; seed <= 200; seed++) expect(standing(run(shuffle(spans, seed)))).toEqual(reference);
    },
  );
});
