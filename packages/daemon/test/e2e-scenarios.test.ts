import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ErrorType } from '@resumewatch/instrumentation';
import type { GuardOptions } from '@resumewatch/instrumentation';
import { runScenario } from '@resumewatch/lab';
import type { FetchLike, ScenarioClient, ScenarioName, ScenarioSummary } from '@resumewatch/lab';
import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_FOREIGN,
  FindingKind,
  FindingRecord,
  GuardAction,
  RequestRecovery,
  ResumeEvidence,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
  StormEnd,
  StreamKind,
} from '@resumewatch/semconv';
import type { Finding } from '@resumewatch/detector';
import { afterEach, describe, expect, it } from 'vitest';
import { startRig } from './helpers/lab-rig.js';
import { waitFor } from '../../detector/test/helpers/wait.js';
import type { Protocol, Rig, RigOptions } from './helpers/lab-rig.js';

// The scenarios of issues 9 and 12, end to end: the lab's SDK server over loopback, the scenario's
// client (raw, SDK 1.x, SDK v2) through `instrumentFetch` (with and without the guard), the real OTLP
// exporters, an in-process `resumewatch serve`. Each case checks that the lab (what the client got),
// the guard (its callbacks), the instrumentation (its spans) and the detector (its findings) agree.

const TIMEOUT = 60_000;
const LAB_SERVER = '127.0.0.1';

const rigs: Rig[] = [];
afterEach(async () => {
  await Promise.allSettled(rigs.splice(0).map((r) => r.close()));
});

/** What the guard told the application, by callback, in a form a test can compare exactly. */
interface GuardLog {
  failed: string[];
  conflicting: Array<{
    requestId: string;
    delivered: string | undefined;
    conflicting: string | undefined;
    sameStream: boolean;
    foreign: boolean;
    removed: boolean;
  }>;
  dropped: string[];
  refused: string[];
  /** Every verdict on a resumed stream: `request:outcome/evidence/decision`. */
  decisions: string[];
}

interface Observed {
  rig: Rig;
  summary: ScenarioSummary;
  /** Finding kinds (records excluded), sorted, of every session of the scenario. */
  kinds: string[];
  findings: Finding[];
  /** Records (`storm_ended`, `retraction`) as `kind:record`. */
  records: string[];
  guard: GuardLog;
  /** Resume spans: `request:kind:outcome/evidence:guard action`. */
  resumes: string[];
  /** Terminal spans of tool calls that were foreign or conflicting: `request:foreign|conflict:guard action`. */
  defects: string[];
  /** error.type of every tools/call span, sorted ('' for none). */
  toolCallErrors: string[];
}

function guardOptions(log: GuardLog): GuardOptions {
  return {
    onFailedResumption: (r) => void log.failed.push(`${r.requestId}:${r.outcome}/${r.evidence}`),
    onConflictingTerminal: (r) =>
      void log.conflicting.push({
        requestId: r.requestId,
        delivered: r.delivered.eventId,
        conflicting: r.conflicting.eventId,
        sameStream: r.delivered.streamId === r.conflicting.streamId,
        foreign: r.foreign,
        removed: r.removed,
      }),
    onDuplicateTerminalDropped: (r) => void log.dropped.push(`${r.requestId}:${r.foreign ? 'foreign' : 'own'}`),
    onResumeRefused: (r) => void log.refused.push(r.requestIds.join(',')),
    onResumeDecision: (r) => void log.decisions.push(`${r.requestId ?? '-'}:${r.outcome}/${r.evidence}/${r.decision}`),
  };
}

const str = (value: unknown): string => (value === undefined ? '-' : String(value));

/** Starts a client-side rig (guard or not), and collects the guard's callbacks and the exported spans. */
async function rigFor(
  guarded: boolean,
  protocol: Protocol,
  requestTimeoutMs?: number,
): Promise<{ rig: Rig; guard: GuardLog; spans: ReadableSpan[] }> {
  const guard: GuardLog = { failed: [], conflicting: [], dropped: [], refused: [], decisions: [] };
  const spans: ReadableSpan[] = [];
  const options: RigOptions = {
    guard: guarded ? guardOptions(guard) : undefined,
    tee: (batch) => void spans.push(...batch),
    requestTimeoutMs,
  };
  const rig = await startRig('client', protocol, options);
  rigs.push(rig);
  return { rig, guard, spans };
}

/** Lets every span reach the detector; the storm window is passed (`advance`) so storms end. */
async function settleFully(rig: Rig): Promise<void> {
  await rig.settle();
  // A span that ended while the first flush ran is in before the exact checks.
  await rig.settle();
}

