import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { instrumentFetch } from '@resumewatch/instrumentation';
import { connectSdkTaskClient, streamTaskCall, type SdkTaskClient } from '@resumewatch/lab';
import { startEverythingServer } from '@resumewatch/lab/everything-server';
import {
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_REQUESTED,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  SPAN_REQUEST_TERMINAL,
  TaskMethod,
  TaskShape,
  TaskStatus,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { startServer } from '../src/index.js';
import { providerWith } from '../../detector/test/helpers/otlp.js';
import { waitFor } from '../../detector/test/helpers/wait.js';

// `@modelcontextprotocol/server-everything`'s task tool (`simulate-research-query`: ttl 5 min, poll
// interval 1 s), a peer the project did not write, called through the SDK 1.x client's task API
// (`client.experimental.tasks.callToolStream`) over an instrumented fetch, the spans exported over
// OTLP/JSON to an in-process `resumewatch serve`: the spans carry the task, and serve reports nothing.

const TIMEOUT = 90_000;
const SERVICE = 'e2e-everything-tasks';
const TTL_MS = 300_000;

/** Forwards to the real exporter and keeps what it exported (a task's few spans). */
class KeepingExporter implements SpanExporter {
  readonly spans: ReadableSpan[] = [];
  constructor(private readonly inner: SpanExporter) {}
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    if (this.spans.length < 1_000) this.spans.push(...spans);
    this.inner.export(spans, done);
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

describe("server-everything's task tool through the instrumentation to resumewatch serve", () => {
  it(
    'simulate-research-query via callToolStream: the spans carry the task, no finding',
    { timeout: TIMEOUT },
    async () => {
      const everything = await startEverythingServer({ startTimeoutMs: 60_000 });
      const serve = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null, log: () => {} });
      const exporter = new KeepingExporter(new JsonExporter({ url: `http://127.0.0.1:${serve.httpPort}/v1/traces` }));
      const provider = providerWith(exporter, SERVICE);
      const fetch = instrumentFetch({ tracerProvider: provider, requestTimeoutMs: 30_000 });
      let session: SdkTaskClient | undefined;
      try {
        session = await connectSdkTaskClient(everything.url, fetch, 'everything-tasks');
        const run = await streamTaskCall(
          session.client,
          'simulate-research-query',
          { topic: 'tasks' },
          { ttlMs: TTL_MS },
        );
        expect(run.error).toBeUndefined();
        expect(run.resultText).toBeDefined();
        expect(run.statuses.at(-1)).toBe(TaskStatus.COMPLETED);
        const taskId = run.created!.taskId;
        await session.close();
        await waitFor(() => {
          const s = fetch.stats();
          return s.openRequests === 0 && s.pendingHttp === 0;
        }, 'the client spans to end');
        await provider.forceFlush();
        // The request spans (each request's terminal span names its method too).
        const spans = (method: string) =>
          exporter.spans.filter(
            (s) => s.name !== SPAN_REQUEST_TERMINAL && s.attributes[ATTR_MCP_METHOD_NAME] === method,
          );
        await waitFor(() => spans(TaskMethod.RESULT).length === 1, 'the tasks/result span');
        const received = () => {
          const s = serve.detector.stats().spans;
          return s.accepted + s.duplicate + s.invalid + s.ignored;
        };
        await waitFor(() => received() >= exporter.spans.length, 'every span in serve');

        // The spans carry the task: the call that created it, every poll, the result's fetch.
        const [call] = spans('tools/call');
        expect(call!.attributes).toMatchObject({
          [ATTR_MCP_TASK_REQUESTED]: true,
          [ATTR_MCP_TASK_ID]: taskId,
          [ATTR_MCP_TASK_SHAPE]: TaskShape.AUGMENTED,
          [ATTR_MCP_TASK_TTL_MS]: TTL_MS,
          [ATTR_MCP_TASK_POLL_INTERVAL_MS]: 1000,
        });
        const polls = spans(TaskMethod.GET);
        expect(polls.length).toBeGreaterThan(0);
        for (const poll of polls) expect(poll.attributes[ATTR_MCP_TASK_ID]).toBe(taskId);
        expect(polls.at(-1)!.attributes[ATTR_MCP_TASK_STATUS]).toBe(TaskStatus.COMPLETED);
        expect(spans(TaskMethod.RESULT)[0]!.attributes).toMatchObject({
          [ATTR_MCP_TASK_ID]: taskId,
          [ATTR_MCP_TASK_OUTCOME_DELIVERED]: true,
        });

        // serve holds the task and reports nothing: polled at the announced rate (the SDK's own loop),
        // its outcome fetched within its ttl; nor once its ttl has passed (the outcome was delivered).
        expect(serve.detector.stats().tasks).toBe(1);
        expect(serve.findings()).toEqual([]);
        serve.detector.advance(Date.now() + TTL_MS + 60_000);
        expect(serve.findings()).toEqual([]);
      } finally {
        await session?.close().catch(() => undefined);
        await provider.shutdown();
        await serve.close();
        await everything.stop();
      }
    },
  );
});
