// MCP tasks through the instrumentation, with real parts: the SDK 1.x client's task API against an SDK
// 1.x server with a task tool (registerToolTask, InMemoryTaskStore) over loopback HTTP, a plain fetch
// client, and a 2026-07-28 extension-shaped exchange. Client spans (instrumentFetch) and server spans
// (instrumentMcpServer) carry the task's attributes; task ids pass the id policy.
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_TASK_GONE,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_REQUESTED,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  SPAN_TASK_STATUS,
  TaskGone,
  TaskShape,
  TaskStatus,
} from '@resumewatch/semconv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { instrumentMcpServer } from '../src/index.js';
import { hmacId } from './helpers/id-ledger.js';
import { RawClient } from './helpers/raw-client.js';
import { WAIT, attr, captureSpans, capturedFetch } from './helpers/spans.js';
import { startTaskServer } from './helpers/task-server.js';
import type { TaskServer } from './helpers/task-server.js';

const KEY = 'a task key of sixteen bytes or more';
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

async function taskServer(options: Parameters<typeof startTaskServer>[0] = {}): Promise<TaskServer> {
  const server = await startTaskServer(options);
  opened.push(server);
  return server;
}

/** The task attributes of a span, by short name (absent ones left out). */
function taskOf(span: ReadableSpan): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const names = {
    id: ATTR_MCP_TASK_ID,
    status: ATTR_MCP_TASK_STATUS,
    shape: ATTR_MCP_TASK_SHAPE,
    ttl: ATTR_MCP_TASK_TTL_MS,
    interval: ATTR_MCP_TASK_POLL_INTERVAL_MS,
    requested: ATTR_MCP_TASK_REQUESTED,
    delivered: ATTR_MCP_TASK_OUTCOME_DELIVERED,
    gone: ATTR_MCP_TASK_GONE,
  };
  for (const [short, name] of Object.entries(names)) if (attr(span, name) !== undefined) out[short] = attr(span, name);
  return out;
}