function observed(rig: Rig, summary: ScenarioSummary, guard: GuardLog, spans: readonly ReadableSpan[]): Observed {
  const findings = rig.findings();
  return {
    rig,
    summary,
    findings,
    kinds: [...new Set(findings.filter((f) => f.record === undefined).map((f) => f.kind))].sort(),
    records: findings.filter((f) => f.record !== undefined).map((f) => `${f.kind}:${f.record}`),
    guard,
    resumes: spans
      .filter((s) => s.name === SPAN_STREAM_RESUME)
      .map(
        (s) =>
          `${str(s.attributes[ATTR_JSONRPC_REQUEST_ID])}:${str(s.attributes[ATTR_MCP_STREAM_KIND])}:${str(s.attributes[ATTR_MCP_RESUME_OUTCOME])}/${str(s.attributes[ATTR_MCP_RESUME_EVIDENCE])}:${str(s.attributes[ATTR_MCP_GUARD_ACTION])}`,
      ),
    defects: spans
      .filter(
        (s) =>
          s.name === SPAN_REQUEST_TERMINAL &&
          (s.attributes[ATTR_MCP_TERMINAL_FOREIGN] === true || s.attributes[ATTR_MCP_TERMINAL_CONFLICT] === true),
      )
      .map(
        (s) =>
          `${str(s.attributes[ATTR_JSONRPC_REQUEST_ID])}:${s.attributes[ATTR_MCP_TERMINAL_FOREIGN] === true ? 'foreign' : 'conflict'}:${str(s.attributes[ATTR_MCP_GUARD_ACTION])}`,
      ),
    toolCallErrors: spans
      .filter((s) => s.name.startsWith('tools/call'))
      .map((s) => (s.attributes[ATTR_ERROR_TYPE] === undefined ? '' : String(s.attributes[ATTR_ERROR_TYPE])))
      .sort(),
  };
}

/** Runs one scenario through a fresh rig and returns what every part saw. */
async function observe(
  name: ScenarioName,
  client: ScenarioClient,
  guarded: boolean,
  protocol: Protocol,
  wrap?: (fetch: FetchLike, rig: Rig) => FetchLike,
  awaitKinds: readonly string[] = [],
  requestTimeoutMs?: number,
  resultWaitMs?: number,
): Promise<Observed> {
  const { rig, guard, spans } = await rigFor(guarded, protocol, requestTimeoutMs);
  const fetch = wrap ? wrap(rig.fetch, rig) : rig.fetch;
  const summary = await runScenario(name, {
    serverUrl: rig.lab.url,
    controlUrl: rig.lab.controlUrl,
    fetch,
    maxReconnects: 5,
    client,
    ...(resultWaitMs !== undefined ? { resultWaitMs } : {}),
  });
  await settleFully(rig);
  if (awaitKinds.length > 0) {
    // On a loaded machine the last export can land after the settle: wait for the expected kinds, then
    // settle once more, before the exact checks (which still fail on a missing or an extra finding).
    await waitFor(
      () => awaitKinds.every((k) => rig.findings().some((f) => f.kind === k)),
      `${awaitKinds.join(', ')} for ${name}`,
    );
    await settleFully(rig);
  }
  return observed(rig, summary, guard, spans);
}

const NO_GUARD_REPORT = { failed: [], conflicting: [], dropped: [], refused: [] };
const CLIENTS: readonly ScenarioClient[] = ['raw', 'sdk', 'sdk-v2'];
const PROTOCOLS: readonly Protocol[] = ['json', 'proto', 'grpc'];
/** The OTLP protocol of a case: rotated, so every protocol carries every scenario on some client. */
const protocolOf = (client: ScenarioClient, guarded: boolean): Protocol =>
  PROTOCOLS[(CLIENTS.indexOf(client) + (guarded ? 1 : 0)) % PROTOCOLS.length]!;
const CASES = CLIENTS.flatMap((client) =>
  [false, true].map((guarded) => ({ client, guarded, protocol: protocolOf(client, guarded) })),
);
const label = (c: { client: ScenarioClient; guarded: boolean; protocol: Protocol }): string =>
  `${c.client}, ${c.guarded ? 'guard' : 'no guard'} (OTLP/${c.protocol})`;

