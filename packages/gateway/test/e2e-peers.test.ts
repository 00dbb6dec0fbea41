import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { connectSdkSession, responsesPerRequest, resumesIn, startFaultProxy, startLabServer } from '@resumewatch/lab';
import type { AbandonedResponse, FaultProxy } from '@resumewatch/lab';
import { startEverythingServer } from '@resumewatch/lab/everything-server';
import type { EverythingServer } from '@resumewatch/lab/everything-server';
import { FindingKind, RequestRecovery } from '@resumewatch/semconv';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FetchLike } from '@resumewatch/wire';
import { HEADER_LAST_EVENT_ID } from '@resumewatch/wire';
import { startSdkServer } from '../../instrumentation/test/helpers/sdk-server.js';
import type { RunningGateway } from '../src/index.js';
import { pythonUnavailable, pythonWithMcp, runPythonClient, startPythonServer } from './helpers/e2e-python.js';
import type { PythonServer } from './helpers/e2e-python.js';
import { gatewayMcpUrl, kindsOf, settleGateway, startTestGateway, waitFor } from './helpers/e2e-rig.js';

// Peers the project did not write, through the gateway: the official everything server (its own
// Streamable HTTP mode and event store) with the unmodified SDK 1.x client, a server built only from
// MCP SDK 1.32 parts with the SDK 1.x and v2 clients, and the Python SDK (mcp 2.3.0) as client and as
// server, in the session era and in the 2026-07-28 era (no sessions, no resumption), where the v2
// client pins 2026-07-28. Healthy traffic passes unchanged and produces no finding.
//
// No TypeScript v2 server: `@modelcontextprotocol/server` 2.x is not in the workspace's lockfile; the
// modern era's server is the Python SDK's, so those cases run only where Python runs.

const TIMEOUT = 40_000;
const LONG_RUNNING = 'Long running operation completed. Duration: 0.3 seconds, Steps: 3.';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/**
 * The request deadline of the healthy cases: a limit, not part of what they test (every request ends
 * with its result, and the gateway's exchanges must all end before the checks). At 10 s, a call that a
 * loaded machine slowed past it would be reported lost.
 */
const HEALTHY_DEADLINE_MS = 120_000;

async function gatewayFor(upstream: string, enforce = false): Promise<{ gateway: RunningGateway; url: string }> {
  // With enforce, both proofs of receipt (the clients connect directly): nothing is withheld even so.
  const gateway = await startTestGateway(upstream, {
    enforce,
    connectionProof: enforce,
    requestTimeoutMs: HEALTHY_DEADLINE_MS,
  });
  closers.push(() => gateway.close());
  return { gateway, url: gatewayMcpUrl(gateway, upstream) };
}

/** Every span handed to the detector, nothing found, nothing enforced. */
async function expectClean(gateway: RunningGateway): Promise<void> {
  await settleGateway(gateway);
  expect(gateway.detector!.detector.stats().spans.accepted).toBeGreaterThan(0);
  expect(kindsOf(gateway.detector!.findings())).toEqual([]);
  expect(gateway.counts().actions).toEqual({});
  expect(gateway.counts().refusals).toEqual({});
}

const text = (result: { content?: Array<{ text?: string }> }): string | undefined => result.content?.[0]?.text;

/**
 * The everything server behind a proxy that keeps its streams running (`keepUpstream`): when the gateway
 * drops a stream whose client was cut, the server's stream still runs to its end. The everything server
 * shows no other sign of the work a cut call goes on doing, and its store loses what comes after a
 * resume that arrives before that work is done: the proxy's `abandoned` says how far it got.
 */
async function startEverythingBehindProxy(): Promise<{ everything: EverythingServer; upstream: FaultProxy }> {
  const everything = await startEverythingServer({ startTimeoutMs: 60_000 });
  const upstream = await startFaultProxy({ target: everything.url, keepUpstream: true });
  return { everything, upstream };
}

