import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ErrorType,
  FindingKind,
  FindingRecord,
  RequestRecovery,
  ResumeEvidence,
  ResumeOutcome,
  SpanReceivedResult,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { COLD_FIELDS, FLAGS, HOT_FIELDS, REQUEST_FIELDS } from '../../src/core/request-schema.js';
import { STATE_FORMAT } from '../../src/core/state-codec.js';
import {
  Detector,
  StateMismatchError,
  type DetectorInit,
  type DetectorState,
  type Finding,
  type SpanRecord,
} from '../../src/index.js';
import {
  T0,
  modernRequest,
  reattach,
  requestEnded,
  resume,
  seedScenario,
  span,
  terminal,
  traceOf,
  type Req,
} from '../helpers/spans.js';

/**
 * The codec is proven by behaviour: a detector fed part of a sequence, saved, loaded into a fresh
 * detector and fed the rest reports exactly what one detector fed everything reports, in the same
 * order, with the same counts. Each span is followed by advance() to its end, as a receiver's clock
 * would, so that windows close and settled storms are reported on both sides of the restart.
 */
interface Sequence {
  name: string;
  spans: SpanRecord[];
  init?: DetectorInit;
  /** The findings the uninterrupted run must contain, so that a sequence cannot prove nothing. */
  expects: FindingKind[];
}

const a: Req = { session: 'sess-a', request: 1 };
const b: Req = { session: 'sess-b', request: 'b-2', service: 'svc-b' };

/** The client's request span, ended at `t` without its terminal: at its deadline, or cancelled. */
function givenUp(r: Req, t: number, error: ErrorType = ErrorType.TIMEOUT): SpanRecord {
  const request = span(
    'tools/call stream_progress',
    t - 1000,
    {
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_MCP_SESSION_ID]: r.session,
      [ATTR_JSONRPC_REQUEST_ID]: r.request,
      [ATTR_ERROR_TYPE]: error,
    },
    { service: r.service },
  );
  return { ...request, endTimeUnixMs: t };
}

function rejected(r: Req, t: number, stream: string): SpanRecord {
  return resume(r, t, stream, 'A', {
    observed: false,
    outcome: ResumeOutcome.CURSOR_REJECTED,
    evidence: ResumeEvidence.STATUS,
    status: 409,
    replayed: 0,
  });
}

/** Polls: each poll's resume span (outcome poll) and reattach span; a restart between the two must not make attempts of them. */
function polls(r: Req, t: number, count: number): SpanRecord[] {
  const out: SpanRecord[] = [];
  let prev = 'A';
  for (let i = 1; i <= count; i++) {
    const s = `P${i}`;
    out.push(resume(r, t + i * 100, s, prev, { outcome: ResumeOutcome.POLL, observed: false, replayed: 0 }));
    out.push(reattach(r, t + i * 100, s, prev));
    prev = s;
  }
  return out;
}

/** The resume spans of the polls first, then their reattach spans. */
function resumesFirst(pairs: SpanRecord[]): SpanRecord[] {
  return [...pairs.filter((_, i) => i % 2 === 0), ...pairs.filter((_, i) => i % 2 === 1)];
}

/** A storm still open at the split: attempts within the window, ended only by its quiet window or by flush. */
function openStorm(r: Req, t: number, attempts: number): SpanRecord[] {
  const out: SpanRecord[] = [terminal(r, t, 'A')];
  for (let i = 1; i <= attempts; i++) out.push(reattach(r, t + i * 500, `S${i}`, 'A'));
  return out;
}

/** A first attempt of the 2026-07-28 era whose stream broke, its re-issue, and what the server said of it (undefined: nothing). */
function reissued(n: number, t: number, completed: boolean | undefined, serverFirst = false): SpanRecord[] {
  const first = modernRequest(t, { trace: traceOf(n), request: n, error: ErrorType.STREAM_BROKEN });
  const again = modernRequest(t + 1000, { trace: traceOf(1000 + n), request: `again-${n}`, reissueOf: first });
  if (completed === undefined) return [first, again];
  const server = modernRequest(t + 50, {
    trace: traceOf(n),
    kind: 2,
    service: 'mcp-server',
    completedAfterCancellation: completed,
  });
  // The server span ends after the re-issue when it comes first: the restart may fall between them.
  return serverFirst ? [first, { ...server, endTimeUnixMs: t + 900 }, again] : [first, again, server];
}

