// Every task scenario of the lab (both shapes) through the gateway, observing and under --enforce. Each
// scenario starts its own server (the SDK 1.x task server for `task-*`, the v2 lab server's 2026-07-28
// extension for `modern-task-*`, both eras for `task-legacy-client-extension-server`); `tasks.front`
// puts a gateway between the scenario's fault cut and that server, so the cut is between the gateway and
// its client. The gateway's embedded detector must report exactly the kinds below, no request-level kind
// besides. They are the lab's promise (`expectedTaskFindings`) except where the gateway alone sees
// another truth, each said at `atGateway`.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Finding } from '@resumewatch/detector';
import { TASK_SCENARIO_NAMES, expectedTaskFindings, runScenario } from '@resumewatch/lab';
import type { ScenarioSummary, TaskScenarioName } from '@resumewatch/lab';
import { startEverythingServer } from '@resumewatch/lab/everything-server';
import type { EverythingServer } from '@resumewatch/lab/everything-server';
import {
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_REQUESTED,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  FindingKind,
  SPAN_REQUEST_TERMINAL,
  TaskLostReason,
  TaskMethod,
  TaskShape,
  TaskStatus,
} from '@resumewatch/semconv';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../src/index.js';
import { gatewayMcpUrl, kindsOf, settleGateway, startTestGateway } from './helpers/e2e-rig.js';

const TIMEOUT = 40_000;
const REISSUES: readonly TaskScenarioName[] = ['task-reissue-after-lost-reply', 'modern-task-duplicate'];

interface Case {
  name: TaskScenarioName;
  enforce: boolean;
  /** The re-issue scenarios: both attempts carry an idempotency key. */
  keyed: boolean;
}

interface Run {
  summary: ScenarioSummary;
  gateway: RunningGateway;
  findings: Finding[];
  spans: ReadableSpan[];
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.allSettled(closers.splice(0).map((close) => close()));
});

/** Runs one task scenario with a gateway in front of its server; the gateway's findings once it is idle. */
async function throughGateway({ name, enforce, keyed }: Case): Promise<Run> {
  const exporter = new InMemorySpanExporter();
  let gateway: RunningGateway | undefined;
  const summary = await runScenario(name, {
    serverUrl: 'http://127.0.0.1:9/mcp',
    tasks: {
      ...(keyed ? { idempotencyKey: true } : {}),
      front: async (serverUrl) => {
        gateway = await startTestGateway(serverUrl, { enforce, spanProcessors: [new SimpleSpanProcessor(exporter)] });
        closers.push(() => gateway!.close());
        // The scenario closes its front before its server: the gateway stays, for its findings.
        return { url: gatewayMcpUrl(gateway, serverUrl), close: () => Promise.resolve() };
      },
    },
  });
  await settleGateway(gateway!);
  const d = gateway!.detector!;
  // Past a re-issue's settle time too: a "possible" finding waits for it. (The detector's clock then
  // stands over 60 s on, past the scenarios' default task ttl of 60 s.)
  d.detector.advance(Date.now() + Math.max(d.config.stormWindowMs, d.config.reissueSettleMs) + 1);
  return { summary, gateway: gateway!, findings: d.findings(), spans: exporter.getFinishedSpans() };
}

/**
 * What the gateway alone must find. The re-issue scenarios' cut is the fault proxy's, in front of the
 * gateway: the gateway wrote the whole creation answer (2025-11-25: the JSON `CreateTaskResult`, held
 * whole to name its task; 2026-07-28: the progress event and the handle, back to back) before its client
 * dropped it. The gateway knows what it wrote, not what the client read, so:
 * - without a key, nothing ties the second call to a lost first reply: no possible_duplicate_task (the
 *   instrumented client, which saw its reply lost, reports it: the lab's own tests);
 * - with a key, the key says the two calls are one piece of work: duplicate_task, certain, observing;
 *   under --enforce the gateway answers the second call with the first task's handle: one task, nothing
 *   to report.
 * The 2025-11-25 re-issue's first task ran to `completed` (its status notification went through the
 * gateway, on the session's stream) and no one ever fetched its result: once its ttl (60 s) passed,
 * lost_task_result, reason ttl_passed. That is right, as the lab's table says of it: the orphan's outcome
 * reached no one. Under --enforce with a key there is no orphan. The 2026-07-28 first task's completion
 * shows on no wire the gateway sees (nobody polls it), so nothing is said of it.
 */
