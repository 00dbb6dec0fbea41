// modern-broken-reissue through the gateway, on the real v2 SDK (client and server 2.4): the v2 client
// (`versionNegotiation: auto`, its fetch instrumented for the guard's callbacks only) calls `charge`
// through the gateway; the lab's fault proxy, between the gateway and the v2 lab server, cuts the
// call's response after its first event; `charge` runs on; the application re-issues the call. The
// findings expected of the gateway's spans alone are the detector README's table "The 2026-07-28 era
// on the lab". With the server's spans too, the gateway's request span is their parent upstream (its
// `traceparent`), so the first attempt's fate is in its trace: `duplicate_execution`.
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { BrokenAttempt, ReissueReport } from '@resumewatch/guard';
import { instrumentFetch, instrumentMcpServer } from '@resumewatch/instrumentation';
import { connectSdkSession, startFaultProxy, startModernLabServer } from '@resumewatch/lab';
import { FindingKind } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../src/index.js';
import { MODERN_EXPECTED } from '../../detector/test/helpers/modern-expected.js';
import { gatewayMcpUrl, kindsOf, startTestGateway, waitFor } from './helpers/e2e-rig.js';

beforeAll(() => propagation.setGlobalPropagator(new W3CTraceContextPropagator()));
afterAll(() => propagation.disable());

/** Runs the broken call and its re-issue through a gateway; with `serverSpans`, the server's spans go to the gateway's detector. */
async function brokenReissue(serverSpans: boolean) {
  let gateway: RunningGateway | undefined;
  // The server's spans, into the gateway's built-in detector (it starts after the server: handed over late).
  const serverProvider = new BasicTracerProvider({
    spanProcessors: [
      {
        onStart: () => undefined,
        onEnd: (span) => gateway?.detector!.processor.onEnd(span),
        forceFlush: () => Promise.resolve(),
        shutdown: () => Promise.resolve(),
      },
    ],
  });
  const server = await startModernLabServer({
    eras: 'modern-only',
    ...(serverSpans
      ? { decorateServer: (s) => instrumentMcpServer(s, { tracerProvider: serverProvider, cancellationWaitMs: 5_000 }) }
      : {}),
  });
  const proxy = await startFaultProxy({ target: server.url });
  const broken: BrokenAttempt[] = [];
  const reissues: ReissueReport[] = [];
  try {
    gateway = await startTestGateway(proxy.url);
    // No tracer provider: the client's spans go nowhere and it sends no trace context (an invalid span's).
    const fetch = instrumentFetch({
      guard: { onStreamBroken: (a) => void broken.push(a), onReissue: (r) => void reissues.push(r) },
    });
    const client = await connectSdkSession('sdk-v2', gatewayMcpUrl(gateway, proxy.url), fetch, 'gateway-modern', {
      negotiation: 'auto',
    });
    const args = { key: `gateway-modern-${Date.now()}`, workMs: 1000 };
    proxy.armCut({ method: 'POST', afterEvents: 1 });
    await client.callTool('charge', args, { timeout: 1500, onprogress: () => undefined }).catch(() => undefined);
    await waitFor(() => server.executions().length > 0, 'the first attempt to finish on the server');
    await client.callTool('charge', args, { onprogress: () => undefined });
    await client.close();
    expect(server.sideEffectCount(args.key)).toBe(2);

    const d = gateway.detector!;
    await waitFor(() => d.detector.stats().reissues > 0, 'the re-issue at the gateway');
    await gateway.flush();
    // Past the re-issue's settle time: a re-issue whose first attempt's fate is unknown is reported then.
    d.detector.advance(Date.now() + Math.max(d.config.stormWindowMs, d.config.reissueSettleMs) + 1);
    return { findings: d.findings(), broken, reissues };
  } finally {
    await gateway?.close();
    await proxy.close();
    await server.close();
  }
}

describe('modern-broken-reissue through the gateway', () => {
  it('the gateway alone cannot learn the first attempt ran: as the README table says', async () => {
    const { findings, broken, reissues } = await brokenReissue(false);
    expect(kindsOf(findings)).toEqual([...MODERN_EXPECTED['modern-broken-reissue'].gateway!].sort());
    // The client's guard, in the same run, told the application of the broken stream and the re-issue.
    expect(broken.map((b) => b.name)).toEqual(['charge']);
    expect(reissues.map((r) => r.name)).toEqual(['charge']);
  }, 30_000);

  it("with the server's spans, in the gateway's first-attempt trace: duplicate_execution", async () => {
    const { findings, reissues } = await brokenReissue(true);
    // And the first attempt's lost_result, retracted by the re-issue.
    expect(kindsOf(findings)).toEqual([FindingKind.DUPLICATE_EXECUTION, FindingKind.LOST_RESULT]);
    expect(reissues).toHaveLength(1);
  }, 30_000);
});