const SEQUENCES: Sequence[] = [
  {
    name: 'the seed failure: duplicates, resume after terminal, a storm ended by eviction, its signature',
    spans: seedScenario(a, 4),
    expects: [FindingKind.DUPLICATE_TERMINAL, FindingKind.RESUME_AFTER_TERMINAL, FindingKind.SIGNATURE],
  },
  {
    name: 'two services interleaved, a settle delay on the storm_ended records',
    spans: interleave(seedScenario(a, 3), seedScenario(b, 3, T0 + 250)),
    init: { settleMs: 2000 },
    expects: [FindingKind.SIGNATURE, FindingKind.RECONNECT_STORM],
  },
  {
    name: 'polls then their answer: quiet streams, no storm and no finding',
    spans: [...polls(a, T0, 6), terminal(a, T0 + 5000, 'P6')],
    expects: [],
  },
  {
    name: "polls whose reattach spans arrive after all their resume spans (another exporter's batch)",
    spans: resumesFirst(polls(a, T0, 5)),
    expects: [],
  },
  {
    name: 'polls after the terminal, then a storm of one request while another is polled',
    spans: interleave(polls(b, T0, 5), openStorm(a, T0, 5)),
    expects: [FindingKind.RECONNECT_STORM],
  },
  {
    name: 'an open storm that ends by its quiet window after the restart, then a late duplicate completes the signature',
    spans: [...openStorm(a, T0, 4), reattach(a, T0 + 90_000, 'LATE', 'A'), terminal(a, T0 + 90_010, 'D', true)],
    expects: [FindingKind.RECONNECT_STORM, FindingKind.DUPLICATE_TERMINAL, FindingKind.SIGNATURE],
  },
  {
    name: 'a lone 409, then the request given up without its terminal',
    spans: [terminal(b, T0 - 5000, 'A'), rejected(a, T0, 'B'), givenUp(a, T0 + 30_000)],
    expects: [FindingKind.CURSOR_LOST],
  },
  {
    name: 'cancelled, then completed; completed, then its cancellation arrives; one completed before its cancellation',
    spans: [
      givenUp(a, T0, ErrorType.CANCELLED),
      terminal(b, T0 + 100, 'A'),
      terminal({ session: 'early', request: 1 }, T0 + 150, 'A'),
      terminal(a, T0 + 200, 'A'),
      givenUp(b, T0 + 50, ErrorType.CANCELLED),
      givenUp({ session: 'early', request: 1 }, T0 + 300, ErrorType.CANCELLED),
    ],
    expects: [FindingKind.COMPLETED_AFTER_CANCELLATION],
  },
  {
    name: 'two 409s, then a continuation retracts the cursor_lost; an empty replay retracted by the terminal',
    spans: [
      rejected(a, T0, 'B'),
      rejected(a, T0 + 100, 'C'),
      resume(a, T0 + 200, 'D', 'A', { observed: false, outcome: ResumeOutcome.CONTINUATION, replayed: 1 }),
      resume(b, T0 + 300, 'B', 'A', {
        observed: false,
        outcome: ResumeOutcome.EMPTY_REPLAY,
        evidence: ResumeEvidence.DEADLINE,
        replayed: 0,
      }),
      terminal(b, T0 + 400, 'B'),
    ],
    expects: [FindingKind.CURSOR_LOST, FindingKind.AMBIGUOUS_EMPTY_REPLAY],
  },
  {
    name: 'server defects: a foreign terminal, then its duplicate, and a conflicting terminal, each once',
    spans: [
      terminal(a, T0, 'A'),
      terminal(a, T0 + 100, 'G', true, { foreign: true, server: 'mcp.example' }),
      terminal(a, T0 + 200, 'H', true, { firstStream: 'G' }),
      terminal(a, T0 + 300, 'K', true, { conflict: true, server: 'mcp.example' }),
      terminal(a, T0 + 400, 'L', true, { conflict: true, server: 'mcp.example' }),
    ],
    expects: [FindingKind.FOREIGN_REPLAY, FindingKind.CONFLICTING_TERMINAL],
  },
  {
    name: 're-issues (2026-07-28 era): completed after its re-issue, completed before it, stopped, a fate that never comes, one pending at the end',
    spans: [
      ...reissued(1, T0, true),
      ...reissued(2, T0 + 100, true, true),
      ...reissued(3, T0 + 200, false),
      ...reissued(4, T0 + 300, undefined),
      // Past the window of the re-issue of 4: its verdict is reported while spans still come.
      ...reissued(5, T0 + 120_000, true),
      ...reissued(6, T0 + 130_000, undefined),
    ],
    expects: [FindingKind.DUPLICATE_EXECUTION, FindingKind.POSSIBLE_DUPLICATE_EXECUTION],
  },
  {
    name: 're-issues past the cap and the retention: the oldest first attempt settles and leaves, across the restart',
    spans: [
      ...reissued(1, T0, undefined),
      ...reissued(2, T0 + 100, false),
      ...reissued(3, T0 + 200, true),
      ...reissued(4, T0 + 900_000, undefined),
    ],
    init: { maxRequests: 3 },
    expects: [FindingKind.DUPLICATE_EXECUTION, FindingKind.POSSIBLE_DUPLICATE_EXECUTION],
  },
  {
    name: 'lost results: a continuation corrected at the deadline, a late terminal, no event id, a 2026-07-28 stream re-issued after the restart',
    spans: [
      resume(a, T0, 'B', 'A', { observed: false, outcome: ResumeOutcome.CONTINUATION, replayed: 2 }),
      requestEnded(a, T0 + 5000, ErrorType.TIMEOUT, {
        recovery: RequestRecovery.RESUMED,
        outcome: ResumeOutcome.CONTINUATION,
      }),
      requestEnded(b, T0 + 5100, ErrorType.ABORTED, { recovery: RequestRecovery.NO_EVENT_ID }),
      // The first attempt breaks before the restart, its re-issue comes after it: the lost result is retracted once.
      modernRequest(T0 + 5200, { trace: traceOf(1), request: 1, error: ErrorType.STREAM_BROKEN }),
      terminal(b, T0 + 6000, 'A'),
      resume(a, T0 + 100, 'C', 'A', { observed: false, outcome: ResumeOutcome.CONTINUATION, replayed: 1 }),
      modernRequest(T0 + 7000, {
        trace: traceOf(2),
        request: 2,
        reissueOf: modernRequest(T0 + 5200, { trace: traceOf(1), request: 1 }),
      }),
      modernRequest(T0 + 8000, { trace: traceOf(3), request: 3, error: ErrorType.STREAM_BROKEN }),
    ],
    expects: [FindingKind.LOST_RESULT, FindingKind.POSSIBLE_DUPLICATE_EXECUTION],
  },
  {
    name: 'the least recently touched request is evicted first, across the restart',
    spans: [
      ...openStorm({ session: 'old', request: 1 }, T0, 3),
      terminal({ session: 'mid', request: 1 }, T0 + 5000, 'A'),
      terminal({ session: 'new', request: 1 }, T0 + 5100, 'A'),
      // Touches "old" again: "mid" is now the least recently touched, and goes first.
      terminal({ session: 'old', request: 1 }, T0 + 5200, 'D', true),
      terminal({ session: 'fourth', request: 1 }, T0 + 5300, 'A'),
      terminal({ session: 'mid', request: 1 }, T0 + 5400, 'D', true),
      terminal({ session: 'fifth', request: 1 }, T0 + 5500, 'A'),
    ],
    init: { maxRequests: 3 },
    expects: [FindingKind.RECONNECT_STORM, FindingKind.SIGNATURE],
  },
];

