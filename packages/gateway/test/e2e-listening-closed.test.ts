// A server WITH sessions that answers its listening GET 200 and ends the stream at once with no event (a
// stream offered in name only): the SDK 1.x client re-opens it, each a fresh plain GET (no event, so no
// Last-Event-ID: no resume), each the session's. Seen through the gateway and through the instrumented
// client (its spans to an in-process detector): one listening_stream_loop on the session. The healthy
// twin: the same server announcing `retry:` on a priming event, the client re-opening at that pace.
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { ResumewatchSpanProcessor, type Finding } from '@resumewatch/detector';
import { instrumentFetch } from '@resumewatch/instrumentation';
import { startLoopServer, type LoopGetMode, type LoopServer } from '@resumewatch/lab';
import { ATTR_SERVICE_NAME, FindingKind } from '@resumewatch/semconv';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayMcpUrl, settleGateway, startTestGateway, waitFor } from './helpers/e2e-rig.js';

const TIMEOUT = 60_000;
/** GETs the client makes before it is stopped: more than the default threshold (5) and its first. */
const GETS = 9;

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** The server's GETs answered so far. */
const getsAt = (server: LoopServer): number =>
  server.requests().filter((r) => r.method === 'GET' && r.status !== undefined).length;

/**
 * The SDK 1.x client on `url` through `fetch`, left to re-open its listening stream until the server has
 * answered GETS GETs: at once (20 ms) after a stream closed with no event, or at the server's `retry:`.
 */
async function reopenUntil(server: LoopServer, url: string, fetch: typeof globalThis.fetch): Promise<string> {
  const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  const client = new Client({ name: 'e2e-listening-closed', version: '0.1.0' });
  client.onerror = () => undefined;
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch,
    reconnectionOptions: {
      initialReconnectionDelay: 20,
      maxReconnectionDelay: 20,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 2,
    },
  });
  await client.connect(transport);
  closers.push(() => client.close());
  await waitFor(() => getsAt(server) >= GETS, `${GETS} GETs at the server`);
  const session = transport.sessionId!;
  await client.close();
  return session;
}

async function stateful(get: LoopGetMode): Promise<LoopServer> {
  const server = await startLoopServer({ sessions: true, get });
  closers.push(() => server.close());
  return server;
}

const loops = (findings: readonly Finding[]): Finding[] =>
  findings.filter((f) => f.kind === FindingKind.LISTENING_STREAM_LOOP);

async function throughGateway(get: LoopGetMode): Promise<{ session: string; findings: Finding[] }> {
  const server = await stateful(get);
  const gateway = await startTestGateway(server.url);
  closers.push(() => gateway.close());
  const session = await reopenUntil(server, gatewayMcpUrl(gateway, server.url), globalThis.fetch);
  await settleGateway(gateway);
  return { session, findings: gateway.detector!.findings() };
}

async function throughInstrumentation(get: LoopGetMode): Promise<{ session: string; findings: Finding[] }> {
  const server = await stateful(get);
  const findings: Finding[] = [];
  const processor = new ResumewatchSpanProcessor({ onFinding: (f) => findings.push(f), tickMs: 0 });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'e2e-listening-closed' }),
    spanProcessors: [processor],
  });
  closers.push(() => provider.shutdown());
  const fetch = instrumentFetch({ tracerProvider: provider, requestTimeoutMs: 10_000 });
  const session = await reopenUntil(server, server.url, fetch);
  // Every GET's span is made by the time its stream ended (the processor takes it as it ends).
  await waitFor(() => fetch.stats().pendingHttp === 0 && fetch.stats().openResumes === 0, 'the GETs to end');
  return { session, findings };
}

describe('a listening stream closed at once with no event, on a session: counted from every vantage point', () => {
  for (const [vantage, run] of [
    ['the gateway', throughGateway],
    ['the instrumented client', throughInstrumentation],
  ] as const) {
    it(
      `${vantage}: GETs answered 200 and ended at once, re-opened, are one listening_stream_loop`,
      { timeout: TIMEOUT },
      async () => {
        const { session, findings } = await run('close');
        expect(loops(findings)).toHaveLength(1);
        expect(loops(findings)[0]).toMatchObject({ session_id: session, status_code: 200 });
        expect(loops(findings)[0]!.attempts).toBeGreaterThan(5);
        expect(loops(findings)[0]!.client).toBeUndefined();
      },
    );

    it(
      `${vantage}: healthy twin, the client re-opening at the server's retry: pace, is no loop`,
      { timeout: TIMEOUT },
      async () => {
        const { findings } = await run('retry');
        expect(loops(findings)).toEqual([]);
      },
    );
  }
});
