// The task guard on the real SDK 1.x task API: the client's `client.experimental.tasks.*` and a plain
// task-augmented `tools/call`, against an SDK 1.x server with `registerToolTask` and `InMemoryTaskStore`,
// over loopback HTTP, through guardedFetch. (The v2 client, @modelcontextprotocol/client 2.4, has no task
// API: its typed surface leaves `tasks/*` out, "2025-11-25 wire vocabulary with no SDK runtime".)
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  FindingKind,
  META_IDEMPOTENCY_KEY,
  TASK_NOT_FOUND_CODE,
  TaskGone,
  TaskLostReason,
  TaskMethod,
  TaskShape,
} from '@resumewatch/semconv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { guardedFetch } from '../src/index.js';
import type { DuplicateTask, GuardOptions, LostTaskResult, RepeatedTaskHandle } from '../src/index.js';
import { startTaskServer } from './helpers/task-server.js';
import type { TaskServer } from './helpers/task-server.js';
import { onTickingClock } from './helpers/ticking-clock.js';
import { WAIT } from './helpers/wait.js';

type Fetch = typeof globalThis.fetch;

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close();
});

async function server(options: { pollIntervalMs: number; workMs?: number }): Promise<TaskServer> {
  const started = await startTaskServer(options);
  open.push(started);
  return started;
}

async function connect(
  url: string,
  fetch: Fetch,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'task-guard-test', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch });
  await client.connect(transport);
  open.push(client);
  return { client, transport };
}

/** A task-augmented `tools/call` of the server's `work` tool: the CreateTaskResult. */
function createTask(client: Client, ttl: number, options?: RequestOptions) {
  return client.request(
    { method: 'tools/call', params: { name: 'work', arguments: { order: 7 }, task: { ttl } } },
    CreateTaskResultSchema,
    options,
  );
}

/** What the guard told the application. */
function reports(extra: GuardOptions = {}) {
  const lost: LostTaskResult[] = [];
  const duplicates: DuplicateTask[] = [];
  const repeated: RepeatedTaskHandle[] = [];
  const options: GuardOptions = {
    ...extra,
    onLostTaskResult: (r) => void lost.push(r),
    onDuplicateTask: (r) => void duplicates.push(r),
    onTaskHandleRepeated: (r) => void repeated.push(r),
  };
  return { lost, duplicates, repeated, options };
}

/** Gaps between the polls of one task as the server received them (its own clock). */
function pollGaps(received: TaskServer['received'], taskId: string): number[] {
  const times = received.filter((r) => r.method === TaskMethod.GET && r.taskId === taskId).map((r) => r.at);
  return times.slice(1).map((at, i) => at - times[i]!);
}

const POLLS = 5;

/** The application polls `POLLS` times, 10 ms apart from each answer: far faster than the announced interval. */
async function pollFast(client: Client, taskId: string): Promise<void> {
  for (let i = 0; i < POLLS; i++) {
    await client.experimental.tasks.getTask(taskId);
    await delay(10);
  }
}

