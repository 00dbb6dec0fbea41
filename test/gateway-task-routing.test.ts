// Tasks across replicas: a real haproxy runs the shipped deploy/gateway/haproxy.cfg (server addresses and
// ports substituted, everything else as shipped) in front of TWO gateway replicas, each in front of its
// own MCP server replica that keeps its tasks in memory (2026-07-28 extension shape: a task's follow-ups
// carry `Mcp-Name: <task id>`). A task exists only on the server replica that created it: a follow-up
// routed elsewhere is answered -32602 "Task not found". The creating call's Mcp-Name is the tool's name,
// so the hash alone does not bring the follow-ups to the creation; the shipped stick table does, learning
// each task's replica from the header its gateway adds to the JSON answer that created it
// (HEADER_TASK_ID). Proved: for every task, its creation, every poll and its result (tasks/get, inline)
// reached one server replica, none was answered "not found", and that replica's gateway has a span of
// each of them (its embedded detector's input). Tool names are spread so that each replica creates tasks.
// The replicas enforce: a keyed repeat of a creating call (the 2026-07-28 extension declared) meets the
// replica that created its task and gets that task's handle; the servers create no second task.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startGateway, type RunningGateway } from '@resumewatch/gateway';
import {
  ATTR_MCP_METHOD_NAME,
  EXTENSION_TASKS,
  HEADER_TASK_ID,
  META_IDEMPOTENCY_KEY,
  MCP_METHOD_TOOLS_CALL,
  RESULT_TYPE_TASK,
  TASK_NOT_FOUND_CODE,
  TaskMethod,
  TaskStatus,
} from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHaproxy, type RunningHaproxy } from './helpers/haproxy.js';
import { requireTools } from './helpers/required-tools.js';
import { freePort } from './helpers/wait.js';

const REPLICAS = ['gateway-1', 'gateway-2'] as const;
const HAPROXY_ADDRESS = '127.0.0.1';
/** Tool names of the creating calls: enough that the hash puts some on each replica. */
const TOOLS = ['search', 'fetch', 'charge', 'refund', 'summarize', 'translate', 'lookup', 'notify', 'export', 'import'];
/** Polls until a task completes (its status on the POLLS-th tasks/get). */
const POLLS = 3;
const PROTOCOL = '2026-07-28';
/** What each server replica puts in the gateway's task header itself. */
const FORGED = 'forged-by-the-server';

/** What one server replica answered: each request, by method and task id. */
interface Seen {
  method: string;
  taskId: string | undefined;
  notFound: boolean;
}

interface TaskServer {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

/**
 * A server replica of the 2026-07-28 extension, from the spec text (ext-tasks specification/draft/tasks.md):
 * a `tools/call` is answered with a task (`resultType: "task"`, flat); `tasks/get` answers the status,
 * and once completed the result inline; an unknown task is -32602. Its tasks live in this process only.
 */
async function startTaskServer(): Promise<TaskServer> {
  const tasks = new Map<string, { polls: number; tool: string }>();
  const seen: Seen[] = [];
  const http: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      // Anything but a JSON-RPC POST (haproxy's readiness probe is a GET) gets 405.
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const message = JSON.parse(text) as { id: number; method: string; params: Record<string, unknown> };
      const now = new Date().toISOString();
      let reply: Record<string, unknown>;
      if (message.method === MCP_METHOD_TOOLS_CALL) {
        const taskId = randomUUID();
        tasks.set(taskId, { polls: 0, tool: String(message.params.name) });
        seen.push({ method: message.method, taskId, notFound: false });
        reply = {
          result: {
            resultType: RESULT_TYPE_TASK,
            taskId,
            status: TaskStatus.WORKING,
            createdAt: now,
            lastUpdatedAt: now,
            ttlMs: 60_000,
            pollIntervalMs: 10,
          },
        };
      } else if (message.method === TaskMethod.GET) {
        const taskId = String(message.params.taskId);
        const task = tasks.get(taskId);
        seen.push({ method: message.method, taskId, notFound: task === undefined });
        if (task === undefined) reply = { error: { code: TASK_NOT_FOUND_CODE, message: 'Task not found' } };
        else {
          task.polls++;
          const done = task.polls >= POLLS;
          reply = {
            result: {
              resultType: 'complete',
              taskId,
              status: done ? TaskStatus.COMPLETED : TaskStatus.WORKING,
              ttlMs: 60_000,
              pollIntervalMs: 10,
              ...(done ? { result: { content: [{ type: 'text', text: `${task.tool} done` }] } } : {}),
            },
          };
        }
      } else {
        seen.push({ method: message.method, taskId: undefined, notFound: false });
        reply = { error: { code: -32601, message: 'Method not found' } };
      }
      const body = JSON.stringify({ jsonrpc: '2.0', id: message.id, ...reply });
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        // A server's own claim to the header the balancer learns from: the gateway never passes it.
        [HEADER_TASK_ID]: FORGED,
      });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}

