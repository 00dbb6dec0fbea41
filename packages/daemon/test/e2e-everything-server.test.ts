import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { GuardOptions } from '@resumewatch/instrumentation';
import { connectSdkSession, responsesPerRequest, resumesIn, startFaultProxy } from '@resumewatch/lab';
import type { AbandonedResponse, FaultProxy, SdkSession } from '@resumewatch/lab';
import { startEverythingServer } from '@resumewatch/lab/everything-server';
import type { EverythingServer } from '@resumewatch/lab/everything-server';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_TERMINAL_FOREIGN,
  ErrorType,
  FindingKind,
  GuardAction,
  RequestRecovery,
  ResumeEvidence,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HEADER_LAST_EVENT_ID } from '@resumewatch/wire';
import { startRig } from './helpers/lab-rig.js';
import { waitFor } from '../../detector/test/helpers/wait.js';
import type { Rig } from './helpers/lab-rig.js';

// The official `@modelcontextprotocol/server-everything` (its Streamable HTTP mode and its own event
// store) as a peer the project did not write: the unmodified SDK 1.x client through `instrumentFetch`
// (with and without the guard), the real OTLP exporter, an in-process `resumewatch serve`.

const TIMEOUT = 60_000;
const LONG_RUNNING = 'Long running operation completed. Duration: 0.3 seconds, Steps: 3.';
/**
 * The long operation of the "completed meanwhile" case, in seconds: a progress update each second, the
 * cut after the first, so the call completed meanwhile has 2 s to be stored before this one's result.
 */
const LONG_OPERATION_S = 3;
/** The lost result's operation: a progress update every 0.5 s for a minute, so no result comes in the test. */
const LOST_OPERATION = { duration: 60, steps: 120 };
const LONG_OPERATION = `Long running operation completed. Duration: ${LONG_OPERATION_S} seconds, Steps: 3.`;

let everything: EverythingServer;
let proxy: FaultProxy;
const rigs: Rig[] = [];

beforeAll(async () => {
  everything = await startEverythingServer({ startTimeoutMs: 60_000 });
  // keepUpstream: a cut reaches the client alone, and the server's stream runs on to its end. The only
  // sign this server gives that a cut call's work is done (its events stored, to be replayed).
  proxy = await startFaultProxy({ target: everything.url, keepUpstream: true });
}, 90_000);
afterEach(async () => {
  await Promise.allSettled(rigs.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  await proxy?.close();
  await everything?.stop();
});

interface Client {
  rig: Rig;
  session: SdkSession;
  spans: ReadableSpan[];
  guard: { failed: string[]; conflicting: string[]; dropped: string[]; refused: string[] };
}

/** The first POST response whose client went away after the `before`-th one, once the proxy has it. */
function abandonedPost(before: number): Promise<AbandonedResponse> {
  return waitFor(() => proxy.abandoned.slice(before).find((a) => a.method === 'POST'), 'the cut POST stream', 60_000);
}

/** A fetch that holds every resume (a request carrying Last-Event-ID) until `release` settles. */
function holdingResumes(fetchFn: typeof fetch, release: Promise<void>): typeof fetch {
  return (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    if (new Headers(init?.headers).has(HEADER_LAST_EVENT_ID)) await release;
    return fetchFn(input, init);
  }) as typeof fetch;
}

/**
 * The request deadline where a case is not about deadlines: a limit (each request there ends with its
 * result). The rig's 10 s would report a call that a loaded machine slowed past it as lost.
 */
const HEALTHY_DEADLINE_MS = 120_000;

