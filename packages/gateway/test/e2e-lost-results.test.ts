// Lost results the gateway sees (issue 37), through the real gateway with real clients and servers: the
// unmodified SDK 1.x client (and the v2 client), a plain fetch client that never resumes and deletes its
// session (as the Vercel AI SDK does), and servers built from MCP SDK 1.32 parts with and without an
// event store, with a session and session-less (the SDK's stateless mode, 2025-11-25: no Mcp-Session-Id).
// Each tool call's stream is cut by a real TCP cut (the lab's fault proxy), between the client and the
// gateway or between the gateway and the server. Each loss is a lost_result the gateway reports on what
// the wire showed (a break of a stream with no event id, a DELETE, the request's deadline), and each
// healthy twin (no cut, a resume that brings the result, a cancellation) gives no finding. No wall time
// is asserted: a deadline is a small --request-timeout, waited for on the finding.
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { Finding } from '@resumewatch/detector';
import { connectSdkSession, startFaultProxy } from '@resumewatch/lab';
import type { FaultProxy, SdkSession } from '@resumewatch/lab';
import { ErrorType, FindingKind, FindingRecord, RequestRecovery } from '@resumewatch/semconv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startSdkServer } from '../../instrumentation/test/helpers/sdk-server.js';
import type { SdkServer, SdkServerOptions } from '../../instrumentation/test/helpers/sdk-server.js';
import type { RunningGateway } from '../src/index.js';
import { gatewayMcpUrl, kindsOf, settleGateway, startTestGateway, waitFor } from './helpers/e2e-rig.js';

const TIMEOUT = 60_000;

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function server(options: SdkServerOptions): Promise<SdkServer> {
  const started = await startSdkServer(options);
  closers.push(() => started.close());
  return started;
}

async function gatewayFor(upstream: string, requestTimeoutMs: number): Promise<RunningGateway> {
  const gateway = await startTestGateway(upstream, { requestTimeoutMs });
  closers.push(() => gateway.close());
  return gateway;
}

async function faultProxy(target: string): Promise<FaultProxy> {
  const proxy = await startFaultProxy({ target });
  closers.push(() => proxy.close());
  return proxy;
}

async function sdkSession(kind: 'sdk' | 'sdk-v2', url: string, name: string): Promise<SdkSession> {
  const session = await connectSdkSession(kind, url, globalThis.fetch, name);
  closers.push(() => session.close());
  return session;
}

/** The gateway's lost_result findings (not the records), its spans handed to its detector first. */
async function lostResults(gateway: RunningGateway): Promise<Finding[]> {
  await gateway.flush();
  return gateway.detector!.findings().filter((f) => f.kind === FindingKind.LOST_RESULT && f.record === undefined);
}

/** Waits for the gateway's one lost_result (its deadline, if that is what decides it, included). */
async function reported(gateway: RunningGateway, what: string): Promise<Finding> {
  return vi.waitFor(
    async () => {
      const found = await lostResults(gateway);
      if (found.length === 0) throw new Error(`timed out waiting for the lost_result of ${what}`);
      return found[0]!;
    },
    { timeout: 30_000, interval: 50 },
  );
}

/** Nothing found once everything the gateway observes is over (the client closed first). */
async function expectNoFinding(gateway: RunningGateway): Promise<void> {
  await settleGateway(gateway);
  expect(gateway.detector!.detector.stats().spans.accepted).toBeGreaterThan(0);
  expect(kindsOf(gateway.detector!.findings())).toEqual([]);
}

/** A tool call that is given up, as a promise that never rejects (the client is closed at the test's end). */
function pendingCall(session: SdkSession, progress: number[]): Promise<string> {
  return session
    .callTool('slow', { ms: 4_000 }, { timeout: 50_000, onprogress: (p) => void progress.push(p.progress) })
    .then(
      () => 'resolved',
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    );
}

