import { runLoad, runScenario } from '@resumewatch/lab';
import type { ScenarioName, ScenarioSummary } from '@resumewatch/lab';
import {
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ErrorType,
  FindingKind,
  FindingRecord,
  RequestRecovery,
  ResumeEvidence,
  ResumeOutcome,
  StormEnd,
} from '@resumewatch/semconv';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startRig } from './helpers/lab-rig.js';
import { waitFor } from '../../detector/test/helpers/wait.js';
import type { Protocol, Rig, RigOptions, Side } from './helpers/lab-rig.js';

// Every part is real: the lab's SDK server over loopback HTTP, the instrumentation, the OpenTelemetry
// SDK and its OTLP exporters (JSON, protobuf, gRPC) and a `resumewatch serve` listening on free ports.

const SEED = [
  FindingKind.DUPLICATE_TERMINAL,
  FindingKind.RESUME_AFTER_TERMINAL,
  FindingKind.RECONNECT_STORM,
  FindingKind.SIGNATURE,
];
const TIMEOUT = 90_000;

const rigs: Rig[] = [];
async function rig(side: Side, protocol: Protocol, options?: RigOptions): Promise<Rig> {
  const r = await startRig(side, protocol, options);
  rigs.push(r);
  return r;
}
afterEach(async () => {
  await Promise.allSettled(rigs.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  await Promise.allSettled(rigs.splice(0).map((r) => r.close()));
});

const sorted = (kinds: Iterable<string>): string[] => [...new Set(kinds)].sort();

/** Runs one scenario through the rig and checks the exact set of finding kinds for its session. */
async function expectFindings(r: Rig, name: ScenarioName, expected: readonly string[]): Promise<ScenarioSummary> {
  const summary = await runScenario(name, {
    serverUrl: r.lab.url,
    controlUrl: r.lab.controlUrl,
    fetch: r.fetch,
    maxReconnects: 10,
  });
  await r.settle();
  const kinds = () => sorted(r.findings(summary.sessionId).map((f) => f.kind));
  await waitFor(() => expected.every((k) => kinds().includes(k)), `${expected.join(', ') || 'no finding'} for ${name}`);
  // Anything still in flight (a span that ended while the first flush ran) is in before the exact check.
  await r.settle();
  expect(r.detector.detector.stats().spans.accepted).toBeGreaterThan(0);
  expect(kinds()).toEqual(sorted(expected));
  return summary;
}

/** seed-loop: the whole signature; whether its storm ended by eviction depends on which side's spans show the lab's 404. */
async function expectSeedLoop(r: Rig, endedByEviction: boolean): Promise<void> {
  const summary = await expectFindings(r, 'seed-loop', SEED);
  expect(summary.resumeStatuses.at(-1)).toBe(404);
  // How the storm ended is its storm_ended record (the signature came as soon as it was complete).
  await waitFor(
    () => r.findings(summary.sessionId).some((f) => f.record === FindingRecord.STORM_ENDED),
    'storm_ended record for seed-loop',
  );
  expect(r.findings(summary.sessionId).filter((f) => f.record === FindingRecord.STORM_ENDED)).toMatchObject([
    {
      kind: FindingKind.RECONNECT_STORM,
      ended_by: endedByEviction ? StormEnd.EVICTED : StormEnd.QUIET,
      ended_by_eviction: endedByEviction,
    },
  ]);
  expect(r.findings(summary.sessionId).filter((f) => f.kind === FindingKind.SIGNATURE)).toHaveLength(1);
}

async function healthyLoad(r: Rig): Promise<void> {
  const report = await runLoad('healthy', {
    serverUrl: r.lab.url,
    controlUrl: r.lab.controlUrl,
    fetch: r.fetch,
    clients: 3,
    durationMs: 1_500,
  });
  expect(report.failures).toBe(0);
  expect(report.runs).toBeGreaterThanOrEqual(3);
  await r.settle();
  expect(r.detector.detector.stats().spans.accepted).toBeGreaterThan(0);
  expect(r.findings()).toEqual([]);
}

describe('client spans (instrumentFetch) through real OTLP exporters to resumewatch serve', () => {
  it(
    'seed-loop (OTLP/JSON): duplicate_terminal, resume_after_terminal, reconnect_storm, signature',
    { timeout: TIMEOUT },
    async () => {
      // The lab's 404 is the eviction that ends the storm.
      await expectSeedLoop(await rig('client', 'json'), true);
    },
  );

  it('per-stream-dedup (OTLP/protobuf): the seed signature', { timeout: TIMEOUT }, async () => {
    await expectFindings(await rig('client', 'proto'), 'per-stream-dedup', SEED);
  });

  it('network-cut (OTLP/JSON): a valid continuation, no finding', { timeout: TIMEOUT }, async () => {
    const summary = await expectFindings(await rig('client', 'json'), 'network-cut', []);
    expect(summary.details.everyEventExactlyOnce).toBe(true);
  });

  it(
    'server-restart (OTLP/protobuf): ambiguous_empty_replay, evidence deadline: the polled request never got its result',
    { timeout: TIMEOUT },
    async () => {
      // SEP-1699: the lab server primes its streams, so the resume that ends clean and empty is a valid
      // poll by itself; the instrumentation holds it until the request's fate decides, and the deadline
      // (2 s here) passes while the client still waits for its result (the scenario's resultWaitMs, 3 s).
      const r = await rig('client', 'proto', { requestTimeoutMs: 2_000 });
      const summary = await expectFindings(r, 'server-restart', [FindingKind.AMBIGUOUS_EMPTY_REPLAY]);
      expect(summary.details.emptyReplayOnUnfinishedRequest).toBe(true);
      expect(r.findings(summary.sessionId)).toMatchObject([
        {
          kind: FindingKind.AMBIGUOUS_EMPTY_REPLAY,
          request_id: String(summary.details.requestId),
          outcome: ResumeOutcome.EMPTY_REPLAY,
          status_code: 200,
        },
      ]);
      // The finding rests on the held poll, emitted at the deadline with that evidence.
      const resumes = r
        .resumeSpans()
        .map((s) => [s.attributes[ATTR_MCP_RESUME_OUTCOME], s.attributes[ATTR_MCP_RESUME_EVIDENCE]]);
      expect(resumes).toEqual([[ResumeOutcome.EMPTY_REPLAY, ResumeEvidence.DEADLINE]]);
    },
  );

  it('cursor-evicted (OTLP/gRPC): cursor_lost', { timeout: TIMEOUT }, async () => {
    await expectFindings(await rig('client', 'grpc'), 'cursor-evicted', [FindingKind.CURSOR_LOST]);
  });

  it('sdk-error-resume (OTLP/JSON): resume_after_terminal', { timeout: TIMEOUT }, async () => {
    await expectFindings(await rig('client', 'json'), 'sdk-error-resume', [FindingKind.RESUME_AFTER_TERMINAL]);
  });

  it('steady healthy load (OTLP/protobuf): no finding', { timeout: TIMEOUT }, async () => {
    await healthyLoad(await rig('client', 'proto'));
  });

  it(
    'resume-loses-result (OTLP/gRPC): lost_result; the resume replayed progress, then the deadline passed without the result',
    { timeout: TIMEOUT },
    async () => {
      // The request's deadline (3 s) passes while the client still waits on the resumed stream (3 s from
      // the resume, about 0.5 s into the call), late enough for the replay to arrive on a loaded machine.
      const r = await rig('client', 'grpc', { requestTimeoutMs: 3_000 });
      const summary = await expectFindings(r, 'resume-loses-result', [FindingKind.LOST_RESULT]);
      expect(summary.details.resultLost).toBe(true);
      expect(r.findings(summary.sessionId)).toMatchObject([
        {
          kind: FindingKind.LOST_RESULT,
          request_id: String(summary.details.requestId),
          recovery: RequestRecovery.RESUMED,
          outcome: ResumeOutcome.PARTIAL_REPLAY,
          request_end: ErrorType.TIMEOUT,
        },
      ]);
      // Not counted as a continuation: the resume was decided at the request's deadline.
      const resumes = r
        .resumeSpans()
        .map((s) => [s.attributes[ATTR_MCP_RESUME_OUTCOME], s.attributes[ATTR_MCP_RESUME_EVIDENCE]]);
      expect(resumes).toEqual([[ResumeOutcome.PARTIAL_REPLAY, ResumeEvidence.DEADLINE]]);
    },
  );
});

describe('server spans alone (instrumentEventStore, instrumentServerTransport on the lab server; plain client)', () => {
  it(
    'seed-loop (OTLP/gRPC): the whole signature, from replays of a stored terminal',
    { timeout: TIMEOUT },
    async () => {
      // The lab's 404 is answered before any store replay: the storm ends when its window passes.
      await expectSeedLoop(await rig('server', 'grpc'), false);
    },
  );

  it('per-stream-dedup (OTLP/JSON): the whole signature', { timeout: TIMEOUT }, async () => {
    await expectFindings(await rig('server', 'json'), 'per-stream-dedup', SEED);
  });

  it('network-cut (OTLP/protobuf): no finding', { timeout: TIMEOUT }, async () => {
    await expectFindings(await rig('server', 'proto'), 'network-cut', []);
  });

  it(
    'server-restart (OTLP/JSON): no finding, the restarted server cannot name the request its lost buffer served',
    { timeout: TIMEOUT },
    async () => {
      await expectFindings(await rig('server', 'json'), 'server-restart', []);
    },
  );

  it(
    'cursor-evicted (OTLP/protobuf): no finding, the evicted cursor is answered before the store replays',
    { timeout: TIMEOUT },
    async () => {
      await expectFindings(await rig('server', 'proto'), 'cursor-evicted', []);
    },
  );

  it('sdk-error-resume (OTLP/gRPC): resume_after_terminal', { timeout: TIMEOUT }, async () => {
    await expectFindings(await rig('server', 'grpc'), 'sdk-error-resume', [FindingKind.RESUME_AFTER_TERMINAL]);
  });

  it('steady healthy load (OTLP/JSON): no finding', { timeout: TIMEOUT }, async () => {
    await healthyLoad(await rig('server', 'json'));
  });

  it(
    'resume-loses-result (OTLP/JSON): no finding, the server saw a replay that continued and sent the result',
    { timeout: TIMEOUT },
    async () => {
      await expectFindings(await rig('server', 'json'), 'resume-loses-result', []);
    },
  );

  it(
    'polling (OTLP/protobuf): no finding; the result, stored while the client was between polls, is first delivered by the last poll',
    { timeout: TIMEOUT },
    async () => {
      const r = await rig('server', 'proto');
      const summary = await expectFindings(r, 'polling', []);
      expect(summary.terminalDeliveries).toBe(1);
      const polls = summary.reconnects;
      expect(polls).toBeGreaterThanOrEqual(10);
      // Every poll is a replay span; only the last one carries the result, and no replay follows it.
      const resumes = r
        .resumeSpans()
        .map((s) => [
          s.attributes[ATTR_MCP_RESUME_OUTCOME],
          s.attributes[ATTR_MCP_RESUME_REPLAYED_TERMINAL],
          s.attributes[ATTR_MCP_REQUEST_TERMINAL_OBSERVED],
        ]);
      expect(resumes).toHaveLength(polls);
      expect(resumes.at(-1)).toEqual([ResumeOutcome.CONTINUATION, true, false]);
      expect(resumes.filter(([, replayed, observed]) => replayed === true || observed === true)).toHaveLength(1);
    },
  );
});