/** The first POST stream the gateway dropped after the `before`-th, as the upstream proxy saw it. */
function abandonedPost(upstream: FaultProxy, before: number): Promise<AbandonedResponse> {
  const found = waitFor(
    () => upstream.abandoned.slice(before).find((a) => a.method === 'POST'),
    'the cut POST stream, dropped by the gateway',
    60_000,
  );
  found.catch(() => undefined);
  return found;
}

/** Global fetch, holding every resume (a request carrying Last-Event-ID) until `release` settles. */
function holdingResumes(release: Promise<unknown>): FetchLike {
  return async (input, init) => {
    if (new Headers(init?.headers).has(HEADER_LAST_EVENT_ID)) await release;
    return globalThis.fetch(input, init);
  };
}

describe('the official everything server through the gateway, SDK 1.x client', () => {
  let everything: EverythingServer;
  let upstream: FaultProxy;
  beforeAll(async () => {
    ({ everything, upstream } = await startEverythingBehindProxy());
  }, 90_000);
  afterAll(async () => {
    await upstream?.close();
    await everything?.stop();
  });

  it.each([false, true])(
    'enforce=%s: healthy calls, one with progress; every result once, no finding',
    { timeout: TIMEOUT },
    async (enforce) => {
      const { gateway, url } = await gatewayFor(upstream.url, enforce);
      const session = await connectSdkSession('sdk', url, globalThis.fetch, 'everything-healthy');
      closers.push(() => session.close());
      const progress: number[] = [];
      const texts = [
        text(await session.callTool('echo', { message: 'one' })),
        text(await session.callTool('get-sum', { a: 2, b: 3 })),
        text(
          await session.callTool(
            'trigger-long-running-operation',
            { duration: 0.3, steps: 3 },
            { onprogress: (p) => void progress.push(p.progress) },
          ),
        ),
      ];
      await session.terminate();
      await session.close();
      expect(texts).toEqual(['Echo: one', 'The sum of 2 and 3 is 5.', LONG_RUNNING]);
      expect(progress).toEqual([1, 2, 3]);
      expect(responsesPerRequest(session.log)).toEqual({ '1': 1, '2': 1, '3': 1 });
      expect(resumesIn(session.log)).toEqual([]);
      await expectClean(gateway);
    },
  );

  it.each([false, true])(
    'enforce=%s: the client-side TCP cut after the first progress update; the SDK resumes through the gateway, a continuation, no finding',
    { timeout: TIMEOUT },
    async (enforce) => {
      const { gateway, url } = await gatewayFor(upstream.url, enforce);
      // The fault proxy stands between the client and the gateway: the cut is the client's connection.
      const proxy: FaultProxy = await startFaultProxy({ target: url });
      closers.push(() => proxy.close());
      // Priming event + progress 1, then the cut; the SDK resumes after 1 s (no `retry:` from this
      // server), held until the operation (0.3 s) is done at the server: the replay holds progress 2, 3
      // and the result. Were it to come sooner, this server would lose the rest (the lost_result case).
      const operationDone = abandonedPost(upstream, upstream.abandoned.length).then((a) => a.upstreamEnded);
      const session = await connectSdkSession('sdk', proxy.url, holdingResumes(operationDone), 'everything-cut');
      closers.push(() => session.close());
      const progress: number[] = [];
      const before = text(await session.callTool('echo', { message: 'before' }));
      proxy.armCut({ method: 'POST', afterEvents: 2 });
      const cut = text(
        await session.callTool(
          'trigger-long-running-operation',
          { duration: 0.3, steps: 3 },
          { onprogress: (p) => void progress.push(p.progress) },
        ),
      );
      const after = text(await session.callTool('echo', { message: 'after' }));
      await session.terminate();
      await session.close();
      expect([before, cut, after]).toEqual(['Echo: before', LONG_RUNNING, 'Echo: after']);
      expect(proxy.cuts.at(-1)?.eventsForwarded).toBe(2);
      expect(progress).toEqual([1, 2, 3]);
      expect(resumesIn(session.log).map((e) => e.status)).toEqual([200]);
      expect(responsesPerRequest(session.log)).toEqual({ '1': 1, '2': 1, '3': 1 });
      await expectClean(gateway);
    },
  );
});