describe('cut between the gateway and the server, a server whose events carry no id', () => {
  it.each([
    ['session-less (stateless SDK server), SDK 1.x client', true, 'sdk'],
    ['session-less (stateless SDK server), SDK v2 client', true, 'sdk-v2'],
    ['with a session, SDK 1.x client', false, 'sdk'],
  ] as const)(
    '%s: lost_result at the break (no cursor exists), long before the deadline',
    { timeout: TIMEOUT },
    async (_, stateless, client) => {
      const upstream = await server({ noEventStore: true, stateless });
      // Between the gateway and the server: the gateway sees its upstream stream break.
      const proxy = await faultProxy(upstream.url);
      // A deadline the test never reaches: the break decides.
      const gateway = await gatewayFor(proxy.url, 600_000);
      const session = await sdkSession(client, gatewayMcpUrl(gateway, proxy.url), 'lost-upstream');
      const progress: number[] = [];
      proxy.armCut({ method: 'POST', afterEvents: 1 });
      const call = pendingCall(session, progress);
      const lost = await reported(gateway, 'the upstream cut');
      expect(proxy.cuts).toHaveLength(1);
      expect(lost).toMatchObject({
        recovery: RequestRecovery.NO_EVENT_ID,
        request_end: ErrorType.STREAM_BROKEN,
        session_id: stateless ? '' : session.sessionId(),
      });
      // The client got the progress, never the result: its call is still waiting.
      expect(progress).toEqual([1]);
      await session.close();
      await call;
      expect(await lostResults(gateway)).toHaveLength(1);
    },
  );

  it(
    'a plain client that never resumes, server with event ids: the DELETE ends the request: lost_result, not_resumed',
    { timeout: TIMEOUT },
    async () => {
      const upstream = await server({});
      const proxy = await faultProxy(upstream.url);
      const gateway = await gatewayFor(proxy.url, 600_000);
      const client = await plainSession(gatewayMcpUrl(gateway, proxy.url));
      // The priming event and the progress, then the cut: a cursor exists, the client never uses it.
      proxy.armCut({ method: 'POST', afterEvents: 2 });
      const call = await client.callUntilProgress(2);
      expect(call.lastEventId).toBeDefined();
      await expect(call.rest()).rejects.toThrow();
      await waitFor(() => gateway.counts().open === 0, 'the broken stream to end');
      expect(await lostResults(gateway)).toEqual([]);
      await client.remove();
      expect(await reported(gateway, 'the DELETE after the upstream cut')).toMatchObject({
        request_id: String(call.id),
        recovery: RequestRecovery.NOT_RESUMED,
        request_end: ErrorType.ABORTED,
      });
    },
  );

  it.each([
    ['session-less', true],
    ['with a session', false],
  ] as const)('healthy twin, %s: the same call uncut, no finding', { timeout: TIMEOUT }, async (_, stateless) => {
    const upstream = await server({ noEventStore: true, stateless });
    const proxy = await faultProxy(upstream.url);
    const gateway = await gatewayFor(proxy.url, 600_000);
    const session = await sdkSession('sdk', gatewayMcpUrl(gateway, proxy.url), 'healthy-upstream');
    const result = await session.callTool('slow', { ms: 50 });
    expect(result.content?.[0]?.text).toBe('slow done');
    await session.close();
    await expectNoFinding(gateway);
  });
});