interface Replica {
  server: TaskServer;
  gateway: RunningGateway;
  spans: InMemorySpanExporter;
}

/** One JSON-RPC request through haproxy, with its Mcp-Name. */
async function call(url: string, id: number, method: string, params: Record<string, unknown>, name: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL,
      'mcp-method': method,
      'mcp-name': name,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
  });
  expect(response.status).toBe(200);
  const answer = (await response.json()) as { result?: Record<string, unknown>; error?: { code: number } };
  // The task header names the task a creation made, the gateway's own; on nothing else.
  expect(response.headers.get(HEADER_TASK_ID)).toBe(
    answer.result?.resultType === RESULT_TYPE_TASK ? (answer.result.taskId as string) : null,
  );
  return answer;
}

/** A 2026-07-28 client declares the extension on each request (its per-request client capabilities). */
const declared = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { [EXTENSION_TASKS]: {} } } };

describe('two gateway replicas behind haproxy: a task follows its creation (Mcp-Name, the stick table)', () => {
  const replicas = new Map<string, Replica>();
  let haproxy: RunningHaproxy | undefined;
  let mcpUrl = '';
  /** Each task created, with the results its client read. */
  const runs: { tool: string; taskId: string; statuses: string[]; text: string | undefined }[] = [];

  beforeAll(async () => {
    requireTools('haproxy');
    for (const name of REPLICAS) {
      const server = await startTaskServer();
      const spans = new InMemorySpanExporter();
      const gateway = await startGateway({
        upstream: server.url,
        host: '127.0.0.1',
        port: 0,
        trustedProxies: [HAPROXY_ADDRESS],
        // One task per idempotency key (the last test); nothing else here carries a key.
        enforce: true,
        spanProcessors: [new SimpleSpanProcessor(spans)],
        detector: { config: { metricsPort: 0 }, output: null },
      });
      replicas.set(name, { server, gateway, spans });
    }
    haproxy = await startHaproxy(
      await freePort(),
      REPLICAS.map((name) => ({
        name,
        port: replicas.get(name)!.gateway.port,
        checkPort: replicas.get(name)!.gateway.detector!.metricsPort,
      })),
    );
    mcpUrl = new URL('/mcp', haproxy.url).href;
    let id = 0;
    await Promise.all(
      TOOLS.map(async (tool) => {
        const created = await call(
          mcpUrl,
          ++id,
          MCP_METHOD_TOOLS_CALL,
          { name: tool, arguments: {}, _meta: declared },
          tool,
        );
        const taskId = created.result?.taskId as string;
        expect(created.result?.resultType, JSON.stringify(created)).toBe(RESULT_TYPE_TASK);
        const run = { tool, taskId, statuses: [] as string[], text: undefined as string | undefined };
        runs.push(run);
        for (let i = 0; i < POLLS; i++) {
          // The client's follow-ups name the task (Mcp-Name: <task id>), as the extension requires.
          const polled = await call(mcpUrl, ++id, TaskMethod.GET, { taskId }, taskId);
          if (polled.error) {
            run.statuses.push(`error ${polled.error.code}`);
            break;
          }
          run.statuses.push(String(polled.result?.status));
          const inline = polled.result?.result as { content?: { text: string }[] } | undefined;
          if (inline) run.text = inline.content?.[0]?.text;
        }
      }),
    );
    await Promise.all([...replicas.values()].map((r) => r.gateway.flush()));
  }, 60_000);

  afterAll(async () => {
    await haproxy?.close();
    for (const r of replicas.values()) {
      await r.gateway.close();
      await r.server.close();
    }
  });

  it("brings every poll and the result to the replica that created the task: no 'Task not found'", () => {
    expect(runs).toHaveLength(TOOLS.length);
    for (const run of runs) {
      expect(run.statuses, run.tool).toEqual([TaskStatus.WORKING, TaskStatus.WORKING, TaskStatus.COMPLETED]);
      expect(run.text).toBe(`${run.tool} done`);
    }
    for (const [name, r] of replicas) {
      expect(
        r.server.seen.filter((s) => s.notFound),
        `not-found answers of ${name}`,
      ).toEqual([]);
    }
  });

  it('puts creations on both replicas, each task whole on one server replica', () => {
    const createdOn = new Map<string, string>();
    for (const [name, r] of replicas)
      for (const s of r.server.seen) if (s.method === MCP_METHOD_TOOLS_CALL) createdOn.set(s.taskId!, name);
    expect(new Set(createdOn.values()).size, 'replicas that created tasks').toBe(REPLICAS.length);
    for (const run of runs) {
      const owner = createdOn.get(run.taskId)!;
      const owning = replicas.get(owner)!.server.seen.filter((s) => s.taskId === run.taskId);
      expect(owning.map((s) => s.method)).toEqual([MCP_METHOD_TOOLS_CALL, ...Array(POLLS).fill(TaskMethod.GET)]);
      for (const [name, r] of replicas)
        if (name !== owner) expect(r.server.seen.filter((s) => s.taskId === run.taskId)).toEqual([]);
    }
    // haproxy's own log says the same: the polls of a task (Mcp-Name = its id) went to one backend server.
    const exchanges = haproxy!.exchanges();
    for (const run of runs) {
      const servers = new Set(exchanges.filter((e) => e.name === run.taskId).map((e) => e.server));
      expect([...servers], run.taskId).toEqual([createdOn.get(run.taskId)]);
    }
  });

  it("has the creation and every poll of a task in its replica's spans (what its detector reads)", () => {
    for (const [name, r] of replicas) {
      // The request spans (one per exchange; the terminal spans name the method too).
      const methods = r.spans
        .getFinishedSpans()
        .filter((s) => s.kind === SpanKind.CLIENT)
        .map((s) => s.attributes[ATTR_MCP_METHOD_NAME]);
      const created = r.server.seen.filter((s) => s.method === MCP_METHOD_TOOLS_CALL).length;
      const polls = r.server.seen.filter((s) => s.method === TaskMethod.GET).length;
      expect(methods.filter((m) => m === MCP_METHOD_TOOLS_CALL).length, `${name} creations`).toBe(created);
      expect(methods.filter((m) => m === TaskMethod.GET).length, `${name} polls`).toBe(polls);
      expect(polls, `${name} polls`).toBe(created * POLLS);
    }
  });

  it('with --enforce, answers a keyed repeat of a creating call with its task, on the replica that created it', async () => {
    const params = { name: 'reserve', arguments: {}, _meta: { ...declared, [META_IDEMPOTENCY_KEY]: 'booking-9' } };
    const creations = () =>
      [...replicas.values()].flatMap((r) => r.server.seen.filter((s) => s.method === MCP_METHOD_TOOLS_CALL)).length;
    const before = creations();
    const first = await call(mcpUrl, 1001, MCP_METHOD_TOOLS_CALL, params, 'reserve');
    const taskId = first.result?.taskId as string;
    expect(creations()).toBe(before + 1);
    // The same client and tool hash to the same replica, which holds the handle: no second task.
    const response = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': PROTOCOL,
        'mcp-name': 'reserve',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1002, method: MCP_METHOD_TOOLS_CALL, params }),
    });
    expect(response.headers.get(HEADER_TASK_ID)).toBe(taskId);
    const again = (await response.json()) as { id: number; result?: Record<string, unknown> };
    expect(again.id).toBe(1002);
    expect(again.result?.taskId).toBe(taskId);
    expect(creations()).toBe(before + 1);
    const repeated = [...replicas.values()].map((r) => r.gateway.counts().taskHandlesRepeated);
    expect(repeated.reduce((a, b) => a + b)).toBe(1);
  });
});