function interleave(x: SpanRecord[], y: SpanRecord[]): SpanRecord[] {
  return [...x, ...y].sort((p, q) => p.startTimeUnixMs - q.startTimeUnixMs);
}

function feed(d: Detector, spans: SpanRecord[]): void {
  for (const s of spans) {
    d.ingest(s);
    d.advance(s.endTimeUnixMs);
  }
}

/** A saved state as a file would give it back: no object shared with the detector that wrote it. */
function saved(d: Detector): DetectorState {
  return structuredClone(d.exportState());
}

function uninterrupted(seq: Sequence): { findings: Finding[]; stats: unknown } {
  const findings: Finding[] = [];
  const d = new Detector({ ...seq.init, onFinding: (f) => findings.push(f) });
  feed(d, seq.spans);
  d.flush();
  return { findings, stats: d.stats() };
}

function restartedAt(seq: Sequence, at: number): { findings: Finding[]; stats: unknown } {
  const findings: Finding[] = [];
  const before = new Detector({ ...seq.init, onFinding: (f) => findings.push(f) });
  feed(before, seq.spans.slice(0, at));
  const after = new Detector({ ...seq.init, onFinding: (f) => findings.push(f) });
  after.importState(saved(before));
  feed(after, seq.spans.slice(at));
  after.flush();
  return { findings, stats: after.stats() };
}

