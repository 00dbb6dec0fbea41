// The gateway's spans in the 2026-07-28 era, on the real v2 SDK (client and server 2.4): the v2 client
// (`versionNegotiation: auto`) calls `charge` through the gateway; the lab's fault proxy, between the
// gateway and the v2 lab server, cuts the call's response after its first event (the stream breaks on the
// upstream side); the application re-issues the call. The gateway's request spans carry the exchange's
// version, the broken first attempt (`stream_broken`) and the re-issue's link to it.
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { connectSdkSession, startFaultProxy, startModernLabServer } from '@resumewatch/lab';
import type { FaultProxy, ModernLabServer } from '@resumewatch/lab';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_REQUEST_ARGUMENTS_DIGEST,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ErrorType,
  STATELESS_PROTOCOL_VERSION,
} from '@resumewatch/semconv';
import { expect, it } from 'vitest';
import { gatewayMcpUrl, startTestGateway, waitFor } from './helpers/e2e-rig.js';

/** The v2 lab server (2026-07-28 only), the fault proxy in front of it, and the gateway in front of that. */
async function withGateway(
  test: (rig: {
    server: ModernLabServer;
    proxy: FaultProxy;
    exporter: InMemorySpanExporter;
    gateway: Awaited<ReturnType<typeof startTestGateway>>;
  }) => Promise<void>,
): Promise<void> {
  const server = await startModernLabServer({ eras: 'modern-only' });
  const proxy = await startFaultProxy({ target: server.url });
  const exporter = new InMemorySpanExporter();
  const gateway = await startTestGateway(proxy.url, { spanProcessors: [new SimpleSpanProcessor(exporter)] });
  try {
    await test({ server, proxy, exporter, gateway });
  } finally {
    await gateway.close();
    await proxy.close();
    await server.close();
  }
}

it('modern-broken-reissue through the gateway: stream_broken, then the re-issue linked to it', async () => {
  await withGateway(async ({ server, proxy, exporter, gateway }) => {
    const url = gatewayMcpUrl(gateway, proxy.url);
    const client = await connectSdkSession('sdk-v2', url, (input, init) => fetch(input, init), 'gateway-modern', {
      negotiation: 'auto',
    });
    const args = { key: `gateway-modern-${Date.now()}`, workMs: 1000 };
    proxy.armCut({ method: 'POST', afterEvents: 1 });
    await client.callTool('charge', args, { timeout: 1500, onprogress: () => undefined }).catch(() => undefined);
    await client.callTool('charge', args, { onprogress: () => undefined });
    await client.close();

    const calls = await waitFor(() => {
      const spans = exporter
        .getFinishedSpans()
        .filter((s) => s.name.startsWith('tools/call') && s.attributes[ATTR_GEN_AI_TOOL_NAME] === 'charge');
      return spans.length === 2 && spans;
    }, "the gateway's two charge spans");
    const byId = (id: string) => calls.find((s) => s.attributes[ATTR_JSONRPC_REQUEST_ID] === id) as ReadableSpan;
    const [first, reissue] = [byId('0'), byId('1')];
    expect(server.sideEffectCount(args.key)).toBe(2);
    expect(first.attributes[ATTR_ERROR_TYPE]).toBe(ErrorType.STREAM_BROKEN);
    for (const span of [first, reissue])
      expect(span.attributes[ATTR_MCP_PROTOCOL_VERSION]).toBe(STATELESS_PROTOCOL_VERSION);
    expect(reissue.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
    expect(reissue.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST]).toBe(
      first.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST],
    );
    expect(reissue.attributes[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID]).toBe(first.spanContext().traceId);
    expect(reissue.attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]).toBe(first.spanContext().spanId);
  });
}, 30_000);

it('a re-issue is matched among the requests of one client: the same call from another client is not linked', async () => {
  // Two clients of one address, told apart by their credentials (the gateway keeps only a digest of them).
  const as = (token: string): typeof fetch => {
    return (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${token}`);
      return fetch(input, { ...init, headers });
    };
  };
  await withGateway(async ({ proxy, exporter, gateway }) => {
    const url = gatewayMcpUrl(gateway, proxy.url);
    const connect = (token: string) =>
      connectSdkSession('sdk-v2', url, as(token), `gateway-modern-${token}`, { negotiation: 'auto' });
    const [alice, bob] = [await connect('alice'), await connect('bob')];
    const args = { key: `gateway-scope-${Date.now()}`, workMs: 300 };
    proxy.armCut({ method: 'POST', afterEvents: 1 });
    await alice.callTool('charge', args, { timeout: 1000, onprogress: () => undefined }).catch(() => undefined);
    await bob.callTool('charge', args, { onprogress: () => undefined });
    await alice.callTool('charge', args, { onprogress: () => undefined });
    await Promise.all([alice.close(), bob.close()]);

    const calls = await waitFor(() => {
      const spans = exporter
        .getFinishedSpans()
        .filter((s) => s.name.startsWith('tools/call') && s.attributes[ATTR_GEN_AI_TOOL_NAME] === 'charge')
        .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
      return spans.length === 3 && spans;
    }, "the gateway's three charge spans");
    const [broken, other, reissue] = calls as [ReadableSpan, ReadableSpan, ReadableSpan];
    expect(broken.attributes[ATTR_ERROR_TYPE]).toBe(ErrorType.STREAM_BROKEN);
    // The same call, the same digest, but another client's: not a re-issue of alice's.
    expect(other.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST]).toBe(
      broken.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST],
    );
    expect(other.attributes[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID]).toBeUndefined();
    expect(reissue.attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]).toBe(broken.spanContext().spanId);
  });
}, 30_000);