describe('the everything server loses a result after a resume, through the gateway (issue 31)', () => {
  let everything: EverythingServer;
  let upstream: FaultProxy;
  beforeAll(async () => {
    ({ everything, upstream } = await startEverythingBehindProxy());
  }, 90_000);
  afterAll(async () => {
    await upstream?.close();
    await everything?.stop();
  });

  it(
    '--request-timeout 3s: the SDK resumes, the replay brings the missed progress, the result never comes: lost_result',
    { timeout: TIMEOUT },
    async () => {
      const gateway = await startTestGateway(upstream.url, { requestTimeoutMs: 3_000 });
      closers.push(() => gateway.close());
      const proxy: FaultProxy = await startFaultProxy({ target: gatewayMcpUrl(gateway, upstream.url) });
      closers.push(() => proxy.close());
      // The operation (a minute, a progress update every 0.5 s) outlasts the test. The SDK's resume (1 s
      // after the cut) is held until the server has stored an update the client missed: the everything
      // server's store replays it and names the resumed stream after its last replayed event, so the
      // rest goes nowhere. The gateway's deadline (3 s) comes before the SDK's timeout (5 s).
      const missedOne = abandonedPost(upstream, upstream.abandoned.length).then((a) =>
        waitFor(() => a.upstreamEvents > a.eventsForwarded, 'an update the client missed, stored at the server'),
      );
      missedOne.catch(() => undefined);
      const session = await connectSdkSession('sdk', proxy.url, holdingResumes(missedOne), 'everything-lost');
      closers.push(() => session.close());
      const progress: number[] = [];
      proxy.armCut({ method: 'POST', afterEvents: 2 });
      const error = await session
        .callTool(
          'trigger-long-running-operation',
          { duration: 60, steps: 120 },
          { onprogress: (p) => void progress.push(p.progress), timeout: 5_000 },
        )
        .then(
          () => undefined,
          (e: unknown) => (e instanceof Error ? e.message : String(e)),
        );
      await session.terminate();
      await session.close();
      expect(error).toMatch(/timed out/i);
      expect(resumesIn(session.log).map((e) => e.status)).toEqual([200]);
      expect(progress.length).toBeGreaterThan(1);
      await settleGateway(gateway);
      expect(gateway.detector!.findings()).toMatchObject([
        { kind: FindingKind.LOST_RESULT, request_id: '1', recovery: RequestRecovery.RESUMED },
      ]);
    },
  );
});

describe('a server built only from MCP SDK 1.32 parts through the gateway', () => {
  it.each(['sdk', 'sdk-v2'] as const)(
    '%s client: calls with progress, a cut mid-stream and its resume, every result once, no finding',
    { timeout: TIMEOUT },
    async (client) => {
      const server = await startSdkServer();
      closers.push(() => server.close());
      const { gateway, url } = await gatewayFor(server.url);
      const session = await connectSdkSession(client, url, globalThis.fetch, 'sdk-parts');
      closers.push(() => session.close());
      const progress: number[] = [];
      const first = text(await session.callTool('echo', { text: 'one' }));
      // The server destroys the socket of the next tools/call stream after two events (the priming
      // event and progress 1): the gateway sees its upstream break and ends the client's stream, and
      // the client resumes through it.
      server.cutNextCallAfter = 2;
      const cut = text(
        await session.callTool(
          'stream_progress',
          { count: 4, delay: 20 },
          { onprogress: (p) => void progress.push(p.progress) },
        ),
      );
      const last = text(await session.callTool('echo', { text: 'two' }));
      await session.terminate();
      await session.close();
      expect([first, cut, last]).toEqual(['one', 'streamed 4', 'two']);
      expect(progress).toEqual([1, 2, 3, 4]);
      expect(resumesIn(session.log).map((e) => e.status)).toEqual([200]);
      expect(responsesPerRequest(session.log)).toEqual({ '1': 1, '2': 1, '3': 1 });
      await expectClean(gateway);
    },
  );
});