describe('state codec: a restart anywhere changes no finding', () => {
  for (const seq of SEQUENCES) {
    it(seq.name, () => {
      const whole = uninterrupted(seq);
      const reported = whole.findings.filter((f) => f.record === undefined).map((f) => f.kind);
      for (const kind of seq.expects) expect(reported).toContain(kind);
      if (seq.expects.length === 0) expect(whole.findings).toEqual([]);
      for (let at = 0; at <= seq.spans.length; at++) {
        const split = restartedAt(seq, at);
        expect({ at, ...split }).toEqual({ at, ...whole });
      }
    });
  }

  it('restarts twice, and a restart of a restored detector, change nothing either', () => {
    const seq = SEQUENCES[1]!;
    const whole = uninterrupted(seq);
    const findings: Finding[] = [];
    const thirds = [0, 1, 2, 3].map((i) => Math.floor((seq.spans.length * i) / 3));
    let d = new Detector({ ...seq.init, onFinding: (f) => findings.push(f) });
    for (let i = 0; i < 3; i++) {
      feed(d, seq.spans.slice(thirds[i], thirds[i + 1]));
      const next = new Detector({ ...seq.init, onFinding: (f) => findings.push(f) });
      next.importState(saved(d));
      d = next;
    }
    d.flush();
    expect({ findings, stats: d.stats() }).toEqual(whole);
  });

  it('without the state, the same restart splits a poll from its reattach, which then counts as an attempt', () => {
    // The loss the quiet streams in the state prevent: the restarted detector sees bare reattaches.
    const spans = SEQUENCES[3]!.spans;
    const findings: Finding[] = [];
    const before = new Detector({ onFinding: (f) => findings.push(f) });
    const after = new Detector({ onFinding: (f) => findings.push(f) });
    feed(before, spans.slice(0, spans.length / 2));
    feed(after, spans.slice(spans.length / 2));
    after.flush();
    expect(findings.map((f) => f.kind)).toContain(FindingKind.RECONNECT_STORM);
  });
});

