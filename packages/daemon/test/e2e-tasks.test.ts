import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { instrumentFetch, instrumentMcpServer } from '@resumewatch/instrumentation';
import { TASK_SCENARIO_NAMES, runScenario, type ScenarioSummary, type TaskScenarioName } from '@resumewatch/lab';
import { ATTR_MCP_TASK_ID, FindingKind, FindingRecord } from '@resumewatch/semconv';
import type { Finding } from '@resumewatch/detector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { providerWith } from '../../detector/test/helpers/otlp.js';
import { waitFor } from '../../detector/test/helpers/wait.js';
import { KeepingExporter } from './helpers/keeping-exporter.js';

// Every task scenario of the lab, both shapes, end to end: the lab's own servers over loopback HTTP,
// the client's fetch instrumented (instrumentFetch: the SDK 1.x client's task API and the 2026-07-28
// extension's plain fetch client alike), the v2 lab server through instrumentMcpServer, the real
// OTLP/JSON exporter, and one `resumewatch serve` (in process) whose detector must report exactly the
// scenario's expected findings (the lab's TASK_SCENARIO_EXPECTED_FINDINGS), and nothing else.

const TIMEOUT = 90_000;
/** The task scenarios start their own servers: this URL is never called. */
const UNUSED_LAB_URL = 'http://127.0.0.1:9/mcp';

beforeAll(() => {
  // A first attempt's server span joins the client's trace only under a W3C propagator, as the
  // OpenTelemetry Node SDK registers it.
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(() => {
  propagation.disable();
});

interface TaskRun {
  summary: ScenarioSummary;
  findings: Finding[];
  spans: ReadableSpan[];
}

let serial = 0;
const REISSUES: readonly TaskScenarioName[] = ['task-reissue-after-lost-reply', 'modern-task-duplicate'];
/** The re-issue scenarios' ttl: longer than the time the test moves serve's clock by. */
const REISSUE_TTL_MS = 10 * 60_000;

/** Runs one task scenario instrumented, exporting to a fresh serve; its findings once the spans are in. */
async function runInstrumented(name: TaskScenarioName, tasks: { idempotencyKey?: boolean } = {}): Promise<TaskRun> {
  const service = `e2e-tasks-${name}-${++serial}`;
  const detector = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null });
  const url = `http://127.0.0.1:${detector.httpPort}/v1/traces`;
  const clientExporter = new KeepingExporter(new JsonExporter({ url }));
  const serverExporter = new KeepingExporter(new JsonExporter({ url }));
  const clientProvider = providerWith(clientExporter, `${service}/client`);
  const serverProvider = providerWith(serverExporter, `${service}/server`);
  const fetch = instrumentFetch({ tracerProvider: clientProvider, requestTimeoutMs: 10_000 });
  try {
    const summary = await runScenario(name, {
      serverUrl: UNUSED_LAB_URL,
      fetch,
      tasks: {
        ...tasks,
        ttlMs: REISSUES.includes(name) ? REISSUE_TTL_MS : undefined,
        decorateServer: (s) => instrumentMcpServer(s, { tracerProvider: serverProvider }),
      },
      // The extension's task requests never reach this server's SDK (the lab answers them itself).
      modernServer: {
        decorateServer: (s) => instrumentMcpServer(s, { tracerProvider: serverProvider, cancellationWaitMs: 5_000 }),
      },
    });
    await waitFor(() => {
      const s = fetch.stats();
      return s.openRequests === 0 && s.openResumes === 0 && s.pendingHttp === 0 && s.heldPolls === 0;
    }, `the client spans of ${name} to end`);
    await Promise.all([clientProvider.forceFlush(), serverProvider.forceFlush()]);
    const exported = () => clientExporter.spans.length + serverExporter.spans.length;
    await waitFor(() => received(detector) >= exported(), `the spans of ${name} in serve`);
    // Time passes for what waits on it (a ttl, a re-issue's evidence window: a possible duplicate is
    // reported when it closes), short of the re-issue scenarios' ttl (below): their first task is never
    // fetched, and its ttl passing would make it a lost result as well.
    detector.detector.advance(Date.now() + detector.config.reissueSettleMs + 1_000);
    const findings = detector.findings().filter((f) => f.service.startsWith(`${service}/`));
    return { summary, findings, spans: [...clientExporter.spans, ...serverExporter.spans] };
  } finally {
    await Promise.allSettled([clientProvider.shutdown(), serverProvider.shutdown()]);
    await detector.close();
  }
}