describe('cut between the client and the gateway', () => {
  it(
    'SDK 1.x client, server without event ids (with a session): no resume can exist; the DELETE ends the request: lost_result',
    { timeout: TIMEOUT },
    async () => {
      const upstream = await server({ noEventStore: true });
      const gateway = await gatewayFor(upstream.url, 600_000);
      // Between the client and the gateway: the gateway sees its client's connection drop.
      const proxy = await faultProxy(gatewayMcpUrl(gateway, upstream.url));
      const session = await sdkSession('sdk', proxy.url, 'lost-client-side');
      // The session's listening stream (GET) is the one exchange open between calls.
      await waitFor(() => gateway.counts().open === 1, 'the listening stream');
      const progress: number[] = [];
      proxy.armCut({ method: 'POST', afterEvents: 1 });
      const call = pendingCall(session, progress);
      await waitFor(() => proxy.cuts.length === 1 && gateway.counts().open === 1, 'the gateway to see the cut');
      // Nothing is reported on the drop alone: the client might still cancel.
      expect(await lostResults(gateway)).toEqual([]);
      const sessionId = session.sessionId();
      await session.terminate();
      const lost = await reported(gateway, 'the client-side cut');
      expect(lost).toMatchObject({
        session_id: sessionId,
        recovery: RequestRecovery.NO_EVENT_ID,
        request_end: ErrorType.ABORTED,
      });
      await session.close();
      await call;
    },
  );

  it(
    'SDK 1.x client, session-less server: no DELETE can come; the request deadline ends it: lost_result',
    { timeout: TIMEOUT },
    async () => {
      const upstream = await server({ noEventStore: true, stateless: true });
      const gateway = await gatewayFor(upstream.url, 1_500);
      const proxy = await faultProxy(gatewayMcpUrl(gateway, upstream.url));
      const session = await sdkSession('sdk', proxy.url, 'lost-client-side-stateless');
      const progress: number[] = [];
      proxy.armCut({ method: 'POST', afterEvents: 1 });
      const call = pendingCall(session, progress);
      const lost = await reported(gateway, 'the deadline after the client-side cut');
      expect(proxy.cuts).toHaveLength(1);
      expect(lost).toMatchObject({
        session_id: '',
        recovery: RequestRecovery.NO_EVENT_ID,
        request_end: ErrorType.TIMEOUT,
      });
      await session.close();
      await call;
    },
  );

  it(
    'SDK 1.x client, server with event ids: the SDK resumes through the gateway and gets its result: no finding',
    { timeout: TIMEOUT },
    async () => {
      const upstream = await server({});
      const gateway = await gatewayFor(upstream.url, 600_000);
      const proxy = await faultProxy(gatewayMcpUrl(gateway, upstream.url));
      const session = await sdkSession('sdk', proxy.url, 'healthy-client-side');
      // Priming event + progress 1, then the cut.
      proxy.armCut({ method: 'POST', afterEvents: 2 });
      const result = await session.callTool('slow', { ms: 300 });
      expect(result.content?.[0]?.text).toBe('slow done');
      expect(proxy.cuts).toHaveLength(1);
      await session.terminate();
      await session.close();
      await expectNoFinding(gateway);
    },
  );

  describe('a plain fetch client that never resumes, then deletes its session (the Vercel AI SDK)', () => {
    it('server with event ids: lost_result at the DELETE, recovery not_resumed', { timeout: TIMEOUT }, async () => {
      const upstream = await server({});
      const gateway = await gatewayFor(upstream.url, 600_000);
      const client = await plainSession(gatewayMcpUrl(gateway, upstream.url));
      const call = await client.callUntilProgress(2);
      call.drop();
      await waitFor(() => gateway.counts().open === 0, 'the gateway to see the dropped connection');
      expect(await lostResults(gateway)).toEqual([]);
      await client.remove();
      const lost = await reported(gateway, 'the DELETE after the drop');
      expect(lost).toMatchObject({
        session_id: client.sessionId,
        request_id: String(call.id),
        recovery: RequestRecovery.NOT_RESUMED,
        request_end: ErrorType.ABORTED,
      });
    });

    it('healthy twin: reads the whole stream, then deletes its session: no finding', { timeout: TIMEOUT }, async () => {
      const upstream = await server({});
      const gateway = await gatewayFor(upstream.url, 600_000);
      const client = await plainSession(gatewayMcpUrl(gateway, upstream.url));
      const call = await client.callUntilProgress(2, 50);
      expect(await call.rest()).toContain('slow done');
      await client.remove();
      await expectNoFinding(gateway);
    });

    it(
      'healthy twin: drops, then cancels (notifications/cancelled), then deletes: no finding',
      { timeout: TIMEOUT },
      async () => {
        const upstream = await server({});
        const gateway = await gatewayFor(upstream.url, 600_000);
        const client = await plainSession(gatewayMcpUrl(gateway, upstream.url));
        const call = await client.callUntilProgress(2);
        call.drop();
        await waitFor(() => gateway.counts().open === 0, 'the gateway to see the dropped connection');
        await client.notify('notifications/cancelled', { requestId: call.id, reason: 'user' });
        await client.remove();
        await expectNoFinding(gateway);
      },
    );

    it(
      'healthy twin: drops, then resumes with its cursor and gets the result: no finding',
      { timeout: TIMEOUT },
      async () => {
        const upstream = await server({});
        const gateway = await gatewayFor(upstream.url, 600_000);
        const client = await plainSession(gatewayMcpUrl(gateway, upstream.url));
        const call = await client.callUntilProgress(2, 600);
        call.drop();
        await waitFor(() => gateway.counts().open === 0, 'the gateway to see the dropped connection');
        expect(call.lastEventId).toBeDefined();
        expect(await client.resume(call.lastEventId!, 'slow done')).toContain('slow done');
        await client.remove();
        await expectNoFinding(gateway);
      },
    );

    it(
      'healthy twin: drops, then asks for the same work again (a re-issue) and gets it: no finding',
      { timeout: TIMEOUT },
      async () => {
        const upstream = await server({ noEventStore: true });
        const gateway = await gatewayFor(upstream.url, 600_000);
        const client = await plainSession(gatewayMcpUrl(gateway, upstream.url));
        // The result comes a second after the progress: the drop is before it.
        const call = await client.callUntilProgress(1, 1_000);
        call.drop();
        await waitFor(() => gateway.counts().open === 0, 'the gateway to see the dropped connection');
        const again = await client.callUntilProgress(1, 1_000);
        expect(again.id).not.toBe(call.id);
        expect(await again.rest()).toContain('slow done');
        await client.remove();
        await expectNoFinding(gateway);
      },
    );

    it(
      'a resume answered 200 with no event (the Inspector CLI against the everything server), then the DELETE: lost_result, recovery resumed',
      { timeout: TIMEOUT },
      async () => {
        // The server ends each resume after what it replayed: nothing here, the result is still to come.
        const upstream = await server({ closeReplays: true });
        const gateway = await gatewayFor(upstream.url, 600_000);
        const client = await plainSession(gatewayMcpUrl(gateway, upstream.url));
        const call = await client.callUntilProgress(2);
        call.drop();
        await waitFor(() => gateway.counts().open === 0, 'the gateway to see the dropped connection');
        expect(await client.resume(call.lastEventId!, 'slow done')).not.toContain('slow done');
        await waitFor(() => gateway.counts().open === 0, 'the empty resume to end');
        expect(await lostResults(gateway)).toEqual([]);
        await client.remove();
        expect(await reported(gateway, 'the DELETE after the empty resume')).toMatchObject({
          request_id: String(call.id),
          recovery: RequestRecovery.RESUMED,
          request_end: ErrorType.ABORTED,
        });
      },
    );

    it(
      'server without event ids: nothing to resume from; lost_result at the DELETE, recovery no_event_id',
      { timeout: TIMEOUT },
      async () => {
        const upstream = await server({ noEventStore: true });
        const gateway = await gatewayFor(upstream.url, 600_000);
        const client = await plainSession(gatewayMcpUrl(gateway, upstream.url));
        const call = await client.callUntilProgress(1);
        expect(call.lastEventId).toBeUndefined();
        call.drop();
        await waitFor(() => gateway.counts().open === 0, 'the gateway to see the dropped connection');
        await client.remove();
        expect(await reported(gateway, 'the DELETE')).toMatchObject({
          recovery: RequestRecovery.NO_EVENT_ID,
          request_end: ErrorType.ABORTED,
        });
      },
    );
  });
});