describe('state codec: the file holds named fields, not the implementation', () => {
  function busy(): Detector {
    const d = new Detector({ maxRequests: 3 });
    // The eviction sequence up to its last span: "old" was touched again, "mid" evicted by "fourth"
    // and come back, evicting "new".
    feed(d, SEQUENCES[SEQUENCES.length - 1]!.spans.slice(0, -1));
    return d;
  }

  it('writes the requests in LRU order by their identity, each persisted field of the schema by name', () => {
    const state = busy().exportState();
    expect(state.format).toBe(STATE_FORMAT);
    expect(state.requests.sessionIds).toEqual(['old', 'fourth', 'mid']);
    const persisted = (fields: readonly string[]) =>
      fields.filter((f) => REQUEST_FIELDS[f as keyof typeof REQUEST_FIELDS].persisted).sort();
    expect(Object.keys(state.requests.hot).sort()).toEqual(persisted(HOT_FIELDS));
    expect(Object.keys(state.requests.cold).sort()).toEqual(persisted(COLD_FIELDS));
    expect(state.requests.flagNames).toEqual(FLAGS);
    // Only "old" was reattached: one cold row, in the file as its request's index.
    expect([...state.requests.coldRequests]).toEqual([0]);
    expect(state.requests.cold.episodeAttempts).toEqual(new Uint32Array([3]));
  });

  it('holds no hash bucket, LRU link, cold-row number or private name', () => {
    const keys = new Set<string>();
    const walk = (v: unknown): void => {
      if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v)) return;
      for (const [k, x] of Object.entries(v)) {
        if (!Array.isArray(v)) keys.add(k);
        walk(x);
      }
    };
    walk(busy().exportState());
    for (const name of [
      'buckets',
      'bucketMask',
      'prev',
      'next',
      'head',
      'tail',
      'freeList',
      'coldRow',
      'coldFree',
      'cur',
      'old',
    ])
      expect(keys).not.toContain(name);
  });

  it('loads a file whose flags are named in another order, each bit by its name', () => {
    const seq = SEQUENCES[0]!;
    const whole = uninterrupted(seq);
    const at = 6;
    const findings: Finding[] = [];
    const before = new Detector({ onFinding: (f) => findings.push(f) });
    feed(before, seq.spans.slice(0, at));
    const state = saved(before);
    // Reverse the file's bit order: flag i of the file is FLAGS[n - 1 - i].
    const n = FLAGS.length;
    state.requests.flagNames = [...FLAGS].reverse();
    const flags = state.requests.hot.flags as Uint32Array;
    flags.forEach((v, i) => {
      let out = 0;
      for (let bit = 0; bit < n; bit++) if (v & (1 << bit)) out |= 1 << (n - 1 - bit);
      flags[i] = out >>> 0;
    });
    const after = new Detector({ onFinding: (f) => findings.push(f) });
    after.importState(state);
    feed(after, seq.spans.slice(at));
    after.flush();
    expect(findings).toEqual(whole.findings);
  });
});