function atGateway({ name, enforce, keyed }: Case): FindingKind[] {
  if (!REISSUES.includes(name)) return expectedTaskFindings(name, false);
  if (enforce && keyed) return [];
  const kinds: FindingKind[] = keyed ? [FindingKind.DUPLICATE_TASK] : [];
  if (name === 'task-reissue-after-lost-reply') kinds.push(FindingKind.LOST_TASK_RESULT);
  return kinds.sort();
}

/** The request spans of one method (named `method` or `method target`; their terminal spans are not). */
const byMethod = (spans: readonly ReadableSpan[], method: string): ReadableSpan[] =>
  spans.filter((span) => span.attributes[ATTR_MCP_METHOD_NAME] === method && span.name.split(' ')[0] === method);

const cases: Case[] = [false, true].flatMap((enforce) => [
  ...TASK_SCENARIO_NAMES.map((name) => ({ name, enforce, keyed: false })),
  ...REISSUES.map((name) => ({ name, enforce, keyed: true })),
]);

describe('the lab task scenarios through the gateway', { timeout: TIMEOUT }, () => {
  it.each(cases.map((c) => [`${c.name}${c.keyed ? ' (keyed)' : ''}, ${c.enforce ? '--enforce' : 'observe'}`, c]))(
    '%s',
    async (_, c) => {
      const { summary, gateway, findings, spans } = await throughGateway(c);
      expect(gateway.detector!.detector.stats().spans.accepted, 'spans the gateway observed').toBeGreaterThan(0);
      expect(kindsOf(findings)).toEqual(atGateway(c));
      const created = summary.details.tasksCreated as string[] | number;

      if (REISSUES.includes(c.name)) {
        if (c.enforce && c.keyed) {
          // The gateway answered the re-issue with the first task's handle: the server made one task.
          expect(created).toHaveLength(1);
          expect(gateway.counts().taskHandlesRepeated).toBe(1);
        } else {
          expect(created).toHaveLength(2);
          expect(gateway.counts().taskHandlesRepeated).toBe(0);
        }
        if (c.keyed && !c.enforce)
          expect(findings.find((f) => f.kind === FindingKind.DUPLICATE_TASK)).toMatchObject({
            task_id: (created as string[])[0],
            duplicate_task_id: (created as string[])[1],
          });
        if (c.name === 'task-reissue-after-lost-reply' && !(c.enforce && c.keyed))
          expect(findings.find((f) => f.kind === FindingKind.LOST_TASK_RESULT)).toMatchObject({
            task_id: (created as string[])[0],
            reason: TaskLostReason.TTL_PASSED,
          });
      }
      if (!c.enforce) {
        // Observing changes nothing on the wire.
        expect(gateway.counts().actions).toEqual({});
        expect(gateway.counts().refusals).toEqual({});
      }

      // The "no finding" cases: the gateway saw the traffic that would have been a finding if misread.
      if (c.name === 'task-rereads') {
        // Three tasks/result answers, each delivering the outcome (the spec makes them idempotent), and
        // tasks/get after completion.
        const results = byMethod(spans, TaskMethod.RESULT);
        expect(results).toHaveLength(3);
        for (const span of results) expect(span.attributes[ATTR_MCP_TASK_OUTCOME_DELIVERED]).toBe(true);
      }
      if (c.name === 'task-cancelled' || c.name === 'task-healthy' || c.name === 'modern-task-healthy') {
        const [call] = spans.filter(
          (span) => span.attributes[ATTR_MCP_METHOD_NAME] === 'tools/call' && span.attributes[ATTR_MCP_TASK_ID],
        );
        expect(call?.attributes[ATTR_MCP_TASK_ID]).toBe((created as string[])[0]);
        expect(byMethod(spans, TaskMethod.GET).length).toBeGreaterThan(0);
      }
      if (c.name === 'task-cancelled') expect(byMethod(spans, TaskMethod.CANCEL)).toHaveLength(1);
      if (c.name === 'task-healthy' || c.name === 'modern-task-healthy') {
        // At the announced rate, the result within its ttl: delivered once.
        const delivered = spans.filter(
          (span) => span.attributes[ATTR_MCP_TASK_OUTCOME_DELIVERED] === true && span.name !== SPAN_REQUEST_TERMINAL,
        );
        expect(delivered).toHaveLength(1);
      }
      if (c.name === 'task-legacy-client-extension-server') {
        // The 2025-11-25 client never declared the extension: a plain result, no task on any span.
        expect(created).toBe(0);
        expect(spans.some((span) => span.attributes[ATTR_MCP_TASK_ID] !== undefined)).toBe(false);
        expect(byMethod(spans, 'tools/call')).toHaveLength(1);
      }
    },
  );
});

