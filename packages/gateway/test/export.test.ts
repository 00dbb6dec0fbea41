// The gateway's spans leave the process too: with the standard OTLP endpoint variable set, a central
// `resumewatch serve` (the real one, over OTLP/HTTP) sees what the gateway's own detector sees, under the
// id policy the gateway was given.
import { startServer } from '@resumewatch/daemon';
import type { RunningServer } from '@resumewatch/daemon';
import { runScenario, startLabServer } from '@resumewatch/lab';
import type { LabServer } from '@resumewatch/lab';
import { FindingKind } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startGateway } from '../src/index.js';
import type { RunningGateway } from '../src/index.js';

const SEED = [
  FindingKind.DUPLICATE_TERMINAL,
  FindingKind.RESUME_AFTER_TERMINAL,
  FindingKind.RECONNECT_STORM,
  FindingKind.SIGNATURE,
].sort();

let lab: LabServer;
let central: RunningServer;
let gateway: RunningGateway;

beforeAll(async () => {
  lab = await startLabServer({ retryIntervalMs: 50 });
  central = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null });
  vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', `http://127.0.0.1:${central.httpPort}`);
  vi.stubEnv('OTEL_BSP_SCHEDULE_DELAY', '50');
  gateway = await startGateway({
    upstream: lab.url,
    port: 0,
    serviceName: 'mcp-front',
    idPolicy: 'hmac',
    idKey: 'a key of sixteen bytes or more',
    detector: { config: { metricsPort: 0 }, output: null },
  });
  vi.unstubAllEnvs();
});

afterAll(async () => {
  await gateway?.close();
  await central?.close();
  await lab?.close();
});

const kinds = (findings: { kind: string; record?: string }[]) =>
  [...new Set(findings.filter((f) => f.record === undefined).map((f) => f.kind))].sort();

describe('gateway spans exported over OTLP', () => {
  it('a central serve finds the seed loop under the gateway service name, with hashed session ids, as the gateway does', async () => {
    const summary = await runScenario('seed-loop', {
      serverUrl: new URL(new URL(lab.url).pathname, gateway.url).href,
      controlUrl: lab.controlUrl,
      fetch: globalThis.fetch,
      maxReconnects: 10,
    });
    expect(summary.terminalDeliveries).toBeGreaterThan(1);
    await gateway.flush();
    await vi.waitFor(() => expect(kinds(central.findings())).toEqual(SEED), { timeout: 15_000, interval: 50 });
    await vi.waitFor(() => expect(kinds(gateway.detector!.findings())).toEqual(SEED), {
      timeout: 15_000,
      interval: 50,
    });
    const exported = central.findings().filter((f) => f.record === undefined);
    expect(new Set(exported.map((f) => f.service))).toEqual(new Set(['mcp-front']));
    // The session id never leaves the gateway raw, in either detector.
    for (const f of [...exported, ...gateway.detector!.findings()]) expect(f.session_id).not.toBe(summary.sessionId);
    expect(new Set(exported.map((f) => f.session_id))).toEqual(
      new Set(
        gateway
          .detector!.findings()
          .filter((f) => f.record === undefined)
          .map((f) => f.session_id),
      ),
    );
  });
});