describe('tasks through the instrumentation', () => {
  it("SDK 1.x: the task's creation, polls, result fetch and status notices are spans, on the client and the server, ids hashed", async () => {
    const serverSpans = captureSpans();
    const server = await taskServer({
      pollInterval: 20,
      workMs: 80,
      onServer: (mcp) => instrumentMcpServer(mcp, { tracerProvider: serverSpans.provider }),
    });
    const { capture, fetch } = capturedFetch({ idPolicy: 'hmac', idKey: KEY });
    const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch });
    const client = new Client({ name: 'task-client', version: '1.0.0' });
    await client.connect(transport);
    opened.push(client);

    const kinds: string[] = [];
    let taskId = '';
    const stream = client.experimental.tasks.callToolStream({ name: 'work', arguments: {} }, CallToolResultSchema, {
      task: { ttl: 60_000 },
    });
    for await (const message of stream) {
      kinds.push(message.type);
      if (message.type === 'taskCreated') taskId = message.task.taskId;
    }
    expect(kinds[0]).toBe('taskCreated');
    expect(kinds.at(-1)).toBe('result');
    // Read again after completion (idempotent): a poll and a result fetch more.
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe(TaskStatus.COMPLETED);
    await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    const hashed = hmacId(KEY, taskId);

    // The call that created the task: its handle's id (hashed), status, shape, ttl and interval.
    const [call] = capture.spans('tools/call work');
    expect(taskOf(call!)).toEqual({
      id: hashed,
      status: TaskStatus.WORKING,
      shape: TaskShape.AUGMENTED,
      ttl: 60_000,
      interval: 20,
      requested: true,
    });
    // Each poll is a tasks/get span (its name never carries the id), with the status it saw.
    const polls = capture.spans('tasks/get');
    expect(polls.length).toBeGreaterThanOrEqual(2);
    // A poll concerns the task; it does not ask for one.
    for (const poll of polls) expect(attr(poll, ATTR_MCP_TASK_REQUESTED)).toBeUndefined();
    for (const poll of polls)
      expect(taskOf(poll)).toMatchObject({ id: hashed, shape: TaskShape.AUGMENTED, ttl: 60_000 });
    expect(polls.map((p) => attr(p, ATTR_MCP_TASK_STATUS)).at(-1)).toBe(TaskStatus.COMPLETED);
    // 2025-11-25: a completed tasks/get does not deliver the outcome; tasks/result does.
    expect(polls.some((p) => attr(p, ATTR_MCP_TASK_OUTCOME_DELIVERED) !== undefined)).toBe(false);
    const results = capture.spans('tasks/result');
    expect(results).toHaveLength(2);
    for (const result of results) expect(taskOf(result)).toMatchObject({ id: hashed, delivered: true });
    // No span holds the raw id anywhere.
    for (const span of capture.spans()) expect(JSON.stringify([span.name, span.attributes])).not.toContain(taskId);

    // The server's spans carry the same (raw policy: the id as sent).
    await vi.waitFor(() => expect(serverSpans.spans('tasks/result')).toHaveLength(2), WAIT);
    const [serverCall] = serverSpans.spans('tools/call work');
    expect(serverCall!.kind).toBe(SpanKind.SERVER);
    expect(taskOf(serverCall!)).toEqual({ ...taskOf(call!), id: taskId });
    expect(serverSpans.spans('tasks/get').length).toBe(polls.length);
    expect(attr(serverSpans.spans('tasks/result')[0]!, ATTR_MCP_TASK_OUTCOME_DELIVERED)).toBe(true);

    // The server's status notification (on the session's listening stream): a mcp.task.status span, at both ends.
    await vi.waitFor(() => expect(capture.spans(SPAN_TASK_STATUS).length).toBeGreaterThan(0), WAIT);
    const notice = capture.spans(SPAN_TASK_STATUS).at(-1)!;
    expect(taskOf(notice)).toMatchObject({ id: hashed, status: TaskStatus.COMPLETED, shape: TaskShape.AUGMENTED });
    expect(attr(notice, ATTR_MCP_SESSION_ID)).toBe(hmacId(KEY, transport.sessionId!));
    expect(taskOf(serverSpans.spans(SPAN_TASK_STATUS).at(-1)!)).toMatchObject({
      id: taskId,
      status: TaskStatus.COMPLETED,
    });
  });

  it('a plain fetch client: a failed task, its error fetched, and a task not found', async () => {
    const server = await taskServer({ pollInterval: 15, workMs: 30 });
    const { capture, fetch } = capturedFetch();
    const raw = new RawClient(server.url, fetch);
    await raw.initialize();
    const rpc = async (id: number, method: string, params: object) => {
      const text = await (await raw.post({ jsonrpc: '2.0', id, method, params })).text();
      const data = [...text.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]!) as { id?: number });
      return data.find((m) => m.id === id) as { result?: Record<string, unknown>; error?: unknown };
    };
    const created = await rpc(1, 'tools/call', { name: 'explode', arguments: {}, task: { ttl: 5_000 } });
    const taskId = (created.result!.task as { taskId: string }).taskId;
    let id = 2;
    await vi.waitFor(async () => {
      const polled = await rpc(id++, 'tasks/get', { taskId });
      expect(polled.result!.status).toBe(TaskStatus.FAILED);
    }, WAIT);
    await rpc(id++, 'tasks/result', { taskId });
    await rpc(id++, 'tasks/get', { taskId: 'no-such-task' });

    expect(taskOf(capture.spans('tools/call explode')[0]!)).toMatchObject({ id: taskId, ttl: 5_000, interval: 15 });
    const polls = capture.spans('tasks/get');
    expect(taskOf(polls.at(-2)!)).toMatchObject({ id: taskId, status: TaskStatus.FAILED });
    expect(taskOf(capture.spans('tasks/result')[0]!)).toMatchObject({ id: taskId, delivered: true });
    // The unknown task: gone, not found.
    expect(taskOf(polls.at(-1)!)).toEqual({ id: 'no-such-task', gone: TaskGone.NOT_FOUND });
  });
});
