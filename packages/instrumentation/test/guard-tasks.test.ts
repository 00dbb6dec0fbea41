// The guard's task side through instrumentFetch({ guard }): the SDK 1.x client's task API
// (`client.experimental.tasks.*`) against an SDK 1.x server with `registerToolTask` over loopback HTTP. An
// instrumented and guarded client gets what guardedFetch gives: polls spaced to the announced interval, and
// a re-issue of a live task's call answered with that task's handle (one task on the server).
import { setTimeout as delay } from 'node:timers/promises';
import { SpanKind } from '@opentelemetry/api';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { RepeatedTaskHandle } from '@resumewatch/guard';
import { ATTR_MCP_METHOD_NAME, META_IDEMPOTENCY_KEY, TaskMethod, TaskShape } from '@resumewatch/semconv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FetchLike } from '@resumewatch/wire';
import { WAIT, attr, captureSpans } from './helpers/spans.js';
import type { SpanCapture } from './helpers/spans.js';
import { instrumentFetch } from '../src/index.js';
import { startTaskServer } from './helpers/task-server.js';
import type { TaskServer } from './helpers/task-server.js';
import { onTickingClock } from '../../guard/test/helpers/ticking-clock.js';

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

async function taskServer(options: Parameters<typeof startTaskServer>[0]): Promise<TaskServer> {
  const server = await startTaskServer(options);
  opened.push(server);
  return server;
}

async function connect(url: string, fetch: FetchLike): Promise<Client> {
  const client = new Client({ name: 'instrumented-task-client', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch }));
  opened.push(client);
  return client;
}

/** What the SDK's task stream yielded, shortened: the created task's id, the result's text, the error's message. */
async function streamCall(client: Client, options: RequestOptions = {}): Promise<string[]> {
  const seen: string[] = [];
  const stream = client.experimental.tasks.callToolStream(
    { name: 'work', arguments: { order: 7 } },
    CallToolResultSchema,
    { ...options, task: { ttl: 60_000 } },
  );
  for await (const message of stream) {
    if (message.type === 'taskCreated') seen.push(`created ${message.task.taskId}`);
    else if (message.type === 'result') seen.push(`result ${(message.result.content as { text: string }[])[0]?.text}`);
    else if (message.type === 'error') seen.push(`error ${message.error.message}`);
  }
  return seen;
}

/** The request spans (kind CLIENT, one per request) of `method`. */
const requestSpans = (capture: SpanCapture, method: string) =>
  capture.spans().filter((s) => s.kind === SpanKind.CLIENT && attr(s, ATTR_MCP_METHOD_NAME) === method);

const isCall = (init: RequestInit | undefined, method: string) =>
  typeof init?.body === 'string' && init.body.includes(`"${method}"`);

describe('instrumentFetch({ guard }) and MCP tasks', () => {
  it("spaces the application's polls to the announced interval as they leave the process", async () => {
    const INTERVAL = 300;
    const POLLS = 5;
    const server = await taskServer({ pollInterval: INTERVAL, workMs: 60_000 });
    // Beneath the instrumentation: when each tasks/get leaves the process.
    const leaving: number[] = [];
    const beneath: FetchLike = (input, init) => {
      if (isCall(init, TaskMethod.GET)) leaving.push(Date.now());
      return globalThis.fetch(input, init);
    };
    const capture = captureSpans();
    const client = await connect(server.url, instrumentFetch(beneath, { tracerProvider: capture.provider, guard: {} }));

    // The task API's stream, left once the task is created (its own loop would poll at the interval).
    let taskId: string | undefined;
    const stream = client.experimental.tasks.callToolStream({ name: 'work', arguments: {} }, CallToolResultSchema, {
      task: { ttl: 60_000 },
    });
    for await (const message of stream) {
      if (message.type === 'taskCreated') {
        taskId = message.task.taskId;
        expect(message.task.pollInterval).toBe(INTERVAL);
        break;
      }
    }
    // The application polls every 10 ms after each answer: far faster than the interval. The guard's
    // clock and waits run on a clock the test moves, a tick at a time, so a loaded machine stretches
    // nothing; the one slack is a tick the clock may move between the guard's look and this one.
    const TICK = INTERVAL / 30;
    await onTickingClock(TICK, async () => {
      for (let i = 0; i < POLLS; i++) {
        await client.experimental.tasks.getTask(taskId!);
        await delay(10);
        // A loaded machine, made on purpose: real time runs a whole interval on while the test's clock
        // stands. The guard must space polls on the clock it is given, never on real time.
        const until = performance.now() + INTERVAL + 20;
        while (performance.now() < until);
      }
    });
    // Every poll sent (held back, never dropped), none closer to the one before than the interval.
    expect(leaving).toHaveLength(POLLS);
    for (const [i, at] of leaving.slice(1).entries()) expect(at - leaving[i]!).toBeGreaterThanOrEqual(INTERVAL - TICK);
    // The observer saw each poll when it left: one request span each.
    await vi.waitFor(() => expect(requestSpans(capture, TaskMethod.GET)).toHaveLength(POLLS), WAIT);
  });

  it("answers a re-issue of a live task's call with the first handle: the server created one task", async () => {
    const server = await taskServer({ pollInterval: 20 });
    // Beneath the instrumentation: the first call's answer comes back late, after the SDK's request timeout.
    let release!: () => void;
    const late = new Promise<void>((resolve) => (release = resolve));
    const keys: unknown[] = [];
    const beneath: FetchLike = async (input, init) => {
      const call = isCall(init, 'tools/call');
      if (call)
        keys.push(
          (JSON.parse(init!.body as string) as { params: { _meta?: Record<string, unknown> } }).params._meta?.[
            META_IDEMPOTENCY_KEY
          ],
        );
      const response = await globalThis.fetch(input, init);
      if (call && keys.length === 1) await late;
      return response;
    };
    const repeated: RepeatedTaskHandle[] = [];
    const capture = captureSpans();
    const fetch = instrumentFetch(beneath, {
      tracerProvider: capture.provider,
      guard: { idempotencyKey: true, onTaskHandleRepeated: (r) => void repeated.push(r) },
    });
    const client = await connect(server.url, fetch);

    expect(await streamCall(client, { timeout: 100 })).toEqual([expect.stringMatching(/^error .*timed out/i)]);
    release();
    // The guard reads the late answer the SDK gave up on: the handle is kept.
    await vi.waitFor(() => expect(fetch.guard!.stats().taskHandles).toBe(1), WAIT);

    // The application re-issues: the first task's handle, its polls and its result; no second task.
    expect(await streamCall(client)).toEqual([`created ${server.created[0]}`, 'result worked 60 ms']);
    expect(server.created).toHaveLength(1);
    expect(keys).toEqual([expect.any(String)]);
    expect(repeated).toEqual([
      expect.objectContaining({
        taskId: server.created[0],
        shape: TaskShape.AUGMENTED,
        name: 'work',
        idempotencyKey: keys[0],
      }),
    ]);
    // The local answer never reached the observer: one tools/call span, the first attempt's.
    await vi.waitFor(() => expect(requestSpans(capture, TaskMethod.RESULT)).toHaveLength(1), WAIT);
    expect(requestSpans(capture, 'tools/call')).toHaveLength(1);
  });
});
