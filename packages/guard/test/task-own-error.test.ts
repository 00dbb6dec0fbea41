// A 2025-11-25 task whose call failed with -32602 of its own: tasks/result answers that error with the
// related-task meta (in the error's data, the one place a JSON-RPC error has for it), and the guard reads it
// as the task's outcome, delivered, not as a task gone. A scripted server on loopback HTTP answers from the
// 2025-11-25 text (the SDK 1.x server stores a failed task's result, never a JSON-RPC error).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  FindingKind,
  META_RELATED_TASK,
  TASK_NOT_FOUND_CODE,
  TaskField,
  TaskGone,
  TaskMethod,
  TaskStatus,
} from '@resumewatch/semconv';
import { afterEach, describe, expect, it } from 'vitest';
import { guardedFetch } from '../src/index.js';
import type { LostTaskResult } from '../src/index.js';

interface Scripted {
  url: string;
  /** Tasks whose tasks/result answers the call's own -32602, with the related-task meta. */
  failedOwn: Set<string>;
  /** Tasks the server no longer holds: every request naming one is answered "Task not found". */
  purged: Set<string>;
  close(): Promise<void>;
}

const servers: Scripted[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function scriptedServer(): Promise<Scripted> {
  let created = 0;
  const state: Scripted = { url: '', failedOwn: new Set(), purged: new Set(), close: async () => {} };
  const http = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as { id: number; method: string; params: Record<string, unknown> };
      const answer = (body: Record<string, unknown>) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, ...body }));
      };
      if (message.method === 'tools/call') {
        const task = {
          [TaskField.TASK_ID]: `task-${++created}`,
          [TaskField.STATUS]: TaskStatus.WORKING,
          [TaskField.TTL]: 60_000,
          [TaskField.POLL_INTERVAL]: 10,
          createdAt: '2026-12-05T00:00:00Z',
          lastUpdatedAt: '2026-12-05T00:00:00Z',
        };
        answer({ result: { [TaskField.TASK]: task } });
        return;
      }
      const taskId = message.params[TaskField.TASK_ID] as string;
      if (state.purged.has(taskId)) {
        answer({ error: { code: TASK_NOT_FOUND_CODE, message: 'Task not found' } });
      } else if (message.method === TaskMethod.RESULT && state.failedOwn.has(taskId)) {
        const meta = { [META_RELATED_TASK]: { [TaskField.TASK_ID]: taskId } };
        answer({
          error: { code: TASK_NOT_FOUND_CODE, message: 'Invalid params: no such order', data: { _meta: meta } },
        });
      } else {
        answer({ error: { code: -32603, message: 'not scripted' } });
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
async function post(fetch: typeof globalThis.fetch, url: string, method: string, params: Record<string, unknown>) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  });
  return (await response.json()) as { result?: Record<string, unknown>; error?: { code: number } };
}

const call = (order: number) => ({ name: 'refund', arguments: { order }, [TaskField.TASK]: { ttl: 60_000 } });

describe("a tasks/result answered with the task's own -32602", () => {
  it('is the outcome delivered, not a lost result; a server\'s "not found" still is one', async () => {
    const server = await scriptedServer();
    const lost: LostTaskResult[] = [];
    const fetch = guardedFetch({ onLostTaskResult: (r) => void lost.push(r) });

    // Task 1: its call failed with -32602 of its own; tasks/result says so, naming the task.
    await post(fetch, server.url, 'tools/call', call(1));
    server.failedOwn.add('task-1');
    const own = await post(fetch, server.url, TaskMethod.RESULT, { taskId: 'task-1' });
    expect(own.error?.code).toBe(TASK_NOT_FOUND_CODE);
    expect(lost).toEqual([]);
    // Its outcome reached the application: a later "not found" (purged after delivery) loses nothing.
    server.purged.add('task-1');
    await post(fetch, server.url, TaskMethod.RESULT, { taskId: 'task-1' });
    expect(lost).toEqual([]);

    // Task 2: the server no longer holds it, and says so naming no task: its result is lost.
    await post(fetch, server.url, 'tools/call', call(2));
    server.purged.add('task-2');
    await post(fetch, server.url, TaskMethod.RESULT, { taskId: 'task-2' });
    expect(lost).toEqual([
      expect.objectContaining({
        kind: FindingKind.LOST_TASK_RESULT,
        gone: TaskGone.NOT_FOUND,
        taskId: 'task-2',
        created: true,
      }),
    ]);
  });
});