async function client(
  guarded: boolean,
  holdResumesUntil?: Promise<void>,
  requestTimeoutMs = HEALTHY_DEADLINE_MS,
): Promise<Client> {
  const guard: Client['guard'] = { failed: [], conflicting: [], dropped: [], refused: [] };
  const spans: ReadableSpan[] = [];
  const options: GuardOptions = {
    onFailedResumption: (r) => void guard.failed.push(`${r.requestId}:${r.outcome}`),
    onConflictingTerminal: (r) => void guard.conflicting.push(r.requestId),
    onDuplicateTerminalDropped: (r) => void guard.dropped.push(`${r.requestId}:${r.foreign ? 'foreign' : 'own'}`),
    onResumeRefused: (r) => void guard.refused.push(r.requestIds.join(',')),
  };
  const rig = await startRig('client', guarded ? 'proto' : 'json', {
    guard: guarded ? options : undefined,
    tee: (batch) => void spans.push(...batch),
    requestTimeoutMs,
  });
  rigs.push(rig);
  const fetchFn = holdResumesUntil ? holdingResumes(rig.fetch, holdResumesUntil) : rig.fetch;
  const session = await connectSdkSession('sdk', proxy.url, fetchFn, `everything-${guarded ? 'guarded' : 'plain'}`);
  return { rig, session, spans, guard };
}

async function finish(c: Client): Promise<void> {
  await c.session.terminate();
  await c.session.close();
  await c.rig.settle();
  await c.rig.settle();
  expect(c.rig.detector.detector.stats().spans.accepted).toBeGreaterThan(0);
}

const text = (result: { content?: Array<{ text?: string }> }): string | undefined => result.content?.[0]?.text;
const kinds = (rig: Rig): string[] => [...new Set(rig.findings().map((f) => f.kind))].sort();
const resumeSpans = (spans: readonly ReadableSpan[]): string[] =>
  spans
    .filter((s) => s.name === SPAN_STREAM_RESUME)
    .map(
      (s) =>
        `${String(s.attributes[ATTR_JSONRPC_REQUEST_ID])}:${String(s.attributes[ATTR_MCP_RESUME_OUTCOME])}/${String(s.attributes[ATTR_MCP_RESUME_EVIDENCE])}`,
    );
/** The terminal spans the client's observer marked foreign (replayed to a stream that never carried the request). */
const foreignTerminals = (spans: readonly ReadableSpan[]): ReadableSpan[] =>
  spans.filter((s) => s.name === SPAN_REQUEST_TERMINAL && s.attributes[ATTR_MCP_TERMINAL_FOREIGN] === true);

