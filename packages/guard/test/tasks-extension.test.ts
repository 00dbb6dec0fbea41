// The task guard on the 2026-07-28 extension's shape (`resultType: "task"`, `pollIntervalMs`, the outcome
// inline in `tasks/get`), against a scripted server on loopback HTTP that answers from the ext-tasks
// schema's text (no npm package implements the extension: see the lab's modern server).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  FindingKind,
  RESULT_TYPE_TASK,
  STATELESS_PROTOCOL_VERSION,
  TASK_NOT_FOUND_CODE,
  TaskField,
  TaskGone,
  TaskMethod,
  TaskShape,
  TaskStatus,
} from '@resumewatch/semconv';
import { HEADER_PROTOCOL_VERSION } from '@resumewatch/wire';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { guardedFetch } from '../src/index.js';
import type { GuardOptions, LostTaskResult, RepeatedTaskHandle } from '../src/index.js';

const INTERVAL = 100;

interface Scripted {
  url: string;
  created: number;
  polls: { taskId: string; at: number }[];
  /** Tasks whose next tasks/get answers completed, with the result inline. */
  done: Set<string>;
  /** Tasks the server says expired (-32602). */
  expired: Set<string>;
  close(): Promise<void>;
}

const servers: Scripted[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function scriptedServer(): Promise<Scripted> {
  const state: Scripted = {
    url: '',
    created: 0,
    polls: [],
    done: new Set(),
    expired: new Set(),
    close: async () => {},
  };
  const http = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as { id: number; method: string; params: Record<string, unknown> };
      const answer = (body: Record<string, unknown>) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, ...body }));
      };
      const task = (taskId: string, status: string) => ({
        [TaskField.TASK_ID]: taskId,
        [TaskField.STATUS]: status,
        [TaskField.TTL_MS]: 60_000,
        [TaskField.POLL_INTERVAL_MS]: INTERVAL,
        createdAt: '2026-12-05T00:00:00Z',
        lastUpdatedAt: '2026-12-05T00:00:00Z',
      });
      if (message.method === 'tools/call') {
        const taskId = `task-${++state.created}`;
        answer({ result: { [TaskField.RESULT_TYPE]: RESULT_TYPE_TASK, ...task(taskId, TaskStatus.WORKING) } });
        return;
      }
      const taskId = message.params[TaskField.TASK_ID] as string;
      state.polls.push({ taskId, at: Date.now() });
      if (state.expired.has(taskId)) {
        answer({ error: { code: TASK_NOT_FOUND_CODE, message: 'Task has expired' } });
      } else if (state.done.has(taskId)) {
        const result = { content: [{ type: 'text', text: 'done' }] };
        answer({
          result: { resultType: 'complete', ...task(taskId, TaskStatus.COMPLETED), [TaskField.RESULT]: result },
        });
      } else {
        answer({ result: { resultType: 'complete', ...task(taskId, TaskStatus.WORKING) } });
      }
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  state.close = () => new Promise<void>((resolve) => http.close(() => resolve()));
  servers.push(state);
  return state;
}

let nextId = 1;
function post(fetch: typeof globalThis.fetch, url: string, method: string, params: Record<string, unknown>) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      [HEADER_PROTOCOL_VERSION]: STATELESS_PROTOCOL_VERSION,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  }).then(async (response) => (await response.json()) as { id: number; result?: Record<string, unknown> });
}

const call = { name: 'report', arguments: { quarter: 3 } };

function recorded(extra: GuardOptions = {}) {
  const lost: LostTaskResult[] = [];
  const repeated: RepeatedTaskHandle[] = [];
  const options: GuardOptions = {
    ...extra,
    onLostTaskResult: (r) => void lost.push(r),
    onTaskHandleRepeated: (r) => void repeated.push(r),
  };
  return { lost, repeated, fetch: guardedFetch(options) };
}