describe('poll spacing', () => {
  const INTERVAL = 300;

  /** A fetch beneath the guard that notes when each tasks/get leaves the process. */
  function leaving(): { fetch: Fetch; times: number[] } {
    const times: number[] = [];
    const fetch: Fetch = (input, init) => {
      if (typeof init?.body === 'string' && init.body.includes(`"${TaskMethod.GET}"`)) times.push(Date.now());
      return globalThis.fetch(input, init);
    };
    return { fetch, times };
  }

  const gapsOf = (times: number[]) => times.slice(1).map((at, i) => at - times[i]!);

  it('without the guard, a client polling every 10 ms reaches the server far more often than the interval', async () => {
    const tasks = await server({ pollIntervalMs: INTERVAL, workMs: 60_000 });
    const { client } = await connect(tasks.url, globalThis.fetch);
    const { task } = await createTask(client, 60_000);
    expect(task.pollInterval).toBe(INTERVAL);
    await pollFast(client, task.taskId);
    const gaps = pollGaps(tasks.received, task.taskId);
    expect(gaps).toHaveLength(POLLS - 1);
    expect(Math.min(...gaps)).toBeLessThan(INTERVAL / 2);
  });

  it('with the guard, the same polls leave the process, and reach the server, spaced to the announced interval', async () => {
    const tasks = await server({ pollIntervalMs: INTERVAL, workMs: 60_000 });
    const beneath = leaving();
    const { client } = await connect(tasks.url, guardedFetch(beneath.fetch, reports().options));
    const { task } = await createTask(client, 60_000);
    // The guard's clock and waits (and the server's clock) run on a clock the test moves a tick at a
    // time, so a loaded machine stretches nothing; the one slack is a tick the clock may move between the
    // guard's look and this one.
    const TICK = INTERVAL / 30;
    await onTickingClock(TICK, () => pollFast(client, task.taskId));
    // As they left the process: no two polls closer than the interval.
    expect(beneath.times).toHaveLength(POLLS);
    for (const gap of gapsOf(beneath.times)) expect(gap).toBeGreaterThanOrEqual(INTERVAL - TICK);
    // As the server received them: every poll the client sent (delayed, never dropped), and over the run
    // the interval's rate. A loaded machine delays one arrival more than the next: the whole span, less
    // one interval for that jitter, is what the server can show.
    const gaps = pollGaps(tasks.received, task.taskId);
    expect(gaps).toHaveLength(POLLS - 1);
    expect(gaps.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual((POLLS - 2) * INTERVAL);
  });

  it('never delays tasks/result; an aborted poll stops waiting and never leaves', async () => {
    // An interval far longer than the test may take: a delayed request would not come back in time.
    const tasks = await server({ pollIntervalMs: 600_000 });
    const fetch = guardedFetch(reports().options);
    const { client, transport } = await connect(tasks.url, fetch);
    const { task } = await createTask(client, 60_000);
    await client.experimental.tasks.getTask(task.taskId);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'worked' }] });

    // The next poll would wait 10 min (capped at maxPollDelayMs, 30 s): aborted while it waits.
    const abort = new AbortController();
    const poll = fetch(tasks.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': transport.sessionId!,
        'mcp-protocol-version': transport.protocolVersion!,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: TaskMethod.GET, params: { taskId: task.taskId } }),
      signal: abort.signal,
    });
    // Long enough for a poll that was not held to reach the server.
    await delay(100);
    abort.abort();
    await expect(poll).rejects.toMatchObject({ name: 'AbortError' });
    expect(tasks.received.filter((r) => r.method === TaskMethod.GET)).toHaveLength(1);
    expect(tasks.received.filter((r) => r.method === TaskMethod.RESULT)).toHaveLength(1);
  });
});