describe('a lost_result retracted by the result it was said to have lost', () => {
  it(
    'plain client: drops, the deadline passes (lost_result), then it resumes and gets the result: retracted, once',
    { timeout: TIMEOUT },
    async () => {
      const upstream = await server({});
      const gateway = await gatewayFor(upstream.url, 1_000);
      const client = await plainSession(gatewayMcpUrl(gateway, upstream.url));
      const call = await client.callUntilProgress(2, 600);
      call.drop();
      await reported(gateway, 'the deadline after the drop');
      expect(await client.resume(call.lastEventId!, 'slow done')).toContain('slow done');
      await client.remove();
      await settleGateway(gateway);
      const records = gateway.detector!.findings().map((f) => [f.kind, f.record]);
      expect(records).toEqual([
        [FindingKind.LOST_RESULT, undefined],
        [FindingKind.LOST_RESULT, FindingRecord.RETRACTION],
      ]);
    },
  );
});

// A plain MCP client on fetch, every step explicit: what a client that never resumes does on the wire.

interface PlainCall {
  readonly id: number;
  /** The SSE id of the last event read, if the server gives ids. */
  readonly lastEventId: string | undefined;
  /** Closes the connection mid-stream (the fetch aborted: its socket is destroyed). */
  drop(): void;
  /** Reads the rest of the stream to its end. */
  rest(): Promise<string>;
}

