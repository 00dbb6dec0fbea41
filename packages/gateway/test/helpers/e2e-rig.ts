import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { startEmbeddedDetector } from '@resumewatch/daemon';
import type { EmbeddedDetector } from '@resumewatch/daemon';
import type { Finding } from '@resumewatch/detector';
import { instrumentFetch } from '@resumewatch/instrumentation';
import type { InstrumentedFetch } from '@resumewatch/instrumentation';
import { startLabServer } from '@resumewatch/lab';
import type { LabServer, LabServerOptions } from '@resumewatch/lab';
import { expect, vi } from 'vitest';
import { startGateway } from '../../src/index.js';
import type { GatewayOptions, RunningGateway } from '../../src/index.js';

/** A bounded wait on a synchronous check (`vi.waitFor`), the error naming what was awaited. */
export function waitFor<T>(check: () => T | undefined | false, what: string, timeoutMs = 20_000): Promise<T> {
  return vi.waitFor(
    () => {
      const value = check();
      if (!value) throw new Error(`timed out waiting for ${what}`);
      return value;
    },
    { timeout: timeoutMs, interval: 25 },
  );
}

/** Sorted distinct kinds of findings (records, such as storm_ended, count under their kind). */
export const kindsOf = (findings: readonly Finding[]): string[] => [...new Set(findings.map((f) => f.kind))].sort();
/** Records (`storm_ended`, `retraction`) as `kind:record`, sorted. */
const recordsOf = (findings: readonly Finding[]): string[] =>
  findings
    .filter((f) => f.record !== undefined)
    .map((f) => `${f.kind}:${f.record}`)
    .sort();

/** The embedded detector the gateway runs, started the same way, for the instrumented client's spans. */
const detectorOptions = { config: { metricsPort: 0 }, output: null } as const;

/** The gateway's MCP endpoint for an upstream MCP URL: the upstream's path on the gateway's origin. */
export function gatewayMcpUrl(gateway: RunningGateway, upstreamMcpUrl: string): string {
  return new URL(new URL(upstreamMcpUrl).pathname + new URL(upstreamMcpUrl).search, gateway.url).href;
}

/** Starts a gateway (free ports, in-process detector, nothing printed) in front of `upstream`. */
export function startTestGateway(
  upstream: string,
  options: Omit<GatewayOptions, 'upstream' | 'port' | 'detector'> = {},
): Promise<RunningGateway> {
  return startGateway({ upstream, port: 0, detector: detectorOptions, ...options });
}

/** Waits until nothing the gateway observes is still open (resumes, held polls, pending exchanges). */
async function gatewayIdle(gateway: RunningGateway): Promise<void> {
  await waitFor(() => {
    const s = gateway.stats();
    return s.openResumes === 0 && s.pendingHttp === 0 && s.heldPolls === 0 && gateway.counts().open === 0;
  }, "the gateway's exchanges to end");
}

/** Hands the gateway's spans to its detector and moves the detector's clock past the storm window. */
export async function settleGateway(gateway: RunningGateway): Promise<void> {
  await gatewayIdle(gateway);
  await gateway.flush();
  const d = gateway.detector!;
  d.detector.advance(Date.now() + d.config.stormWindowMs + 1);
}

/**
 * One lab server, one gateway in front of it, and an instrumented client fetch (its own tracer
 * provider into its own in-process detector) whose requests go to the gateway: one run is observed on
 * both sides of the proxy at once, and the two detectors' findings can be compared.
 */
export interface ParityRig {
  lab: LabServer;
  gateway: RunningGateway;
  /** The lab's MCP endpoint through the gateway. */
  url: string;
  /** The instrumented client's fetch (passive: no guard), to the gateway. */
  clientFetch: InstrumentedFetch;
  clientDetector: EmbeddedDetector;
  /** Waits until both sides are idle, flushes their spans, passes the storm window on both detectors. */
  settle(): Promise<void>;
  gatewayFindings(): Finding[];
  clientFindings(): Finding[];
  close(): Promise<void>;
}

export interface ParityRigOptions {
  /** The request deadline of both the gateway and the instrumented client. Default 10000 ms (as lab-rig.ts). */
  requestTimeoutMs?: number;
  enforce?: boolean;
  lab?: LabServerOptions;
}

export async function startParityRig(options: ParityRigOptions = {}): Promise<ParityRig> {
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const lab = await startLabServer({ retryIntervalMs: 50, ...options.lab });
  const closers: (() => Promise<unknown>)[] = [() => lab.close()];
  const close = async (): Promise<void> => {
    await Promise.allSettled(closers.splice(0).map((c) => c()));
  };
  try {
    const gateway = await startTestGateway(lab.url, { enforce: options.enforce ?? false, requestTimeoutMs });
    closers.push(() => gateway.close());
    const clientDetector = await startEmbeddedDetector(detectorOptions);
    closers.push(() => clientDetector.close());
    const provider = new BasicTracerProvider({ spanProcessors: [clientDetector.processor] });
    closers.push(() => provider.shutdown());
    const clientFetch = instrumentFetch({ tracerProvider: provider, requestTimeoutMs });
    return {
      lab,
      gateway,
      url: gatewayMcpUrl(gateway, lab.url),
      clientFetch,
      clientDetector,
      async settle() {
        await waitFor(() => {
          const s = clientFetch.stats();
          return s.openResumes === 0 && s.pendingHttp === 0 && s.heldPolls === 0;
        }, 'the client resume spans to end');
        await settleGateway(gateway);
        await provider.forceFlush();
        clientDetector.detector.advance(Date.now() + clientDetector.config.stormWindowMs + 1);
      },
      gatewayFindings: () => gateway.detector!.findings(),
      clientFindings: () => clientDetector.findings(),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** What a finding says about the run, without what differs by observer (the time it was made). */
const facts = (findings: readonly Finding[]): string[] =>
  findings
    .map((f) =>
      [f.kind, f.record ?? '-', f.session_id ?? '-', f.request_id ?? '-', f.ended_by ?? '-', f.status_code ?? '-'].join(
        ' ',
      ),
    )
    .sort();

/** Waits until both detectors hold every expected kind, then lets the last spans in before the exact checks. */
export async function settleBoth(r: ParityRig, name: string, expected: readonly string[]): Promise<void> {
  await r.settle();
  const has = (findings: readonly Finding[]) => expected.every((k) => findings.some((f) => f.kind === k));
  await waitFor(
    () => has(r.gatewayFindings()) && has(r.clientFindings()),
    `${expected.join(', ') || 'no finding'} for ${name}`,
  );
  await r.settle();
}

export function expectParity(r: ParityRig, name: string, expected: readonly string[]): void {
  expect(r.gateway.detector!.detector.stats().spans.accepted, 'spans the gateway observed').toBeGreaterThan(0);
  expect(kindsOf(r.gatewayFindings()), `gateway, ${name}`).toEqual([...expected].sort());
  expect(kindsOf(r.clientFindings()), `instrumented client, ${name}`).toEqual([...expected].sort());
  expect(recordsOf(r.gatewayFindings())).toEqual(recordsOf(r.clientFindings()));
  expect(facts(r.gatewayFindings())).toEqual(facts(r.clientFindings()));
  // Observe mode changes nothing on the wire.
  expect(r.gateway.counts().actions).toEqual({});
  expect(r.gateway.counts().refusals).toEqual({});
}
