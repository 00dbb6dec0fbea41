import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createGuardListener } from '@resumewatch/guard';
import { runScenario, startLabServer } from '@resumewatch/lab';
import type { LabServer, ScenarioClient, ScenarioName } from '@resumewatch/lab';
import {
  ATTR_MCP_EVENT_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_PREVIOUS_ID,
  ATTR_MCP_STREAM_RESUMED_FROM_ID,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_SERVER_PORT,
  GuardAction,
} from '@resumewatch/semconv';
import { WireObserver } from '@resumewatch/wire';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tracerSource } from '../src/instrument-fetch.js';
import { SpanRecorder } from '../src/span-recorder.js';
import { captureSpans, WAIT } from './helpers/spans.js';

/*
 * The guard decides (refuses a resume, removes a terminal, reports a failure) and the span recorder
 * records; the observer calls the deciding listener first and the decision travels on the request or
 * event, so the order the two are added in must change nothing: not a span, not an attribute, not
 * what the guard reports. Each scenario runs the real SDK client against the lab server twice, once
 * per order, and the two runs are compared after the ids that differ between any two runs (sessions,
 * cursors, the recorder's stream-id prefix, the fault proxy's port) are renamed by first appearance.
 */

let lab: LabServer;
beforeAll(async () => {
  lab = await startLabServer({ retryIntervalMs: 50 });
});
afterAll(async () => {
  await lab.close();
});

type Order = 'guard then recorder' | 'recorder then guard';

/** Attributes whose values are ids unique to a run: renamed by order of first appearance. */
const RUN_IDS = [ATTR_MCP_SESSION_ID, ATTR_MCP_EVENT_ID, ATTR_MCP_RESUME_LAST_EVENT_ID];
const STREAM_IDS = [
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_PREVIOUS_ID,
  ATTR_MCP_STREAM_RESUMED_FROM_ID,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
];

async function runInOrder(
  order: Order,
  scenario: ScenarioName,
  client: ScenarioClient,
): Promise<{ spans: string[]; reports: string[] }> {
  const capture = captureSpans();
  const observer = new WireObserver();
  const recorder = new SpanRecorder({ tracer: tracerSource(capture.provider), observer, requestTimeoutMs: 60_000 });
  const reports: { action: string; requestId: string | undefined }[] = [];
  const guard = createGuardListener({
    onResumeRefused: (r) => void reports.push({ action: r.action, requestId: r.requestIds.join() }),
    onDuplicateTerminalDropped: (r) => void reports.push({ action: r.action, requestId: r.requestId }),
    onConflictingTerminal: (r) => void reports.push({ action: r.action, requestId: r.requestId }),
    onFailedResumption: (r) => void reports.push({ action: r.action, requestId: r.requestId }),
  });
  if (order === 'guard then recorder') observer.addListener(guard, { filters: true }).addListener(recorder);
  else observer.addListener(recorder).addListener(guard, { filters: true });
  try {
    await runScenario(scenario, { serverUrl: lab.url, fetch: observer.wrap(), client, maxReconnects: 10 });
    await vi.waitFor(() => expect([recorder.stats().openResumes, recorder.stats().pendingHttp]).toEqual([0, 0]), WAIT);
  } finally {
    guard.dispose();
  }
  return { spans: normalised(capture.spans(), recorder), reports: reports.map((r) => JSON.stringify(r)).sort() };
}

/**
 * Each span as its name and attributes, run-specific ids renamed, sorted (spans end in wire order, not a
 * fixed one). Stream ids are numbered in the order streams open, which two concurrent responses (a
 * session's listening GET and its call's POST) may swap from run to run: they are renamed in the order
 * of the spans sorted without them, so that the same streams get the same names whatever opened first.
 */
function normalised(spans: ReadableSpan[], recorder: SpanRecorder): string[] {
  const renamed = new Map<unknown, string>();
  const rename = (value: unknown): string => {
    let name = renamed.get(value);
    if (name === undefined) renamed.set(value, (name = `id${renamed.size}`));
    return name;
  };
  const prefix = recorder.streamId({ id: '' } as never);
  const described = spans.map((span) => {
    const attributes: Record<string, unknown> = { ...span.attributes };
    delete attributes[ATTR_SERVER_PORT];
    for (const key of RUN_IDS) if (key in attributes) attributes[key] = rename(attributes[key]);
    const sorted = Object.fromEntries(Object.entries(attributes).sort(([a], [b]) => a.localeCompare(b)));
    const withoutStreams = { ...sorted };
    for (const key of STREAM_IDS) if (key in withoutStreams) withoutStreams[key] = 'stream';
    return {
      name: span.name,
      code: span.status.code,
      attributes: sorted,
      key: JSON.stringify([span.name, span.status.code, withoutStreams]),
    };
  });
  described.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const streams = new Map<string, string>();
  return described
    .map(({ name, code, attributes }) => {
      for (const key of STREAM_IDS)
        if (typeof attributes[key] === 'string') {
          const id = (attributes[key] as string).replace(prefix, '');
          if (!streams.has(id)) streams.set(id, `s${streams.size}`);
          attributes[key] = streams.get(id);
        }
      return JSON.stringify([name, code, attributes]);
    })
    .sort();
}

describe('the guard and the span recorder on one observer, in either order', () => {
  it.each([
    // The SDK resumes the stream of a JSON-RPC error it already has: refused before it leaves.
    { scenario: 'sdk-error-resume', client: 'raw', action: GuardAction.RESUME_REFUSED },
    // The server replays results into the listening stream: the copy of a delivered one is removed.
    { scenario: 'listening-replay', client: 'sdk', action: GuardAction.DUPLICATE_TERMINAL_DROPPED },
    // A store shared across sessions replays another session's result: the real one is a conflict.
    { scenario: 'cross-session-store', client: 'sdk', action: GuardAction.CONFLICTING_TERMINAL_REPORTED },
  ] as const)(
    '$scenario ($client client): the same spans, attributes and guard reports',
    { timeout: 60_000 },
    async ({ scenario, client, action }) => {
      const first = await runInOrder('guard then recorder', scenario, client);
      const second = await runInOrder('recorder then guard', scenario, client);
      // The guard acted, and its action is on a span: the comparison is not one of two runs without it.
      expect(first.reports.some((r) => r.includes(action))).toBe(true);
      expect(first.spans.some((s) => s.includes(`"${ATTR_MCP_GUARD_ACTION}":"${action}"`))).toBe(true);
      expect(second.reports).toEqual(first.reports);
      expect(second.spans).toEqual(first.spans);
    },
  );
});