// `@modelcontextprotocol/server-everything`'s task tool through the gateway, with the SDK 1.x client's task
// API: a real peer's tasks (ttl 5 min, pollInterval 1 s, about 5 s of work), no finding, and the task on the
// gateway's spans. One server, one gateway per mode.
describe("server-everything's simulate-research-query through the gateway (SDK 1.x callToolStream)", () => {
  let everything: EverythingServer | undefined;
  beforeAll(async () => {
    everything = await startEverythingServer({ startTimeoutMs: 60_000 });
  }, 70_000);
  afterAll(async () => {
    await everything?.stop();
  });

  for (const enforce of [false, true])
    it(enforce ? '--enforce' : 'observe', { timeout: 60_000 }, async () => {
      const exporter = new InMemorySpanExporter();
      const gateway = await startTestGateway(everything!.url, {
        enforce,
        spanProcessors: [new SimpleSpanProcessor(exporter)],
      });
      closers.push(() => gateway.close());
      const client = new Client({ name: 'research-client', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(gatewayMcpUrl(gateway, everything!.url))));
      const seen: string[] = [];
      let taskId = '';
      let text = '';
      const stream = client.experimental.tasks.callToolStream(
        { name: 'simulate-research-query', arguments: { topic: 'tasks' } },
        CallToolResultSchema,
        { task: { ttl: 300_000 } },
      );
      for await (const message of stream) {
        seen.push(message.type);
        if (message.type === 'taskCreated') taskId = message.task.taskId;
        if (message.type === 'result') text = (message.result.content as { text?: string }[])[0]?.text ?? '';
      }
      await client.close();
      expect(seen[0]).toBe('taskCreated');
      expect(seen.at(-1)).toBe('result');
      expect(text).toMatch(/Research Report/);

      await settleGateway(gateway);
      const d = gateway.detector!;
      d.detector.advance(Date.now() + Math.max(d.config.stormWindowMs, d.config.reissueSettleMs) + 1);
      expect(d.findings()).toEqual([]);

      const spans = exporter.getFinishedSpans();
      const [call] = byMethod(spans, 'tools/call');
      expect(call!.attributes).toMatchObject({
        [ATTR_MCP_TASK_REQUESTED]: true,
        [ATTR_MCP_TASK_ID]: taskId,
        [ATTR_MCP_TASK_SHAPE]: TaskShape.AUGMENTED,
        [ATTR_MCP_TASK_TTL_MS]: 300_000,
        [ATTR_MCP_TASK_POLL_INTERVAL_MS]: 1_000,
      });
      const polls = byMethod(spans, TaskMethod.GET);
      expect(polls.length).toBeGreaterThan(0);
      for (const poll of polls) expect(poll.attributes[ATTR_MCP_TASK_ID]).toBe(taskId);
      expect(polls.at(-1)!.attributes[ATTR_MCP_TASK_STATUS]).toBe(TaskStatus.COMPLETED);
      expect(byMethod(spans, TaskMethod.RESULT).map((s) => s.attributes[ATTR_MCP_TASK_OUTCOME_DELIVERED])).toEqual([
        true,
      ]);
      expect(d.detector.stats().tasks).toBe(1);
      // Nothing withheld, nothing refused: the call carried no key.
      expect(gateway.counts().taskHandlesRepeated).toBe(0);
      expect(gateway.counts().refusals).toEqual({});
    });
});