describe('quiet-resume: a resumed stream silent for 2.5 s, then the result', () => {
  it.each(CASES)('$client, guard=$guarded', { timeout: TIMEOUT }, async (c) => {
    const o = await observe('quiet-resume', c.client, c.guarded, c.protocol);
    expect(o.kinds, label(c)).toEqual([]);
    expect(o.records).toEqual([]);
    // No verdict while the stream was silent: one continuation, on the message that ended the silence.
    expect(o.resumes).toEqual([`1:${StreamKind.REQUEST}:${ResumeOutcome.CONTINUATION}/${ResumeEvidence.MESSAGE}:-`]);
    expect(o.guard).toMatchObject(NO_GUARD_REPORT);
    expect(o.guard.decisions).toEqual(c.guarded ? ['1:continuation/message/continuation_valid'] : []);
    // The result reached the client exactly once.
    expect(o.summary.resumeStatuses).toEqual([200]);
    expect(o.summary.resultsPerRequest).toEqual({ '1': 1 });
    expect(o.summary.terminalDeliveries).toBe(1);
    if (c.client === 'raw') expect(o.summary.details.quietHeardMs).toBeGreaterThan(2_000);
    else expect(o.summary.details.resultText).toBe('quiet for 2500 ms');
  });
});

/**
 * The polling call's deadline. Twelve polls take 4 to 8 s with two busy processes beside the test on 2
 * cores, close to the rig's 10 s: a call still polling at its deadline is (rightly) lost, and its result
 * then retracts it. A limit for the call, as its SDK's own timeout (60 s) is; this case is not about deadlines.
 */
const POLLING_DEADLINE_MS = 120_000;

describe('polling (SEP-1699): twelve stream closes before the result', () => {
  it.each(CASES)('$client, guard=$guarded', { timeout: TIMEOUT }, async (c) => {
    const o = await observe('polling', c.client, c.guarded, c.protocol, undefined, [], POLLING_DEADLINE_MS);
    expect(o.kinds, label(c)).toEqual([]);
    expect(o.records).toEqual([]);
    expect(o.guard).toMatchObject(NO_GUARD_REPORT);
    // The raw client shows the empty polls (2xx, body ended, polling announced); the SDK runs put a
    // progress update on each poll (the SDKs would otherwise stop reconnecting), so each is a continuation.
    const polls = c.client === 'raw' ? 11 : 0;
    const poll = `1:${StreamKind.REQUEST}:${ResumeOutcome.POLL}/${ResumeEvidence.BODY_END}:-`;
    const continuation = `1:${StreamKind.REQUEST}:${ResumeOutcome.CONTINUATION}/${ResumeEvidence.MESSAGE}:-`;
    expect(o.resumes).toEqual([...Array<string>(polls).fill(poll), ...Array<string>(12 - polls).fill(continuation)]);
    expect(o.guard.decisions).toEqual(
      c.guarded
        ? [
            ...Array<string>(polls).fill('1:poll/body_end/poll_no_action'),
            ...Array<string>(12 - polls).fill('1:continuation/message/continuation_valid'),
          ]
        : [],
    );
    expect(o.summary.resumeStatuses).toEqual(Array<number>(12).fill(200));
    expect(o.summary.resultsPerRequest).toEqual({ '1': 1 });
    expect(o.summary.terminalDeliveries).toBe(1);
  });
});

describe("listening-replay: the store replays both requests' results into the resumed listening stream", () => {
  it.each(CASES)('$client, guard=$guarded', { timeout: TIMEOUT }, async (c) => {
    const o = await observe('listening-replay', c.client, c.guarded, c.protocol, undefined, [
      FindingKind.FOREIGN_REPLAY,
    ]);
    // No client finding (no duplicate_terminal, no resume_after_terminal): the server is blamed.
    expect(o.kinds, label(c)).toEqual([FindingKind.FOREIGN_REPLAY]);
    expect(o.records).toEqual([]);
    expect(o.findings.map((f) => [f.request_id, f.server]).sort()).toEqual([
      ['1', LAB_SERVER],
      ['2', LAB_SERVER],
    ]);
    // The resume is the listening stream's: no request id, a continuation (the replayed messages).
    expect(o.resumes).toEqual([`-:${StreamKind.LISTENING}:${ResumeOutcome.CONTINUATION}/${ResumeEvidence.MESSAGE}:-`]);
    const action = c.guarded ? GuardAction.DUPLICATE_TERMINAL_DROPPED : '-';
    expect(o.defects).toEqual([`1:foreign:${action}`, `2:foreign:${action}`]);
    expect(o.guard).toMatchObject({
      failed: [],
      conflicting: [],
      refused: [],
      dropped: c.guarded ? ['1:foreign', '2:foreign'] : [],
    });
    expect(o.guard.decisions).toEqual(c.guarded ? ['-:continuation/message/continuation_valid'] : []);
    // Without the guard both results reach the client twice (the SDKs report "unknown message ID");
    // with it, once.
    const times = c.guarded ? 1 : 2;
    expect(o.summary.resultsPerRequest).toEqual({ '1': times, '2': times });
    if (c.client !== 'raw')
      expect(o.summary.details.results).toEqual(['notified the listening stream', 'Echo: after the cut']);
  });
});

