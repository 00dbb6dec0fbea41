// One task per idempotency key (--enforce), against the real SDK 1.x task API: an McpServer with
// `server.experimental.tasks.registerToolTask` and an `InMemoryTaskStore`, stateless (a transport per
// POST, one store), answering JSON or SSE. A raw node:http client sends a task-augmented `tools/call`
// (2025-11-25: `params.task`) carrying an idempotency key, and drops its connection once it holds the
// answer's headers (JSON) or first bytes (SSE), as a client whose reply was lost does; it then sends the
// same call again. Enforcing, the gateway answers the second call with the first task's handle, under the
// second call's id, and the server sees one creation. Without a key, in observe mode, from another
// client, or after the task's outcome was delivered: forwarded, a second creation.
import { request, createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { FindingKind, HEADER_TASK_ID, META_IDEMPOTENCY_KEY, TaskMethod } from '@resumewatch/semconv';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../src/index.js';
import { kindsOf, settleGateway, startTestGateway, waitFor } from './helpers/e2e-rig.js';

const TOOL = 'charge-card';
const PROTOCOL = '2025-11-25';

interface TaskServer {
  url: string;
  /** Tasks the server created (its createTask handler ran). */
  created: string[];
  /** While set, each creation's answer waits for it (the task exists already). */
  gate: Promise<void> | undefined;
  close(): Promise<void>;
}

/** The SDK 1.x server: one task tool whose work finishes at once, in one InMemoryTaskStore. */
async function startTaskServer(json: boolean): Promise<TaskServer> {
  const taskStore = new InMemoryTaskStore();
  const created: string[] = [];
  const state: { gate: Promise<void> | undefined } = { gate: undefined };
  const mcp = (): McpServer => {
    const server = new McpServer(
      { name: 'task-server', version: '1.0.0' },
      { capabilities: { tasks: { requests: { tools: { call: {} } } } }, taskStore },
    );
    server.experimental.tasks.registerToolTask(
      TOOL,
      { description: 'charges a card, once' },
      {
        async createTask({ taskStore: store, taskRequestedTtl }) {
          const task = await store.createTask({ ttl: taskRequestedTtl });
          created.push(task.taskId);
          await state.gate;
          await store.storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: 'charged' }] });
          return { task };
        },
        // The SDK's own store answers tasks/get and tasks/result; these are its handler's required members.
        getTask: ({ taskId, taskStore: store }) => store.getTask(taskId),
        getTaskResult: async ({ taskId, taskStore: store }) => (await store.getTaskResult(taskId)) as CallToolResult,
      },
    );
    return server;
  };
  const http: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // Stateless, as the SDK's stateless example: no standalone GET stream, no DELETE.
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
      const server = mcp();
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      void server
        .connect(transport)
        .then(() => transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8'))));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    created,
    get gate() {
      return state.gate;
    },
    set gate(gate) {
      state.gate = gate;
    },
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * A JSON-RPC message to the gateway; `drop`: the connection is destroyed once the answer starts (headers,
 * or its first bytes), or when `dropNow` resolves (before any answer).
 */
function post(
  url: string,
  message: unknown,
  options: { drop?: 'headers' | 'bytes' | Promise<void>; auth?: string } = {},
) {
  return new Promise<Answer | 'dropped'>((resolve, reject) => {
    const body = JSON.stringify(message);
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': PROTOCOL,
          'content-length': Buffer.byteLength(body),
          ...(options.auth ? { authorization: options.auth } : {}),
        },
      },
      (res) => {
        if (options.drop === 'headers') {
          req.destroy();
          return resolve('dropped');
        }
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString('utf8');
          if (options.drop === 'bytes' && text.includes('taskId')) {
            req.destroy();
            resolve('dropped');
          }
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
        res.on('error', () => resolve('dropped'));
      },
    );
    req.on('error', (e) => (options.drop ? resolve('dropped') : reject(e)));
    req.end(body);
    if (options.drop instanceof Promise)
      void options.drop.then(() => {
        req.destroy();
        resolve('dropped');
      });
  });
}

/** The JSON-RPC message of an answer, JSON or the first SSE `data:` line. */
function messageOf(answer: Answer | 'dropped'): { id: unknown; result?: { task?: { taskId: string } } } {
  if (answer === 'dropped') throw new Error('the answer was dropped');
  const text = answer.body.trimStart().startsWith('{')
    ? answer.body
    : answer.body
        .split('\n')
        .find((line) => line.startsWith('data: {'))!
        .slice(6);
  return JSON.parse(text);
}

