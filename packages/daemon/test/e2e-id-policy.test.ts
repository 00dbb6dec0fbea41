import { PassThrough } from 'node:stream';
import { DiagLogLevel, diag } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { instrumentFetch } from '@resumewatch/instrumentation';
import type { IdPolicyOptions, InstrumentedFetch } from '@resumewatch/instrumentation';
import { runScenario } from '@resumewatch/lab';
import type { LabServer, ScenarioName } from '@resumewatch/lab';
import { ATTR_SERVICE_NAME, FindingKind } from '@resumewatch/semconv';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { IdLedger, hmacId, startIdLedgerLab } from '../../instrumentation/test/helpers/id-ledger.js';
import { startServer } from '../src/index.js';
import type { RunningServer } from '../src/index.js';
import { waitFor } from '../../detector/test/helpers/wait.js';
import type { Side } from './helpers/lab-rig.js';

// Every lab scenario through the real instrumentation, with raw and with hashed ids, to one in-process
// `resumewatch serve`: with `hmac`, no raw session id or event id may appear in an exported span, a
// finding (GET /findings and the JSON-lines output), /metrics (Prometheus and OpenMetrics) or anything
// logged; and each scenario's finding kinds are the same as with raw ids.

const KEY = 'the e2e test key, 32 bytes long!';
const hmac = (id: string): string => hmacId(KEY, id);
const SEED = [
  FindingKind.DUPLICATE_TERMINAL,
  FindingKind.RESUME_AFTER_TERMINAL,
  FindingKind.RECONNECT_STORM,
  FindingKind.SIGNATURE,
];
/** The finding kinds of each scenario per side, as e2e-lab.test.ts checks them with raw ids. */
const EXPECTED: Record<Side, [ScenarioName, readonly string[]][]> = {
  client: [
    ['seed-loop', SEED],
    ['per-stream-dedup', SEED],
    ['network-cut', []],
    ['server-restart', [FindingKind.AMBIGUOUS_EMPTY_REPLAY]],
    ['cursor-evicted', [FindingKind.CURSOR_LOST]],
    ['sdk-error-resume', [FindingKind.RESUME_AFTER_TERMINAL]],
  ],
  server: [
    ['seed-loop', SEED],
    ['per-stream-dedup', SEED],
    ['network-cut', []],
    ['server-restart', []],
    ['cursor-evicted', []],
    ['sdk-error-resume', [FindingKind.RESUME_AFTER_TERMINAL]],
  ],
};
const RAW: IdPolicyOptions = { idPolicy: 'raw' };
const HMAC: IdPolicyOptions = { idPolicy: 'hmac', idKey: KEY };

/** Whatever the process logs while the scenarios run: stdout, stderr, console and the OpenTelemetry diag logger. */
const logged: string[] = [];
const record = (...args: unknown[]): void =>
  void logged.push(args.map((a) => (typeof a === 'string' ? a : (JSON.stringify(a) ?? String(a)))).join(' '));

let detector: RunningServer;
const output = new PassThrough();
let outputText = '';
beforeAll(async () => {
  output.on('data', (d: Buffer) => (outputText += d.toString()));
  detector = await startServer({ port: 0, metricsPort: 0, output });
  diag.setLogger({ error: record, warn: record, info: record, debug: () => {}, verbose: () => {} }, DiagLogLevel.INFO);
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream);
    vi.spyOn(stream, 'write').mockImplementation(((chunk: unknown, ...rest: never[]) => {
      record(String(chunk));
      return write(chunk as string, ...rest);
    }) as typeof stream.write);
  }
  for (const method of ['log', 'info', 'warn', 'error'] as const) vi.spyOn(console, method).mockImplementation(record);
});
afterAll(async () => {
  vi.restoreAllMocks();
  diag.disable();
  await detector.close();
});

let serial = 0;
/** Every session id and event id the lab's stores hand out, to look for where none may be. */
const ledger = new IdLedger();

interface Run {
  service: string;
  sessionId: string;
  spansJson: string;
  kinds: string[];
}

const runs: { lab: LabServer; provider: BasicTracerProvider }[] = [];
afterEach(async () => {
  await Promise.allSettled(
    runs.splice(0).map(async ({ lab, provider }) => Promise.all([lab.close(), provider.shutdown()])),
  );
});