/** Every span serve has taken in, whatever it made of it (a 2026-07-28 terminal span has no session to key it). */
function received(server: RunningServer): number {
  const spans = server.detector.stats().spans;
  return spans.accepted + spans.duplicate + spans.invalid + spans.ignored;
}

const kinds = (findings: readonly Finding[]): string[] =>
  [...new Set(findings.filter((f) => f.record === undefined).map((f) => f.kind))].sort();
const records = (findings: readonly Finding[]): string[][] =>
  findings.filter((f) => f.record !== undefined).map((f) => [f.kind, f.record!]);

/**
 * What this vantage point (the instrumented client, and the SDK 1.x task server through
 * instrumentMcpServer) reports beyond or instead of the lab's expected findings, and why each is right.
 */
const VANTAGE: Partial<Record<TaskScenarioName, { also?: FindingKind[]; not?: FindingKind[]; records?: string[][] }>> =
  {
    // The first call's reply (the first task's handle) never reached the client: request 1 lost its
    // result (its stream broke with no event id, a session-era request: nothing resumes it). True on the
    // wire: that first task completed and its outcome never reaches the caller; the re-issue is another
    // request, whose result is another task's. The duplicate says the work ran twice; this, that the first
    // run's outcome is lost.
    'task-reissue-after-lost-reply': { also: [FindingKind.LOST_RESULT] },
    // The extension server is the lab's own (no SDK implements the shape): no server span of it, and the
    // client never read the first handle. No span of the first attempt's trace names a task, so the
    // duplicate task cannot be shown from here (the gateway sees it: packages/gateway/test). What this
    // vantage point can say, it says: the broken first attempt's lost_result, retracted by its re-issue
    // (as for any 2026-07-28 re-issue), and, once the re-issue's window passes with the first attempt's
    // fate untold, a possible duplicate execution (right: the re-issued call may have run twice; it did).
    'modern-task-duplicate': {
      not: [FindingKind.POSSIBLE_DUPLICATE_TASK, FindingKind.DUPLICATE_TASK],
      also: [FindingKind.LOST_RESULT, FindingKind.POSSIBLE_DUPLICATE_EXECUTION],
      records: [[FindingKind.LOST_RESULT, FindingRecord.RETRACTION]],
    },
  };

function expectedAt(name: TaskScenarioName, summary: ScenarioSummary): { kinds: string[]; records: string[][] } {
  const v = VANTAGE[name] ?? {};
  const expected = (summary.expectedFindings ?? []).filter((k) => !(v.not ?? []).includes(k));
  return { kinds: [...new Set([...expected, ...(v.also ?? [])])].sort(), records: v.records ?? [] };
}

/** The SDK 1.x client against the extension server asks no task the server knows of: no task traffic. */
const NO_TASK_TRAFFIC: readonly TaskScenarioName[] = ['task-legacy-client-extension-server'];

describe('the lab task scenarios through the instrumentation to resumewatch serve', () => {
  for (const name of TASK_SCENARIO_NAMES) {
    it(`${name}: exactly the expected findings`, { timeout: TIMEOUT }, async () => {
      const { summary, findings, spans } = await runInstrumented(name);
      // The spans name the task(s): this vantage point saw the task traffic.
      expect(spans.some((s) => s.attributes[ATTR_MCP_TASK_ID] !== undefined)).toBe(!NO_TASK_TRAFFIC.includes(name));
      const want = expectedAt(name, summary);
      expect(kinds(findings), JSON.stringify(findings)).toEqual(want.kinds);
      expect(records(findings)).toEqual(want.records);
    });
  }

  it(
    'task-reissue-after-lost-reply with an idempotency key: duplicate_task, certain',
    { timeout: TIMEOUT },
    async () => {
      const name = 'task-reissue-after-lost-reply';
      const { summary, findings } = await runInstrumented(name, { idempotencyKey: true });
      expect(summary.expectedFindings).toEqual([FindingKind.DUPLICATE_TASK]);
      expect(kinds(findings), JSON.stringify(findings)).toEqual(expectedAt(name, summary).kinds);
      // The two tasks: the first attempt's (its server span) and the re-issue's.
      const [duplicate] = findings.filter((f) => f.kind === FindingKind.DUPLICATE_TASK);
      const created = summary.details.tasksCreated as string[];
      expect(created).toHaveLength(2);
      expect([duplicate!.task_id, duplicate!.duplicate_task_id]).toEqual(created);
    },
  );
});