describe('cancellation: notifications/cancelled, then a transport closed under a request', () => {
  it.each(CASES)('$client, guard=$guarded', { timeout: TIMEOUT }, async (c) => {
    const o = await observe('cancellation', c.client, c.guarded, c.protocol);
    expect(o.kinds, label(c)).toEqual([]);
    expect(o.records).toEqual([]);
    expect(o.resumes).toEqual([]);
    expect(o.guard).toMatchObject(NO_GUARD_REPORT);
    expect(o.guard.decisions).toEqual([]);
    // Both request spans ended at once (the rig's request timeout is 10 s), not at a deadline.
    expect(o.toolCallErrors).toEqual([ErrorType.ABORTED, ErrorType.CANCELLED]);
    expect(o.summary.terminalDeliveries).toBe(0);
    expect(o.summary.resultsPerRequest).toEqual({});
    expect(o.summary.details.notified).toMatchObject({ cancelStatus: 202, terminals: 0 });
  });
});

describe("cross-session-store: session B's result replayed into session A's resumed stream", () => {
  it.each(CASES)('$client, guard=$guarded', { timeout: TIMEOUT }, async (c) => {
    const o = await observe('cross-session-store', c.client, c.guarded, c.protocol, undefined, [
      FindingKind.CONFLICTING_TERMINAL,
    ]);
    // A server defect, reported with and without the guard; never a client duplicate.
    expect(o.kinds, label(c)).toEqual([FindingKind.CONFLICTING_TERMINAL]);
    expect(o.records).toEqual([]);
    expect(o.findings).toHaveLength(1);
    expect(o.findings[0]).toMatchObject({ session_id: o.summary.sessionId, request_id: '1', server: LAB_SERVER });
    expect(o.resumes).toEqual([`1:${StreamKind.REQUEST}:${ResumeOutcome.CONTINUATION}/${ResumeEvidence.MESSAGE}:-`]);
    expect(o.defects).toEqual([`1:conflict:${c.guarded ? GuardAction.CONFLICTING_TERMINAL_REPORTED : '-'}`]);
    expect(o.guard).toMatchObject({ failed: [], dropped: [], refused: [] });
    // A got B's result first (nothing on the wire can tell it is B's); its own result conflicts with it.
    // The guard removes A's own result and tells the application which one it holds.
    if (c.guarded) {
      expect(o.guard.conflicting).toHaveLength(1);
      expect(o.guard.conflicting[0]).toMatchObject({ requestId: '1', sameStream: true, foreign: false, removed: true });
      expect(o.guard.conflicting[0]!.delivered).not.toBe(o.guard.conflicting[0]!.conflicting);
      if (c.client === 'raw')
        expect(o.guard.conflicting[0]!.delivered).toBe((o.summary.details.terminalEventIdsOnResume as string[])[0]);
      expect(o.guard.decisions).toEqual(['1:continuation/message/continuation_valid']);
    } else {
      expect(o.guard.conflicting).toEqual([]);
    }
    expect(o.summary.details.sessionAReceivedSessionBResult).toBe(true);
    expect(o.summary.details.conflictingTerminals).toBe(!c.guarded);
    expect(o.summary.resultsPerRequest).toEqual({ '1': c.guarded ? 1 : 2 });
    if (c.client !== 'raw') expect(o.summary.details.resolvedWith).toBe('Echo: from session B');
  });
});