describe.each([false, true])('the everything server, SDK 1.x client, guard=%s', (guarded) => {
  it(
    'healthy workload: four tool calls, one with progress; every result once, no finding',
    { timeout: TIMEOUT },
    async () => {
      const c = await client(guarded);
      const progress: number[] = [];
      const texts = [
        text(await c.session.callTool('echo', { message: 'one' })),
        text(await c.session.callTool('get-sum', { a: 2, b: 3 })),
        text(
          await c.session.callTool(
            'trigger-long-running-operation',
            { duration: 0.3, steps: 3 },
            { onprogress: (p) => void progress.push(p.progress) },
          ),
        ),
        text(await c.session.callTool('echo', { message: 'two' })),
      ];
      await finish(c);
      expect(texts).toEqual(['Echo: one', 'The sum of 2 and 3 is 5.', LONG_RUNNING, 'Echo: two']);
      expect(progress).toEqual([1, 2, 3]);
      expect(responsesPerRequest(c.session.log)).toEqual({ '1': 1, '2': 1, '3': 1, '4': 1 });
      expect(resumesIn(c.session.log)).toEqual([]);
      expect(c.rig.findings()).toEqual([]);
      expect(c.guard).toEqual({ failed: [], conflicting: [], dropped: [], refused: [] });
    },
  );

  it(
    'cut and resume: the POST stream cut after its first progress update; a continuation, no finding',
    { timeout: TIMEOUT },
    async () => {
      // Priming event + progress 1, then the TCP cut; the SDK resumes after 1 s (no `retry:` from this
      // server), held until the operation (0.3 s) is done at the server: the replay holds progress 2, 3
      // and the result. Were it to come sooner, this server would lose the rest (the lost_result case).
      const abandoned = proxy.abandoned.length;
      const operationDone = abandonedPost(abandoned).then(async (a) => void (await a.upstreamEnded));
      operationDone.catch(() => undefined);
      const c = await client(guarded, operationDone);
      const progress: number[] = [];
      const before = text(await c.session.callTool('echo', { message: 'before' }));
      proxy.armCut({ method: 'POST', afterEvents: 2 });
      const cut = text(
        await c.session.callTool(
          'trigger-long-running-operation',
          { duration: 0.3, steps: 3 },
          { onprogress: (p) => void progress.push(p.progress) },
        ),
      );
      const after = text(await c.session.callTool('echo', { message: 'after' }));
      await finish(c);
      expect([before, cut, after]).toEqual(['Echo: before', LONG_RUNNING, 'Echo: after']);
      expect(proxy.cuts.at(-1)?.eventsForwarded).toBe(2);
      expect(progress).toEqual([1, 2, 3]);
      expect(resumesIn(c.session.log).map((entry) => entry.status)).toEqual([200]);
      expect(responsesPerRequest(c.session.log)).toEqual({ '1': 1, '2': 1, '3': 1 });
      expect(resumeSpans(c.spans)).toEqual([`2:${ResumeOutcome.CONTINUATION}/${ResumeEvidence.MESSAGE}`]);
      expect(c.rig.findings()).toEqual([]);
      expect(c.guard).toEqual({ failed: [], conflicting: [], dropped: [], refused: [] });
    },
  );

  it(
    'cut and resume with a call completed meanwhile: its result is replayed into the resumed stream; the server is blamed',
    { timeout: TIMEOUT },
    async () => {
      // The resume waits for request 3 to complete: without the hold, a loaded machine can take longer
      // than the SDK's reconnection delay (1 s) for the meanwhile call, and request 3's result then
      // arrives live on its own stream and is never replayed. It also waits for the long operation to
      // have ended on the server (its stream, run on by the proxy, ended: its result is in the store, to
      // be replayed). The operation lasts long enough (3 s, 2 s after the cut) for request 3's result to
      // be stored before request 2's, so the replay carries it before request 2's result, which a client
      // may stop reading after.
      let meanwhileDone!: () => void;
      const meanwhileP = new Promise<void>((resolve) => (meanwhileDone = resolve));
      const operationEnded = abandonedPost(proxy.abandoned.length).then(async (a) => void (await a.upstreamEnded));
      operationEnded.catch(() => undefined);
      const c = await client(
        guarded,
        Promise.all([meanwhileP, operationEnded]).then(() => undefined),
      );
      const progress: number[] = [];
      text(await c.session.callTool('echo', { message: 'before' }));
      const cutsBefore = proxy.cuts.length;
      proxy.armCut({ method: 'POST', afterEvents: 2 });
      const cut = c.session.callTool(
        'trigger-long-running-operation',
        { duration: LONG_OPERATION_S, steps: 3 },
        { onprogress: (p) => void progress.push(p.progress) },
      );
      // Once the cut happened (the cursor, progress 1, is stored), and while the cut request waits for
      // its resume (1 s), request 3 runs and completes on its own POST stream.
      await waitFor(() => proxy.cuts.length > cutsBefore, 'the cut');
      const meanwhile = text(await c.session.callTool('echo', { message: 'meanwhile' }));
      meanwhileDone();
      const resumed = text(await cut);
      const after = text(await c.session.callTool('echo', { message: 'after' }));
      // The replayed copy of request 3 comes in the replay's burst, before request 2's result or, when the
      // meanwhile call was stored after it (a loaded machine), after it. The DELETE (finish), after which
      // the client's observer forgets the session, waits until the wire showed it: its terminal span.
      await waitFor(() => foreignTerminals(c.spans).length > 0, "request 3's result replayed on the resumed stream");
      await finish(c);
      // The application got every result once (a promise resolves once; the SDK reports the replayed
      // copy of request 3's result as a response to an unknown id).
      expect([meanwhile, resumed, after]).toEqual(['Echo: meanwhile', LONG_OPERATION, 'Echo: after']);
      expect(progress).toEqual([1, 2, 3]);
      expect(resumeSpans(c.spans)).toEqual([`2:${ResumeOutcome.CONTINUATION}/${ResumeEvidence.MESSAGE}`]);
      // The everything server's store replays every event of the session after the cursor, whatever its
      // stream (the spec forbids it): request 3's result, already delivered on request 3's own POST
      // stream, comes again on request 2's resumed stream. A terminal on a stream that never carried its
      // request is the server's defect (`foreign_replay`, blamed on its address), not the client's
      // `duplicate_terminal` or `resume_after_terminal`: the client resumed request 2, which was not finished.
      expect(kinds(c.rig)).toEqual([FindingKind.FOREIGN_REPLAY]);
      expect(c.rig.findings()).toMatchObject([
        { kind: FindingKind.FOREIGN_REPLAY, request_id: '3', server: '127.0.0.1' },
      ]);
      const foreign = foreignTerminals(c.spans);
      expect(foreign.map((s) => [s.attributes[ATTR_JSONRPC_REQUEST_ID], s.attributes[ATTR_MCP_GUARD_ACTION]])).toEqual([
        ['3', guarded ? GuardAction.DUPLICATE_TERMINAL_DROPPED : undefined],
      ]);
      // Without the guard the copy reaches the SDK (which drops it); with the guard it never does.
      expect(responsesPerRequest(c.session.log)).toEqual({ '1': 1, '2': 1, '3': guarded ? 1 : 2, '4': 1 });
      expect(c.guard).toEqual({ failed: [], conflicting: [], dropped: guarded ? ['3:foreign'] : [], refused: [] });
    },
  );

  it(
    'cut while the operation runs: the resume replays the missed progress, the result never comes: lost_result',
    { timeout: TIMEOUT },
    async () => {
      // The operation (a minute, a progress update every 0.5 s) outlasts the test. The SDK's resume (1 s
      // after the cut, which comes after progress 1) is held until the server has stored an update the
      // client missed; the everything server's store replays it and names the resumed stream after the
      // last event it replayed, so what the operation sends afterwards goes to the POST's stream, which
      // reaches no client. The request's deadline (3 s) passes before the SDK's own timeout (5 s), which
      // then cancels the call.
      const missedOne = abandonedPost(proxy.abandoned.length).then((a) =>
        waitFor(() => a.upstreamEvents > a.eventsForwarded, 'an update the client missed, stored at the server'),
      );
      missedOne.catch(() => undefined);
      const c = await client(
        guarded,
        missedOne.then(() => undefined),
        3_000,
      );
      const progress: number[] = [];
      proxy.armCut({ method: 'POST', afterEvents: 2 });
      const error = await c.session
        .callTool('trigger-long-running-operation', LOST_OPERATION, {
          onprogress: (p) => void progress.push(p.progress),
          timeout: 5_000,
        })
        .then(
          () => undefined,
          (e: unknown) => (e instanceof Error ? e.message : String(e)),
        );
      await c.rig.settle();
      await waitFor(() => c.rig.findings().length > 0, 'the lost result');
      await finish(c);
      expect(error).toMatch(/timed out/i);
      expect(resumesIn(c.session.log).map((entry) => entry.status)).toEqual([200]);
      // More than the update before the cut: the resume replayed what the client missed, not the result.
      expect(progress.length).toBeGreaterThan(1);
      expect(progress.length).toBeLessThan(LOST_OPERATION.steps);
      expect(responsesPerRequest(c.session.log)).toEqual({});
      expect(resumeSpans(c.spans)).toEqual([`1:${ResumeOutcome.PARTIAL_REPLAY}/${ResumeEvidence.DEADLINE}`]);
      expect(kinds(c.rig)).toEqual([FindingKind.LOST_RESULT]);
      expect(c.rig.findings()).toMatchObject([
        {
          kind: FindingKind.LOST_RESULT,
          request_id: '1',
          recovery: RequestRecovery.RESUMED,
          outcome: ResumeOutcome.PARTIAL_REPLAY,
          request_end: ErrorType.TIMEOUT,
        },
      ]);
      expect(c.guard).toEqual({
        failed: guarded ? [`1:${ResumeOutcome.PARTIAL_REPLAY}`] : [],
        conflicting: [],
        dropped: [],
        refused: [],
      });
    },
  );
});