const unavailable = pythonUnavailable();

describe.skipIf(unavailable !== undefined)(
  `the Python SDK (mcp 2.3.0) through the gateway${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    let python: string;
    let server: PythonServer;
    beforeAll(async () => {
      // The first run installs the wheels into a cached virtual environment (30 to 60 s); later runs reuse it.
      python = pythonWithMcp();
      server = await startPythonServer(python);
    }, 150_000);
    afterAll(() => {
      server?.stop();
    });

    it.each([false, true])(
      'Python client (session era) to the lab server, enforce=%s: results once, nothing refused, no finding',
      { timeout: TIMEOUT },
      async (enforce) => {
        const lab = await startLabServer({ retryIntervalMs: 50 });
        closers.push(() => lab.close());
        const { gateway, url } = await gatewayFor(lab.url, enforce);
        const run = await runPythonClient(python, url, 'legacy', { lab: true });
        expect(run.texts).toEqual(['Echo: one', 'Echo: two', 'streamed 3 progress notifications']);
        // It never resumes a request whose response it read: nothing for --enforce to act on.
        await expectClean(gateway);
      },
    );

    it.each(['legacy', 'auto'] as const)(
      'Python client (%s) to the Python server: results once, no finding',
      { timeout: TIMEOUT },
      async (mode) => {
        const { gateway, url } = await gatewayFor(server.url);
        const run = await runPythonClient(python, url, mode);
        expect(run.texts).toEqual(['Echo: one', 'Echo: two', 'done 3']);
        expect(run.progress).toEqual([1, 2, 3]);
        // auto probes server/discover: the Python server speaks 2026-07-28, sessions are gone.
        expect(run.protocolVersion).toBe(mode === 'auto' ? '2026-07-28' : '2025-11-25');
        await expectClean(gateway);
      },
    );

    it(
      'SDK 1.x client to the Python server (session era): progress and results once, no finding',
      { timeout: TIMEOUT },
      async () => {
        const { gateway, url } = await gatewayFor(server.url);
        const session = await connectSdkSession('sdk', url, globalThis.fetch, 'python-server');
        closers.push(() => session.close());
        const progress: number[] = [];
        const texts = [
          text(await session.callTool('echo', { text: 'one' })),
          text(await session.callTool('steps', { count: 3 }, { onprogress: (p) => void progress.push(p.progress) })),
        ];
        await session.terminate();
        await session.close();
        expect(texts).toEqual(['Echo: one', 'done 3']);
        expect(progress).toEqual([1, 2, 3]);
        expect(responsesPerRequest(session.log)).toEqual({ '1': 1, '2': 1 });
        await expectClean(gateway);
      },
    );

    it(
      'v2 client pinned to 2026-07-28 to the Python server, enforce: a plain call works, no finding',
      { timeout: TIMEOUT },
      async () => {
        const { gateway, url } = await gatewayFor(server.url, true);
        const client = new ClientV2(
          { name: 'resumewatch-gateway-modern', version: '0.1.0' },
          { versionNegotiation: { mode: { pin: '2026-07-28' } } },
        );
        const transport = new TransportV2(new URL(url));
        await client.connect(transport);
        closers.push(() => client.close());
        const result = await client.callTool({ name: 'echo', arguments: { text: 'modern' } });
        expect(text(result as { content?: Array<{ text?: string }> })).toBe('Echo: modern');
        // No session in this era.
        expect(transport.sessionId).toBeUndefined();
        await client.close();
        await expectClean(gateway);
      },
    );
  },
);