describe('resume-loses-result: the resume replays the missed progress; the result goes to a stream no connection holds', () => {
  it.each(CASES)('$client, guard=$guarded', { timeout: TIMEOUT }, async (c) => {
    // The request's deadline (3 s) passes while the client still waits (5 s: its wait, or its SDK's
    // timeout), and late enough for the replayed progress to arrive on a loaded machine.
    const o = await observe(
      'resume-loses-result',
      c.client,
      c.guarded,
      c.protocol,
      undefined,
      [FindingKind.LOST_RESULT],
      3_000,
      5_000,
    );
    expect(o.kinds, label(c)).toEqual([FindingKind.LOST_RESULT]);
    expect(o.records).toEqual([]);
    const requestId = String(o.summary.details.requestId);
    expect(o.findings[0]).toMatchObject({
      session_id: o.summary.sessionId,
      request_id: requestId,
      recovery: RequestRecovery.RESUMED,
      outcome: ResumeOutcome.PARTIAL_REPLAY,
      request_end: ErrorType.TIMEOUT,
    });
    // A continuation by every rule of the wire, decided again at the request's deadline: a partial replay.
    // (The guard's report and the span are both taken at the deadline: which comes first is not asserted.)
    expect(o.resumes.map((r) => r.split(':').slice(0, 3).join(':'))).toEqual([
      `${requestId}:${StreamKind.REQUEST}:${ResumeOutcome.PARTIAL_REPLAY}/${ResumeEvidence.DEADLINE}`,
    ]);
    expect(o.toolCallErrors).toEqual([ErrorType.TIMEOUT]);
    expect(o.guard).toMatchObject({
      failed: c.guarded ? [`${requestId}:${ResumeOutcome.PARTIAL_REPLAY}/${ResumeEvidence.DEADLINE}`] : [],
      conflicting: [],
      dropped: [],
      refused: [],
    });
    expect(o.guard.decisions).toEqual(c.guarded ? [`${requestId}:continuation/message/continuation_valid`] : []);
    expect(o.summary.resumeStatuses).toEqual([200]);
    expect(o.summary.terminalDeliveries).toBe(0);
    expect(o.summary.details.resultLost).toBe(true);
  });
});

describe('endless-loop: a never-evicting store, the seed loop stopped only by the client cap', () => {
  it('raw, no guard (OTLP/JSON): the signature arrives while the loop still runs', { timeout: TIMEOUT }, async () => {
    let resumes = 0;
    let signatureBeforeResume: number | undefined;
    // Holds the loop's last resume until the detector has the signature: were the signature reported
    // only when the storm ends (eviction, quiet), it could never arrive while the loop is held.
    const holdLastResume =
      (inner: FetchLike, rig: Rig): FetchLike =>
      async (input, init) => {
        // The raw seed client's only GETs are its resumes (it opens no listening stream).
        if ((init?.method ?? 'GET') === 'GET' && ++resumes === 5) {
          await rig.provider.forceFlush();
          await waitFor(
            () => rig.findings().some((f) => f.kind === FindingKind.SIGNATURE),
            'the signature while the loop runs',
            10_000,
          );
          signatureBeforeResume = resumes;
        }
        return inner(input, init);
      };
    const o = await observe('endless-loop', 'raw', false, 'json', holdLastResume);
    expect(signatureBeforeResume).toBe(5);
    expect(o.kinds).toEqual([
      FindingKind.DUPLICATE_TERMINAL,
      FindingKind.RECONNECT_STORM,
      FindingKind.RESUME_AFTER_TERMINAL,
      FindingKind.SIGNATURE,
    ]);
    expect(o.findings.filter((f) => f.kind === FindingKind.SIGNATURE)).toHaveLength(1);
    // How the storm ended comes apart, once the window passed (the rig advances the clock): quietly,
    // as nothing was ever evicted.
    expect(o.records).toEqual([`${FindingKind.RECONNECT_STORM}:${FindingRecord.STORM_ENDED}`]);
    expect(o.findings.find((f) => f.record === FindingRecord.STORM_ENDED)).toMatchObject({
      ended_by: StormEnd.QUIET,
      ended_by_eviction: false,
    });
    expect(o.summary.details.stoppedBecause).toBe('max-reconnects');
    expect(o.summary.resumeStatuses).toEqual([200, 200, 200, 200, 200]);
    expect(o.summary.terminalDeliveries).toBe(6);
    expect(new Set(o.summary.details.terminalEventIds as string[]).size).toBe(1);
    expect(o.guard.decisions).toEqual([]);
  });

  it(
    'raw, guard (OTLP/protobuf): the first resume after the result is refused, no finding',
    { timeout: TIMEOUT },
    async () => {
      const o = await observe('endless-loop', 'raw', true, 'proto');
      expect(o.kinds).toEqual([]);
      expect(o.records).toEqual([]);
      expect(o.guard).toMatchObject({ failed: [], conflicting: [], dropped: [], refused: ['1'] });
      expect(o.resumes).toEqual([
        `1:${StreamKind.REQUEST}:${ResumeOutcome.ERROR}/${ResumeEvidence.STATUS}:${GuardAction.RESUME_REFUSED}`,
      ]);
      expect(o.summary.details.stoppedBecause).toBe('resume-rejected');
      expect(o.summary.resumeStatuses).toEqual([]);
      expect(o.summary.terminalDeliveries).toBe(1);
    },
  );
});