describe('the 2026-07-28 extension shape', () => {
  it('spaces polls sent all at once to pollIntervalMs, each taking the next slot', async () => {
    const server = await scriptedServer();
    // Beneath the guard: when each tasks/get leaves the process.
    const left: number[] = [];
    const beneath: typeof globalThis.fetch = (input, init) => {
      if (typeof init?.body === 'string' && init.body.includes(`"${TaskMethod.GET}"`)) left.push(Date.now());
      return globalThis.fetch(input, init);
    };
    const fetch = guardedFetch(beneath, {});
    const handle = await post(fetch, server.url, 'tools/call', call);
    const taskId = handle.result![TaskField.TASK_ID] as string;
    // The guard's clock and its waits on a clock the test moves: a poll leaves at its slot's time, and
    // nothing else (a loaded machine, the observer's work) moves the clock between its leaving and here.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const polls = Promise.all([0, 1, 2, 3].map(() => post(fetch, server.url, TaskMethod.GET, { taskId })));
      await vi.waitFor(async () => {
        await vi.advanceTimersByTimeAsync(INTERVAL / 4);
        expect(left).toHaveLength(4);
      });
      await polls;
    } finally {
      vi.useRealTimers();
    }
    expect(server.polls).toHaveLength(4);
    for (let i = 1; i < left.length; i++) expect(left[i]! - left[i - 1]!).toBeGreaterThanOrEqual(INTERVAL);
  });

  it("answers a re-issue with the live task's handle, until tasks/get delivers the outcome inline", async () => {
    const server = await scriptedServer();
    const seen = recorded();
    const first = await post(seen.fetch, server.url, 'tools/call', call);
    const again = await post(seen.fetch, server.url, 'tools/call', call);
    expect(server.created).toBe(1);
    // The server's own answer under the re-issue's id.
    expect(again.result).toEqual(first.result);
    expect(again.id).toBe(first.id + 1);
    expect(seen.repeated).toEqual([expect.objectContaining({ shape: TaskShape.EXTENSION, taskId: 'task-1' })]);
    // Other arguments: another call.
    await post(seen.fetch, server.url, 'tools/call', { ...call, arguments: { quarter: 4 } });
    expect(server.created).toBe(2);

    server.done.add('task-1');
    const polled = await post(seen.fetch, server.url, TaskMethod.GET, { taskId: 'task-1' });
    expect(polled.result?.[TaskField.STATUS]).toBe(TaskStatus.COMPLETED);
    await post(seen.fetch, server.url, 'tools/call', call);
    expect(server.created).toBe(3);
    expect(seen.repeated).toHaveLength(1);
  });

  it('reports a lost result when tasks/get is answered "expired" before the outcome reached the application', async () => {
    const server = await scriptedServer();
    const seen = recorded();
    await post(seen.fetch, server.url, 'tools/call', call);
    server.expired.add('task-1');
    await post(seen.fetch, server.url, TaskMethod.GET, { taskId: 'task-1' });
    expect(seen.lost).toEqual([
      expect.objectContaining({
        kind: FindingKind.LOST_TASK_RESULT,
        gone: TaskGone.EXPIRED,
        taskId: 'task-1',
        created: true,
        lastStatus: TaskStatus.WORKING,
      }),
    ]);
    // Gone: a re-issue is new work, sent.
    await post(seen.fetch, server.url, 'tools/call', call);
    expect(server.created).toBe(2);
  });

  it('keeps at most maxRequests tasks, counting what it evicts', async () => {
    const server = await scriptedServer();
    const { fetch } = recorded({ maxRequests: 2 });
    for (let quarter = 1; quarter <= 5; quarter++)
      await post(fetch, server.url, 'tools/call', { ...call, arguments: { quarter } });
    const stats = fetch.listener.stats();
    expect(stats.tasks).toBe(2);
    expect(stats.taskHandles).toBe(2);
    expect(stats.evictions).toBeGreaterThanOrEqual(6);
  });
});
