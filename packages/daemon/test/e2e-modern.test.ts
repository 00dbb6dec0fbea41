import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { instrumentFetch, instrumentMcpServer } from '@resumewatch/instrumentation';
import type { GuardOptions } from '@resumewatch/instrumentation';
import { V2_SERVER_SCENARIO_NAMES, runScenario } from '@resumewatch/lab';
import { FindingKind, FindingRecord, ProtocolEra } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../src/index.js';
import type { RunningServer } from '../src/index.js';
import { MODERN_EXPECTED } from '../../detector/test/helpers/modern-expected.js';
import type { V2ScenarioName } from '../../detector/test/helpers/modern-expected.js';
import { providerWith } from '../../detector/test/helpers/otlp.js';
import { waitFor } from '../../detector/test/helpers/wait.js';

// The 2026-07-28 era end to end, every part real: the lab's scenarios on the v2 SDK (client and server
// 2.4) over loopback, instrumentFetch (with the guard's callbacks) on the client, instrumentMcpServer on
// the v2 lab server, the OTLP/HTTP exporter, and one `resumewatch serve`. The client propagates its
// request span's context (the W3C propagator, as the OpenTelemetry Node SDK registers it), so the
// server's span of a first attempt is in that attempt's trace. The expected findings are the detector
// README's table "The 2026-07-28 era on the lab".

type BrokenAttempt = Parameters<NonNullable<GuardOptions['onStreamBroken']>>[0];
type ReissueReport = Parameters<NonNullable<GuardOptions['onReissue']>>[0];

/** The scenarios start their own v2 server: this URL is never called. */
const UNUSED_LAB_URL = 'http://127.0.0.1:9/mcp';
const TIMEOUT = 60_000;

let detector: RunningServer;
let serial = 0;

beforeAll(async () => {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  detector = await startServer({ port: 0, grpcPort: 0, metricsPort: 0, output: null });
});
afterAll(async () => {
  propagation.disable();
  await detector?.close();
});

async function run(name: V2ScenarioName) {
  const services = { client: `e2e-modern-client-${++serial}`, server: `e2e-modern-server-${serial}` };
  const url = `http://127.0.0.1:${detector.httpPort}/v1/traces`;
  const clientProvider = providerWith(new OTLPTraceExporter({ url }), services.client);
  const serverProvider = providerWith(new OTLPTraceExporter({ url }), services.server);
  const broken: BrokenAttempt[] = [];
  const reissues: ReissueReport[] = [];
  const fetch = instrumentFetch({
    tracerProvider: clientProvider,
    requestTimeoutMs: 10_000,
    guard: { onStreamBroken: (a) => void broken.push(a), onReissue: (r) => void reissues.push(r) },
  });
  const erasBefore = detector.metrics.eraCounts();
  try {
    const summary = await runScenario(name, {
      serverUrl: UNUSED_LAB_URL,
      fetch,
      client: 'sdk-v2',
      modernServer: {
        decorateServer: (s) => instrumentMcpServer(s, { tracerProvider: serverProvider, cancellationWaitMs: 5_000 }),
      },
    });
    await waitFor(() => {
      const s = fetch.stats();
      return s.openRequests === 0 && s.openResumes === 0 && s.pendingHttp === 0 && s.heldPolls === 0;
    }, "the client's spans to end");
    await Promise.all([clientProvider.forceFlush(), serverProvider.forceFlush()]);
    // Past the storm window and the re-issue's settle time: a re-issue without its first attempt's fate
    // is reported as possible then.
    const { stormWindowMs, reissueSettleMs } = detector.config;
    detector.detector.advance(Date.now() + Math.max(stormWindowMs, reissueSettleMs) + 1);
    const findings = detector.findings().filter((f) => f.service === services.client || f.service === services.server);
    // The requests the detector counted in each era during this run: the spans did arrive.
    const erasAfter = detector.metrics.eraCounts();
    const eras = {
      sessions: erasAfter[ProtocolEra.SESSIONS] - erasBefore[ProtocolEra.SESSIONS],
      stateless: erasAfter[ProtocolEra.STATELESS] - erasBefore[ProtocolEra.STATELESS],
    };
    return { summary, findings, broken, reissues, eras };
  } finally {
    await Promise.allSettled([clientProvider.shutdown(), serverProvider.shutdown()]);
  }
}

const kinds = (findings: readonly { kind: string }[]) => [...new Set(findings.map((f) => f.kind))].sort();

describe('the 2026-07-28 era on the lab, client and server instrumented, one resumewatch serve', () => {
  it('has a row of the README table for every v2 scenario', () => {
    expect(Object.keys(MODERN_EXPECTED).sort()).toEqual([...V2_SERVER_SCENARIO_NAMES].sort());
  });

  for (const name of V2_SERVER_SCENARIO_NAMES) {
    it(
      `${name}: ${MODERN_EXPECTED[name].clientAndServer.join(', ') || 'no finding'}`,
      async () => {
        const { findings, broken, reissues, eras } = await run(name);
        // Every scenario has 2026-07-28 exchanges; the session era's only where a session-era client runs.
        const sessionEraClient = name === 'dual-era' || name === 'session-client-modern-server';
        expect([eras.stateless > 0, eras.sessions > 0]).toEqual([true, sessionEraClient]);
        expect(kinds(findings)).toEqual([...MODERN_EXPECTED[name].clientAndServer].sort());
        const reissued = name === 'modern-broken-reissue' || name === 'modern-honours-cancel';
        // The guard, in the same run, tells the application of the broken stream and of the re-issue.
        expect(broken.map((b) => b.name)).toEqual(reissued ? [expect.any(String)] : []);
        expect(reissues.map((r) => r.name)).toEqual(broken.map((b) => b.name));
        // The broken first attempt's result was lost when its stream broke; the re-issue recovered the call.
        expect(findings.filter((f) => f.kind === FindingKind.LOST_RESULT).map((f) => f.record ?? 'finding')).toEqual(
          reissued ? ['finding', FindingRecord.RETRACTION] : [],
        );
        if (name === 'modern-broken-reissue') {
          // Both sides' evidence, in one trace: the first attempt's.
          const [finding] = findings.filter((f) => f.kind === FindingKind.DUPLICATE_EXECUTION);
          expect(finding).toBeDefined();
          expect((finding as { span_ids?: string[] }).span_ids).toHaveLength(3);
        }
      },
      TIMEOUT,
    );
  }
});