interface PlainSession {
  readonly sessionId: string;
  callUntilProgress(events: number, ms?: number): Promise<PlainCall>;
  notify(method: string, params: Record<string, unknown>): Promise<void>;
  /** GET with Last-Event-ID, read until `until` is in the stream, then closed. */
  resume(lastEventId: string, until: string): Promise<string>;
  /** DELETE the session. */
  remove(): Promise<void>;
}

const ACCEPT = 'application/json, text/event-stream';

async function plainSession(url: string): Promise<PlainSession> {
  let nextId = 1;
  const headers = (sessionId?: string): Record<string, string> => ({
    accept: ACCEPT,
    'content-type': 'application/json',
    'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
    ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
  });
  const init = await fetch(url, {
    method: 'POST',
    headers: { accept: ACCEPT, 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'initialize',
      params: {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'plain', version: '0' },
      },
    }),
  });
  const sessionId = init.headers.get('mcp-session-id')!;
  await init.text();
  const notify = async (method: string, params: Record<string, unknown>): Promise<void> => {
    const res = await fetch(url, {
      method: 'POST',
      headers: headers(sessionId),
      body: JSON.stringify({ jsonrpc: '2.0', method, params }),
    });
    await res.text();
  };
  await notify('notifications/initialized', {});
  const session: PlainSession = {
    sessionId,
    notify,
    async callUntilProgress(events, ms = 4_000) {
      const id = nextId++;
      const controller = new AbortController();
      const res = await fetch(url, {
        method: 'POST',
        headers: headers(sessionId),
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow', arguments: { ms } } }),
        signal: controller.signal,
      });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      // Until `events` events (the priming event, when the server gives ids, then the progress) were read.
      while (text.split('\n\n').length - 1 < events) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      const ids = [...text.matchAll(/^id: ?(.*)$/gm)].map((m) => m[1]!);
      return {
        id,
        lastEventId: ids.at(-1),
        drop: () => controller.abort(),
        async rest() {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) return text;
            text += decoder.decode(value, { stream: true });
          }
        },
      };
    },
    async resume(lastEventId, until) {
      const controller = new AbortController();
      const res = await fetch(url, {
        method: 'GET',
        headers: { ...headers(sessionId), accept: 'text/event-stream', 'last-event-id': lastEventId },
        signal: controller.signal,
      });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes(until)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      controller.abort();
      return text;
    },
    async remove() {
      const res = await fetch(url, { method: 'DELETE', headers: headers(sessionId) });
      await res.text();
    },
  };
  return session;
}