describe('state codec: refusals', () => {
  function state(init: DetectorInit = {}): DetectorState {
    const d = new Detector(init);
    feed(d, seedScenario(a, 3));
    // A pending re-issue of the 2026-07-28 era, of the same service.
    feed(d, reissued(1, T0 + 10_000, undefined));
    return saved(d);
  }

  const cases: [string, (s: DetectorState) => unknown, string][] = [
    ['another format', (s) => ({ ...s, format: 3 }), `state format 3, expected ${STATE_FORMAT}`],
    [
      'the old format, by its fields',
      () => ({ format: 3, table: {}, spanIds: {} }),
      `state format 3, expected ${STATE_FORMAT}`,
    ],
    ['not a record', () => 'nonsense', 'state field state is not a record'],
    [
      'a missing field',
      (s) => {
        delete (s.requests.hot as Record<string, unknown>).flags;
        return s;
      },
      'state has no field requests.hot.flags',
    ],
    ['a missing part', (s) => ({ ...s, quietStreams: undefined }), 'state field quietStreams is not a record'],
    [
      'an absent part',
      (s) => {
        delete (s as Partial<DetectorState>).quietStreams;
        return s;
      },
      'state has no field quietStreams',
    ],
    [
      'an unknown field',
      (s) => {
        s.requests.cold.buckets = new Uint32Array(0);
        return s;
      },
      'state has an unknown field requests.cold.buckets',
    ],
    ['an unknown part', (s) => ({ ...s, table: {} }), 'state has an unknown field table'],
    [
      'a mistyped column',
      (s) => {
        s.requests.hot.flags = new Float64Array(s.requests.hot.flags!.length);
        return s;
      },
      'state field requests.hot.flags is not a Uint32Array of 1 values',
    ],
    [
      'a column of the wrong length',
      (s) => {
        s.requests.cold.attemptRing = new Float64Array(2);
        return s;
      },
      'state field requests.cold.attemptRing is not a Float64Array of 3 values',
    ],
    [
      'an unknown flag',
      (s) => {
        s.requests.flagNames = [...s.requests.flagNames.slice(1), 'reported:eras'];
        return s;
      },
      'state has an unknown flag reported:eras',
    ],
    [
      'a missing flag',
      (s) => {
        s.requests.flagNames = s.requests.flagNames.slice(1);
        return s;
      },
      `state has no flag ${FLAGS[0]}`,
    ],
    [
      'a request twice',
      (s) => {
        s.requests.sessionIds.push(s.requests.sessionIds[0]!);
        s.requests.requestIds.push(s.requests.requestIds[0]!);
        return s;
      },
      'state field requests.services is not a Uint32Array of 2 values',
    ],
    [
      'a service index out of range',
      (s) => {
        s.requests.services[0] = 7;
        return s;
      },
      'state field requests.services is not an index below 1',
    ],
    [
      'an open storm out of range',
      (s) => ({ ...s, openStorms: [5] }),
      'state field openStorms is not an index below 1',
    ],
    [
      'a mistyped count',
      (s) => ({ ...s, counts: { ...s.counts, spans: { ...s.counts.spans, [SpanReceivedResult.ACCEPTED]: '3' } } }),
      `state field counts.spans.${SpanReceivedResult.ACCEPTED} is not a number`,
    ],
    [
      'an unknown fate of a re-issued first attempt',
      (s) => {
        s.reissues.fates[0] = 7;
        return s;
      },
      'state field reissues.fates holds an unknown fate 7',
    ],
    [
      'a re-issue of a service out of range',
      (s) => {
        s.reissues.services[0] = 3;
        return s;
      },
      'state field reissues.services is not an index below 1',
    ],
    [
      'a missing re-issue column',
      (s) => {
        delete (s.reissues as Partial<DetectorState['reissues']>).settleTimes;
        return s;
      },
      'state has no field reissues.settleTimes',
    ],
    [
      'other options',
      (s) => ({ ...s, options: { ...s.options, stormThreshold: 4 } }),
      'state was kept with stormThreshold=4, this detector has 3',
    ],
  ];

  for (const [what, spoil, message] of cases) {
    it(`refuses ${what} in one line, and stays empty`, () => {
      const d = new Detector();
      const bad = spoil(state());
      expect(() => d.importState(bad as DetectorState)).toThrow(new StateMismatchError(message));
      expect(message).not.toMatch(/\n/);
      expect(d.stats().tracked).toBe(0);
      // The refusal left nothing behind: a good state still loads.
      d.importState(state());
      expect(d.stats().tracked).toBe(1);
    });
  }

  it('refuses a request held twice', () => {
    const s = state();
    s.requests.sessionIds.push(s.requests.sessionIds[0]!);
    s.requests.requestIds.push(s.requests.requestIds[0]!);
    s.requests.services = new Uint32Array([0, 0]);
    s.requests.incarnations = new Uint32Array([1, 1]);
    s.requests.hot = Object.fromEntries(
      Object.entries(s.requests.hot).map(([k, v]) => {
        const twice = new (v.constructor as new (n: number) => Float64Array | Uint32Array)(v.length * 2);
        twice.set(v);
        twice.set(v, v.length);
        return [k, twice];
      }),
    );
    expect(() => new Detector().importState(s)).toThrow('state field requests holds a request twice');
  });

  it('refuses a detector that has seen spans', () => {
    const d = new Detector();
    d.ingest(terminal(b, T0, 'A'));
    expect(() => d.importState(state())).toThrow('importState needs a detector that has seen no span');
  });

  it('keeps retractions: a retracted finding is not retracted twice after a restart', () => {
    const empty = resume(a, T0, 'B', 'A', {
      observed: false,
      outcome: ResumeOutcome.EMPTY_REPLAY,
      evidence: ResumeEvidence.DEADLINE,
      replayed: 0,
    });
    const findings: Finding[] = [];
    const before = new Detector({ onFinding: (f) => findings.push(f) });
    feed(before, [empty, terminal(a, T0 + 100, 'B')]);
    const after = new Detector({ onFinding: (f) => findings.push(f) });
    after.importState(saved(before));
    feed(after, [terminal(a, T0 + 200, 'C')]);
    expect(findings.filter((f) => f.record === FindingRecord.RETRACTION)).toHaveLength(1);
  });
});