/** One scenario on one side with one id policy: its own lab server, tracer provider and service name. */
async function run(side: Side, name: ScenarioName, ids: IdPolicyOptions, expected: readonly string[]): Promise<Run> {
  const service = `ids-${side}-${ids.idPolicy}-${name}-${++serial}`;
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: service }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `http://127.0.0.1:${detector.httpPort}/v1/traces` }), {
        scheduledDelayMillis: 50,
      }),
      new SimpleSpanProcessor(memory),
    ],
  });
  const tracerProvider = provider;
  // Server spans: each session's store and transport instrumented with this run's provider and ids.
  const lab = await startIdLedgerLab(ledger, side === 'server' ? () => ({ tracerProvider, ids }) : undefined);
  runs.push({ lab, provider });
  const instrumented: InstrumentedFetch | undefined =
    // server-restart's evidence is the request's deadline (its polls never bring the result): a short one.
    side === 'client'
      ? instrumentFetch({ tracerProvider, requestTimeoutMs: name === 'server-restart' ? 2_000 : 10_000, ...ids })
      : undefined;
  const summary = await runScenario(name, {
    serverUrl: lab.url,
    controlUrl: lab.controlUrl,
    fetch: instrumented ?? globalThis.fetch,
    maxReconnects: 10,
  });
  if (instrumented) {
    const done = (): boolean => {
      const stats = instrumented.stats();
      return stats.openResumes === 0 && stats.pendingHttp === 0 && stats.heldPolls === 0;
    };
    await waitFor(done, 'the resume spans to end');
  }
  await provider.forceFlush();
  // A storm seen by server spans alone ends when its window passes quietly: move the detector's clock past it.
  detector.detector.advance(Date.now() + detector.config.stormWindowMs + 1);
  const kinds = (): string[] =>
    [
      ...new Set(
        detector
          .findings()
          .filter((f) => f.service === service)
          .map((f) => f.kind),
      ),
    ].sort();
  await waitFor(() => expected.every((k) => kinds().includes(k)), `${expected.join(', ') || 'no finding'} for ${name}`);
  // Anything still in flight is in before the exact checks.
  await provider.forceFlush();
  return {
    service,
    sessionId: summary.sessionId!,
    spansJson: JSON.stringify(memory.getFinishedSpans().map((s) => s.attributes)),
    kinds: kinds(),
  };
}

async function metricsText(accept: string): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${detector.metricsPort}/metrics`, { headers: { accept } });
  return response.text();
}

for (const side of ['client', 'server'] as const) {
  describe(`${side} spans: hmac ids`, () => {
    for (const [name, expected] of EXPECTED[side]) {
      it(
        `${name}: the same finding kinds as raw ids (${expected.join(', ') || 'none'}), no raw id anywhere`,
        { timeout: 90_000 },
        async () => {
          const raw = await run(side, name, RAW, expected);
          expect(raw.kinds).toEqual([...expected].sort());
          // The baseline does carry raw ids, so the checks below would see them.
          expect(ledger.leaks(raw.spansJson)).toContain(raw.sessionId);
          ledger.clear();

          const hashed = await run(side, name, HMAC, expected);
          expect(hashed.kinds).toEqual(raw.kinds);
          expect(ledger.sessions).toEqual(new Set([hashed.sessionId]));
          expect(ledger.leaks(hashed.spansJson)).toEqual([]);
          expect(hashed.spansJson).toContain(JSON.stringify(hmac(hashed.sessionId)));
          const findings = detector.findings().filter((f) => f.service === hashed.service);
          expect(findings.length).toBeGreaterThanOrEqual(expected.length);
          for (const f of findings) expect(f.session_id).toBe(hmac(hashed.sessionId));
          // Findings as /findings serves them, as written out, and every metric.
          const served = await (await fetch(`http://127.0.0.1:${detector.metricsPort}/findings`)).text();
          expect(ledger.leaks(served)).toEqual([]);
          expect(ledger.leaks(outputText)).toEqual([]);
          expect(ledger.leaks(await metricsText('text/plain'))).toEqual([]);
          expect(ledger.leaks(await metricsText('application/openmetrics-text'))).toEqual([]);
          expect(ledger.leaks(logged.join('\n'))).toEqual([]);
          ledger.clear();
        },
      );
    }
  });
}
