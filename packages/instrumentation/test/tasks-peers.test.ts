// MCP tasks with real peers: `@modelcontextprotocol/server-everything`'s task tool
// (`simulate-research-query`) through the instrumentation, and the SDK 1.x task flow through
// `resumewatch gateway` (the built CLI), whose spans, exported over OTLP, carry the same task attributes.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startEverythingServer } from '@resumewatch/lab/everything-server';
import {
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_OUTCOME_DELIVERED,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_REQUESTED,
  ATTR_MCP_TASK_SHAPE,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  SPAN_TASK_STATUS,
  TaskShape,
  TaskStatus,
} from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { startOtlpReceiver } from './helpers/otlp-receiver.js';
import { attr, capturedFetch, WAIT } from './helpers/spans.js';
import { startTaskServer } from './helpers/task-server.js';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'daemon', 'dist', 'cli.js');

/** Runs the SDK 1.x task flow for one tool call to its end; the task's id and the kinds of messages seen. */
async function taskFlow(client: Client, name: string, args: Record<string, unknown>) {
  let taskId = '';
  const kinds: string[] = [];
  const stream = client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, {
    task: { ttl: 300_000 },
  });
  for await (const message of stream) {
    kinds.push(message.type);
    if (message.type === 'taskCreated') taskId = message.task.taskId;
  }
  return { taskId, kinds };
}

describe('tasks with real peers', () => {
  it("server-everything's simulate-research-query through the instrumentation", { timeout: 60_000 }, async () => {
    const everything = await startEverythingServer({ startTimeoutMs: 60_000 });
    const { capture, fetch } = capturedFetch();
    const client = new Client({ name: 'research-client', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(everything.url), { fetch }));
      const { taskId, kinds } = await taskFlow(client, 'simulate-research-query', { topic: 'tasks' });
      expect(kinds.at(-1)).toBe('result');

      const [call] = capture.spans('tools/call simulate-research-query');
      expect(attr(call!, ATTR_MCP_TASK_REQUESTED)).toBe(true);
      expect(attr(call!, ATTR_MCP_TASK_ID)).toBe(taskId);
      expect(attr(call!, ATTR_MCP_TASK_SHAPE)).toBe(TaskShape.AUGMENTED);
      // What the tool announces: ttl 5 min, poll interval 1 s.
      expect(attr(call!, ATTR_MCP_TASK_TTL_MS)).toBe(300_000);
      expect(attr(call!, ATTR_MCP_TASK_POLL_INTERVAL_MS)).toBe(1000);
      const polls = capture.spans('tasks/get');
      expect(polls.length).toBeGreaterThan(0);
      for (const poll of polls) expect(attr(poll, ATTR_MCP_TASK_ID)).toBe(taskId);
      expect(attr(polls.at(-1)!, ATTR_MCP_TASK_STATUS)).toBe(TaskStatus.COMPLETED);
      await vi.waitFor(() => expect(capture.spans('tasks/result')).toHaveLength(1), WAIT);
      expect(attr(capture.spans('tasks/result')[0]!, ATTR_MCP_TASK_OUTCOME_DELIVERED)).toBe(true);
    } finally {
      await client.close();
      await everything.stop();
    }
  });

  it('the SDK 1.x task flow through resumewatch gateway: its spans carry the task', { timeout: 60_000 }, async () => {
    const upstream = await startTaskServer({ pollInterval: 25, workMs: 60 });
    const receiver = await startOtlpReceiver();
    const child = spawn(process.execPath, [CLI, 'gateway', '--upstream', upstream.url, '--port', '0'], {
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, RESUMEWATCH_METRICS_PORT: '0' },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
    const client = new Client({ name: 'gateway-client', version: '1.0.0' });
    try {
      await vi.waitFor(() => expect(stderr).toMatch(/metrics on \S+\/metrics\n/), { timeout: 20_000, interval: 20 });
      const gateway = /gateway on (\S+)/.exec(stderr)![1]!;
      const statuses: string[] = [];
      client.setNotificationHandler(TaskStatusNotificationSchema, (n) => void statuses.push(n.params.status));
      await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', gateway)));
      const { taskId, kinds } = await taskFlow(client, 'work', {});
      expect(kinds.at(-1)).toBe('result');
      // The status notification reached the client: the gateway passed (and observed) it.
      await vi.waitFor(() => expect(statuses).toContain(TaskStatus.COMPLETED), WAIT);
      await client.close();
      // SIGTERM flushes the gateway's spans to the OTLP receiver.
      child.kill('SIGTERM');
      await exited;

      const spans = (name: string) => receiver.spans.filter((s) => s.name === name);
      await vi.waitFor(() => expect(spans('tasks/result')).toHaveLength(1), WAIT);
      const [call] = spans('tools/call work');
      expect(call!.attributes).toMatchObject({
        [ATTR_MCP_TASK_REQUESTED]: true,
        [ATTR_MCP_TASK_ID]: taskId,
        [ATTR_MCP_TASK_STATUS]: TaskStatus.WORKING,
        [ATTR_MCP_TASK_SHAPE]: TaskShape.AUGMENTED,
        [ATTR_MCP_TASK_POLL_INTERVAL_MS]: 25,
      });
      const polls = spans('tasks/get');
      expect(polls.length).toBeGreaterThan(0);
      expect(polls.at(-1)!.attributes[ATTR_MCP_TASK_STATUS]).toBe(TaskStatus.COMPLETED);
      expect(spans('tasks/result')[0]!.attributes).toMatchObject({
        [ATTR_MCP_TASK_ID]: taskId,
        [ATTR_MCP_TASK_OUTCOME_DELIVERED]: true,
      });
      // The server's status notification, on the session's listening stream through the gateway.
      expect(spans(SPAN_TASK_STATUS).map((s) => s.attributes[ATTR_MCP_TASK_STATUS])).toContain(TaskStatus.COMPLETED);
    } finally {
      child.kill('SIGKILL');
      await client.close().catch(() => undefined);
      await receiver.close();
      await upstream.close();
    }
  });
});
