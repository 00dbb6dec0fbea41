// Issue 31, part 2: a refused negotiation is not traffic of the era it asked for. Each case runs a real
// SDK client through the gateway, with the instrumented client fetch on the other side of it (its spans
// into a detector of its own): both detectors must count the exchanges the server accepted by era, and
// the refused negotiation once in resumewatch_mcp_negotiations_refused_total, by the version it asked.
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { startEmbeddedDetector } from '@resumewatch/daemon';
import type { EmbeddedDetector } from '@resumewatch/daemon';
import { instrumentFetch } from '@resumewatch/instrumentation';
import { connectSdkSession, startModernLabServer } from '@resumewatch/lab';
import type { RecordedRequest } from '@resumewatch/lab';
import {
  LABEL_ERA,
  LABEL_SERVICE,
  LABEL_VERSION,
  METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL,
  METRIC_MCP_REQUESTS_TOTAL,
  ProtocolEra,
  STATELESS_PROTOCOL_VERSION,
} from '@resumewatch/semconv';
import { expect, it, vi } from 'vitest';
import { gatewayMcpUrl, settleGateway, startParityRig, startTestGateway } from './helpers/e2e-rig.js';

/** The samples of `metric` on the detector's /metrics (scraped over loopback), without the service label. */
async function scrape(detector: EmbeddedDetector, metric: string): Promise<string[]> {
  const body = await (await fetch(`http://127.0.0.1:${detector.metricsPort}/metrics`)).text();
  return body
    .split('\n')
    .filter((line) => line.startsWith(`${metric}{`))
    .map((line) => line.replace(new RegExp(`${LABEL_SERVICE}="[^"]*",?`), ''))
    .sort();
}

/** The JSON-RPC requests the server accepted (answered 2xx), from the client's own record of the wire. */
const acceptedRequests = (log: readonly RecordedRequest[]): (string | undefined)[] =>
  log
    .filter((e) => e.rpcId !== undefined && e.status !== undefined && e.status >= 200 && e.status < 300)
    .map((e) => e.rpc);

/** What both detectors, the gateway's and the instrumented client's, must expose. */
async function expectBoth(
  detectors: readonly (readonly [string, EmbeddedDetector])[],
  requests: string[],
  refused: string[],
): Promise<void> {
  for (const [side, detector] of detectors) {
    expect(await scrape(detector, METRIC_MCP_REQUESTS_TOTAL), side).toEqual(requests);
    expect(await scrape(detector, METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL), side).toEqual(refused);
  }
}

it('a 2026-07-28 probe refused by a session-era server is a refused negotiation, and the session that follows is session-era traffic', async () => {
  // The SDK v2 client with `versionNegotiation: auto` (what `@ai-sdk/mcp` and Mastra do) and the lab's
  // session-era server (SDK 1.x): server/discover at 2026-07-28, refused 400, then initialize.
  const rig = await startParityRig();
  try {
    const client = await connectSdkSession('sdk-v2', rig.url, rig.clientFetch, 'era-probe', { negotiation: 'auto' });
    await client.callTool('echo', { text: 'hello' });
    // The fallback negotiated the session era: a session, a revision before 2026-07-28.
    expect(client.sessionId()).toBeDefined();
    expect(client.protocolVersion()).not.toBe(STATELESS_PROTOCOL_VERSION);
    await client.terminate();
    await client.close();

    // What the wire showed: the probe at 2026-07-28 refused; the requests after it accepted.
    const [probe] = client.log;
    expect([probe?.method, probe?.rpc, probe?.status, probe?.protocolVersion]).toEqual([
      'POST',
      'server/discover',
      400,
      STATELESS_PROTOCOL_VERSION,
    ]);
    const accepted = acceptedRequests(client.log);
    expect(accepted).toEqual(['initialize', 'tools/call echo']);

    await rig.settle();
    await expectBoth(
      [
        ['gateway', rig.gateway.detector!],
        ['instrumented client', rig.clientDetector],
      ],
      [`${METRIC_MCP_REQUESTS_TOTAL}{${LABEL_ERA}="${ProtocolEra.SESSIONS}"} ${accepted.length}`],
      [`${METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL}{${LABEL_VERSION}="${STATELESS_PROTOCOL_VERSION}"} 1`],
    );
  } finally {
    await rig.close();
  }
}, 30_000);

it('an initialize refused by a 2026-07-28-only server is a refused negotiation of the version it asked for', async () => {
  // The SDK 1.x client and the v2 lab server with `legacy: 'reject'`: initialize answered 400 (-32022).
  const server = await startModernLabServer({ eras: 'modern-only' });
  const gateway = await startTestGateway(server.url);
  const clientDetector = await startEmbeddedDetector({ config: { metricsPort: 0 }, output: null });
  const provider = new BasicTracerProvider({ spanProcessors: [clientDetector.processor] });
  try {
    const fetch = instrumentFetch({ tracerProvider: provider, requestTimeoutMs: 10_000 });
    const connecting = connectSdkSession('sdk', gatewayMcpUrl(gateway, server.url), fetch, 'era-initialize');
    await expect(connecting).rejects.toThrow();
    // The one exchange: the initialize (a POST without MCP-Protocol-Version), refused by the 2026-07-28 leg.
    expect(server.exchanges().map((e) => [e.method, e.protocolVersion, e.leg, e.status])).toEqual([
      ['POST', undefined, 'modern', 400],
    ]);
    await vi.waitFor(() => expect(fetch.stats().openRequests).toBe(0), { timeout: 10_000, interval: 20 });
    await settleGateway(gateway);
    await provider.forceFlush();
    await expectBoth(
      [
        ['gateway', gateway.detector!],
        ['instrumented client', clientDetector],
      ],
      [],
      // The version the SDK asks for in its initialize: the session era's latest, refused.
      [`${METRIC_MCP_NEGOTIATIONS_REFUSED_TOTAL}{${LABEL_VERSION}="${LATEST_PROTOCOL_VERSION}"} 1`],
    );
  } finally {
    await provider.shutdown();
    await clientDetector.close();
    await gateway.close();
    await server.close();
  }
}, 30_000);