const taskCall = (id: number, key: string | undefined) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: {
    name: TOOL,
    arguments: {},
    task: { ttl: 60_000 },
    ...(key === undefined ? {} : { _meta: { [META_IDEMPOTENCY_KEY]: key } }),
  },
});

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function rig(
  enforce: boolean,
  json: boolean,
): Promise<{ server: TaskServer; gateway: RunningGateway; url: string }> {
  const server = await startTaskServer(json);
  closers.push(() => server.close());
  const gateway = await startTestGateway(server.url, { enforce });
  closers.push(() => gateway.close());
  return { server, gateway, url: new URL('/mcp', gateway.url).href };
}

describe('--enforce: one task per idempotency key (SDK 1.x registerToolTask, InMemoryTaskStore)', () => {
  for (const json of [true, false])
    it(`answers a keyed re-issue whose first reply was dropped with the first task's handle (${json ? 'JSON' : 'SSE'} answers)`, async () => {
      const { server, gateway, url } = await rig(true, json);
      expect(await post(url, taskCall(1, 'order-17'), { drop: json ? 'headers' : 'bytes' })).toBe('dropped');
      await waitFor(() => gateway.counts().taskHandles === 1, 'the handle of the first task kept');
      expect(server.created).toHaveLength(1);

      const again = await post(url, taskCall(2, 'order-17'));
      const message = messageOf(again);
      expect(message.id).toBe(2);
      expect(message.result?.task?.taskId).toBe(server.created[0]);
      expect((again as Answer).headers[HEADER_TASK_ID]).toBe(server.created[0]);
      // Not forwarded: the server created no second task.
      expect(server.created).toHaveLength(1);
      expect(gateway.counts().taskHandlesRepeated).toBe(1);

      // The task the handle names is the server's: its result is there.
      const result = messageOf(
        await post(url, { jsonrpc: '2.0', id: 3, method: TaskMethod.RESULT, params: { taskId: server.created[0] } }),
      ) as { result?: { content?: { text: string }[] } };
      expect(result.result?.content?.[0]?.text).toBe('charged');
      // Its outcome delivered, the handle is no longer live: the same key makes new work.
      await waitFor(() => gateway.counts().taskHandles === 0, 'the delivered task to leave the handles');
      const after = messageOf(await post(url, taskCall(4, 'order-17')));
      expect(server.created).toHaveLength(2);
      expect(after.result?.task?.taskId).toBe(server.created[1]);
    });

  for (const json of [true, false])
    it(`learns the handle of a call whose client left before the answer came (${json ? 'JSON' : 'SSE'})`, async () => {
      const { server, gateway, url } = await rig(true, json);
      let open!: () => void;
      server.gate = new Promise<void>((resolve) => (open = resolve));
      // The client leaves once the server has the call (the gateway forwarded it), before any answer.
      const forwarded = waitFor(() => server.created.length === 1, 'the call at the server').then(() => undefined);
      expect(await post(url, taskCall(1, 'order-18'), { drop: forwarded })).toBe('dropped');
      await waitFor(() => gateway.counts().open === 0, 'the gateway to see its client leave');
      server.gate = undefined;
      open();
      await waitFor(() => gateway.counts().taskHandles === 1, 'the handle read from the answer no client took');

      const again = messageOf(await post(url, taskCall(2, 'order-18')));
      expect(again.id).toBe(2);
      expect(again.result?.task?.taskId).toBe(server.created[0]);
      expect(server.created).toHaveLength(1);
    });

  it("leads the SDK 1.x client's keyed re-issue (callToolStream) to the first task and its result", async () => {
    const { server, gateway, url } = await rig(true, false);
    expect(await post(url, taskCall(1, 'order-19'), { drop: 'bytes' })).toBe('dropped');
    await waitFor(() => gateway.counts().taskHandles === 1, 'the handle of the first task kept');
    const client = new Client({ name: 'retrying-app', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    closers.push(() => client.close());
    const seen: { type: string; taskId?: string; text?: string }[] = [];
    const stream = client.experimental.tasks.callToolStream(
      { name: TOOL, arguments: {}, _meta: { [META_IDEMPOTENCY_KEY]: 'order-19' } },
      undefined,
      { task: { ttl: 60_000 } },
    );
    for await (const message of stream) {
      if (message.type === 'taskCreated') seen.push({ type: message.type, taskId: message.task.taskId });
      else if (message.type === 'result')
        seen.push({ type: message.type, text: (message.result.content as { text: string }[])[0]?.text });
      else seen.push({ type: message.type });
    }
    expect(seen[0]).toEqual({ type: 'taskCreated', taskId: server.created[0] });
    expect(seen.at(-1)).toEqual({ type: 'result', text: 'charged' });
    expect(server.created).toHaveLength(1);
  });

  it('names the task on a JSON answer that created one (the balancer header), and on no other answer', async () => {
    const { server, url } = await rig(false, true);
    const created = (await post(url, taskCall(1, undefined))) as Answer;
    expect(created.headers[HEADER_TASK_ID]).toBe(server.created[0]);
    const polled = (await post(url, {
      jsonrpc: '2.0',
      id: 2,
      method: TaskMethod.GET,
      params: { taskId: server.created[0] },
    })) as Answer;
    expect(polled.status).toBe(200);
    expect(polled.headers[HEADER_TASK_ID]).toBeUndefined();
  });

  it('withholds nothing without a key: two calls, two tasks, both forwarded', async () => {
    const { server, gateway, url } = await rig(true, true);
    expect(await post(url, taskCall(1, undefined), { drop: 'headers' })).toBe('dropped');
    await waitFor(() => server.created.length === 1, 'the first creation');
    const second = messageOf(await post(url, taskCall(2, undefined)));
    expect(server.created).toHaveLength(2);
    expect(second.result?.task?.taskId).toBe(server.created[1]);
    expect(gateway.counts().taskHandlesRepeated).toBe(0);
  });

  it("never repeats one client's handle to another client (another Authorization)", async () => {
    const { server, gateway, url } = await rig(true, true);
    await post(url, taskCall(1, 'shared-key'), { auth: 'Bearer alice' });
    await waitFor(() => gateway.counts().taskHandles === 1, 'the first handle');
    const bob = messageOf(await post(url, taskCall(2, 'shared-key'), { auth: 'Bearer bob' }));
    expect(server.created).toHaveLength(2);
    expect(bob.result?.task?.taskId).toBe(server.created[1]);
  });

  it('observing (no --enforce), withholds nothing: the keyed re-issue is forwarded', async () => {
    const { server, gateway, url } = await rig(false, true);
    expect(await post(url, taskCall(1, 'order-17'), { drop: 'headers' })).toBe('dropped');
    await waitFor(() => server.created.length === 1, 'the first creation');
    const second = messageOf(await post(url, taskCall(2, 'order-17')));
    expect(server.created).toHaveLength(2);
    expect(second.result?.task?.taskId).toBe(server.created[1]);
    expect(gateway.counts().taskHandlesRepeated).toBe(0);
  });
});

// The first case, from the middle alone: a 2025-11-25 task call whose client left before its
// answer (the connection dropped before the CreateTaskResult), then called again with no key. A
// disconnection is no cancellation in that era: the gateway reads the answer on, so the first task is seen,
// and the second call is its re-issue: possible_duplicate_task, naming both tasks. Nothing is withheld.
describe('observing: a task call re-issued after its client left before the answer (no key)', () => {
  for (const json of [true, false])
    it(`reports the second task as a possible duplicate of the first (${json ? 'JSON' : 'SSE'} answers)`, async () => {
      const { server, gateway, url } = await rig(false, json);
      let open!: () => void;
      server.gate = new Promise<void>((resolve) => (open = resolve));
      const forwarded = waitFor(() => server.created.length === 1, 'the call at the server').then(() => undefined);
      expect(await post(url, taskCall(1, undefined), { drop: forwarded })).toBe('dropped');
      await waitFor(() => gateway.counts().open === 0, 'the gateway to see its client leave');
      server.gate = undefined;
      open();
      await waitFor(() => (gateway.detector!.detector.stats().tasks === 1 ? true : undefined), 'the first task seen');

      const again = messageOf(await post(url, taskCall(2, undefined)));
      expect(server.created).toHaveLength(2);
      expect(again.result?.task?.taskId).toBe(server.created[1]);
      messageOf(
        await post(url, { jsonrpc: '2.0', id: 3, method: TaskMethod.RESULT, params: { taskId: server.created[1] } }),
      );
      await settleGateway(gateway);
      const d = gateway.detector!;
      d.detector.advance(Date.now() + d.config.reissueSettleMs + 1);
      const findings = d.findings();
      expect(kindsOf(findings)).toEqual([FindingKind.LOST_TASK_RESULT, FindingKind.POSSIBLE_DUPLICATE_TASK]);
      expect(findings.find((f) => f.kind === FindingKind.POSSIBLE_DUPLICATE_TASK)).toMatchObject({
        task_id: server.created[0],
        duplicate_task_id: server.created[1],
      });
      // The first task completed and no client ever got its outcome: lost (its ttl passed on the detector's
      // clock); the second task's result was fetched.
      expect(findings.filter((f) => f.kind === FindingKind.LOST_TASK_RESULT).map((f) => f.task_id)).toEqual([
        server.created[0],
      ]);
    });

  it('a call answered whole to its client, then made again, is new work: no finding', async () => {
    const { server, gateway, url } = await rig(false, true);
    messageOf(await post(url, taskCall(1, undefined)));
    messageOf(await post(url, taskCall(2, undefined)));
    expect(server.created).toHaveLength(2);
    await settleGateway(gateway);
    const d = gateway.detector!;
    d.detector.advance(Date.now() + d.config.reissueSettleMs + 1);
    expect(kindsOf(d.findings()).filter((k) => k !== FindingKind.LOST_TASK_RESULT)).toEqual([]);
  });
});