describe("a task's handle, kept for a re-issue of its call", () => {
  it('answers a re-issue with the first handle after the application gave the first attempt up: one task on the server', async () => {
    const tasks = await server({ pollIntervalMs: 20 });
    // Beneath the guard: the first call's answer comes back late, after the SDK's request timeout.
    let release!: () => void;
    const late = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const beneath: Fetch = async (input, init) => {
      const response = await globalThis.fetch(input, init);
      if (typeof init?.body === 'string' && init.body.includes('"tools/call"') && calls++ === 0) await late;
      return response;
    };
    const seen = reports({ idempotencyKey: true });
    const fetch = guardedFetch(beneath, seen.options);
    const { client } = await connect(tasks.url, fetch);

    await expect(createTask(client, 60_000, { timeout: 100 })).rejects.toThrow(/timed out/i);
    release();
    // The guard reads the late answer (the SDK dropped it: its request was over): the handle is kept.
    await vi.waitFor(() => expect(fetch.listener.stats().taskHandles).toBe(1), WAIT);

    const again = await createTask(client, 60_000);
    expect(tasks.created).toBe(1);
    expect(tasks.received.filter((r) => r.method === 'tools/call')).toHaveLength(1);
    const first = await tasks.store.getAllTasks();
    expect(again.task.taskId).toBe(first[0]!.taskId);
    expect(seen.repeated).toEqual([
      expect.objectContaining({ taskId: again.task.taskId, shape: TaskShape.AUGMENTED, name: 'work' }),
    ]);
    // The re-issue carried the first attempt's key (the session era keys task-augmented calls too).
    const key = tasks.received.find((r) => r.method === 'tools/call')!.meta?.[META_IDEMPOTENCY_KEY];
    expect(key).toEqual(expect.any(String));
    expect(seen.repeated[0]!.idempotencyKey).toBe(key);
    // The repeated handle is the server's: its result is there.
    const result = await client.experimental.tasks.getTaskResult(again.task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'worked' }] });

    // Its outcome delivered, the task is done with: the same call again is new work, sent.
    await createTask(client, 60_000);
    expect(tasks.created).toBe(2);
    expect(seen.repeated).toHaveLength(1);
    expect(seen.duplicates).toEqual([]);
  });

  it('reports a possible duplicate when the first attempt broke before its handle: both attempts carry one key', async () => {
    const tasks = await server({ pollIntervalMs: 20 });
    // Beneath the guard: the first call reaches the server, and its connection drops before the reply.
    let calls = 0;
    const beneath: Fetch = async (input, init) => {
      const response = await globalThis.fetch(input, init);
      if (typeof init?.body === 'string' && init.body.includes('"tools/call"') && calls++ === 0) {
        await response.body?.cancel();
        throw new TypeError('fetch failed');
      }
      return response;
    };
    const seen = reports({ idempotencyKey: true });
    const { client } = await connect(tasks.url, guardedFetch(beneath, seen.options));
    await expect(createTask(client, 60_000)).rejects.toThrow(/fetch failed/);

    const second = await createTask(client, 60_000);
    // The guard never saw the first handle: nothing to answer with. The server made two tasks.
    expect(tasks.created).toBe(2);
    expect(seen.repeated).toEqual([]);
    expect(seen.duplicates).toHaveLength(1);
    const report = seen.duplicates[0]!;
    expect(report).toMatchObject({
      kind: FindingKind.POSSIBLE_DUPLICATE_TASK,
      taskId: second.task.taskId,
      shape: TaskShape.AUGMENTED,
      firstAttempt: { name: 'work', streamEnd: undefined },
      reissue: { name: 'work' },
    });
    const keys = tasks.received.filter((r) => r.method === 'tools/call').map((r) => r.meta?.[META_IDEMPOTENCY_KEY]);
    expect(keys).toEqual([expect.any(String), keys[0]]);
    expect(report.reissue.idempotencyKey).toBe(keys[0]);
    expect(report.firstAttempt.idempotencyKey).toBe(keys[0]);
  });
});

describe('a lost task result', () => {
  it('is reported when the result is asked for after the server purged the task, never for a re-read', async () => {
    const tasks = await server({ pollIntervalMs: 20 });
    const seen = reports();
    const { client } = await connect(tasks.url, guardedFetch(seen.options));
    const TTL = 200;

    // Read in time, then read again after the purge: nothing lost.
    const read = await createTask(client, TTL);
    await client.experimental.tasks.getTaskResult(read.task.taskId, CallToolResultSchema);
    // Never read: its result is lost once the server purges it.
    const unread = await createTask(client, TTL);
    await vi.waitFor(async () => {
      expect(await tasks.store.getTask(read.task.taskId)).toBeNull();
      expect(await tasks.store.getTask(unread.task.taskId)).toBeNull();
    }, WAIT);

    await expect(client.experimental.tasks.getTaskResult(read.task.taskId, CallToolResultSchema)).rejects.toMatchObject(
      {
        code: TASK_NOT_FOUND_CODE,
      },
    );
    expect(seen.lost).toEqual([]);
    await expect(client.experimental.tasks.getTask(unread.task.taskId)).rejects.toMatchObject({
      code: TASK_NOT_FOUND_CODE,
    });
    await expect(
      client.experimental.tasks.getTaskResult(unread.task.taskId, CallToolResultSchema),
    ).rejects.toMatchObject({
      code: TASK_NOT_FOUND_CODE,
    });
    // Once per task.
    expect(seen.lost).toHaveLength(1);
    expect(seen.lost[0]).toMatchObject({
      kind: FindingKind.LOST_TASK_RESULT,
      reason: TaskLostReason.GONE,
      gone: TaskGone.NOT_FOUND,
      taskId: unread.task.taskId,
      method: TaskMethod.GET,
      created: true,
      ttlMs: TTL,
    });
  });
});
