/**
 * The benchmark's MCP-like upstream, in its own process (its CPU is nobody's figure). Streamable HTTP
 * as an MCP server speaks it, with only what the benchmark needs:
 *
 * - POST `initialize`: a JSON answer and a new `Mcp-Session-Id`; POST notifications: 202.
 * - POST `tools/call` `json`: a JSON answer (one JSON-RPC result of a few hundred bytes).
 * - POST `tools/call` `stream` (`events`, `rate`): an SSE stream of `events` progress notifications,
 *   then the result, each event with an `id:` (`<stream>_<n>`) as the SDK's event store writes them;
 *   one write per event, as fast as the socket takes them, or with `rate`, paced: one pacer writes
 *   `rate` events a second in all, evenly, round-robin over the paced streams open.
 *   Each progress notification's `message` is the upstream's monotonic clock (ns) when it was written:
 *   the client, on the same machine, reads the same clock (CLOCK_MONOTONIC) when the event arrives.
 * - POST `tools/call` `hold`: an SSE stream that sends one progress notification and stays open until
 *   its session is DELETEd (then the result and a clean end).
 * - DELETE: ends the session's held streams, forgets the session, 200.
 * - Tasks, 2025-11-25's shape (tasks-poll.bench.ts): a `tools/call` with `params.task` is answered with a
 *   CreateTaskResult (`{task: {taskId, status: working, ttl, createdAt, lastUpdatedAt, pollInterval}}`,
 *   the ttl asked for, `pollInterval` from `arguments.pollInterval`); `tasks/get` with the flat Task of
 *   `params.taskId`, status working (nothing is kept per task: every task named is working, with the
 *   ttl and poll interval of the latest call that asked for a task).
 * - `initialize` answers the protocol version the client asked for.
 *
 * Sends `{ url }` over IPC once listening.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TaskField, TaskMethod, TaskStatus } from '@resumewatch/semconv';

const SESSION = 'mcp-session-id';
const held = new Map<string, Set<{ res: ServerResponse; id: number | string; stream: string }>>();
let nextSession = 1;
let nextStream = 1;

interface Rpc {
  id?: number | string;
  method?: string;
  params?: {
    name?: string;
    arguments?: { events?: number; rate?: number; pollInterval?: number };
    protocolVersion?: string;
    task?: { ttl?: number };
    taskId?: string;
  };
}

const resultEvent = (stream: string, n: number, id: number | string): string =>
  `id: ${stream}_${n}\nevent: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"done"}]}}\n\n`;

const progressEvent = (stream: string, n: number, id: number | string, total: number): string =>
  `id: ${stream}_${n}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${JSON.stringify(id)},"progress":${n},"total":${total},"message":"${process.hrtime.bigint()}"}}\n\n`;

const JSON_RESULT = (id: number | string): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    result: {
      content: [{ type: 'text', text: 'The weather in Lisbon is 21 °C, clear sky, wind 12 km/h from the north-west.' }],
      structuredContent: { city: 'Lisbon', temperatureC: 21, sky: 'clear', windKmh: 12, windFrom: 'NW' },
      isError: false,
    },
  });

// --- Tasks (2025-11-25): handles and polls answered from nothing kept ---
let nextTask = 1;
let pollInterval = 1000;
let ttl: number | null = null;
const TASK_CREATED_AT = new Date().toISOString();
const task = (taskId: string) => ({
  [TaskField.TASK_ID]: taskId,
  [TaskField.STATUS]: TaskStatus.WORKING,
  [TaskField.TTL]: ttl,
  createdAt: TASK_CREATED_AT,
  lastUpdatedAt: TASK_CREATED_AT,
  [TaskField.POLL_INTERVAL]: pollInterval,
});
/** CreateTaskResult: the handle of a new task. */
function createTask(rpc: Rpc): string {
  pollInterval = rpc.params?.arguments?.pollInterval ?? pollInterval;
  ttl = rpc.params?.task?.ttl ?? null;
  const taskId = `task-${process.pid}-${nextTask++}`;
  return JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: { [TaskField.TASK]: task(taskId) } });
}
/** GetTaskResult: the Task flat in the result. */
const getTask = (rpc: Rpc): string =>
  JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: task(rpc.params?.taskId ?? '') });

function sse(res: ServerResponse, session: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', [SESSION]: session });
  res.flushHeaders();
}

/** Paced streams share one pacer: events go out evenly at `rate` per second in all, round-robin over the streams. */
const paced: (() => boolean)[] = [];
let pacer: ReturnType<typeof setInterval> | undefined;
let pacedRate = 1000;
let owed = 0;
let last = 0n;
let turn = 0;

function pace(): void {
  const now = process.hrtime.bigint();
  owed = Math.min(owed + (Number(now - last) * pacedRate) / 1e9, 100);
  last = now;
  while (owed >= 1 && paced.length > 0) {
    owed--;
    const i = turn++ % paced.length;
    // A stream that wrote its result (or lost its client) leaves the round.
    if (!paced[i]!()) paced.splice(i, 1);
  }
  if (paced.length === 0) {
    clearInterval(pacer);
    pacer = undefined;
  }
}

function stream(res: ServerResponse, session: string, rpc: Rpc): void {
  const events = rpc.params?.arguments?.events ?? 100;
  const rate = rpc.params?.arguments?.rate ?? 0;
  const id = rpc.id ?? 0;
  const name = String(nextStream++);
  sse(res, session);
  let n = 0;
  let stopped = false;
  res.once('close', () => (stopped = true));
  if (rate > 0) {
    pacedRate = rate;
    paced.push(() => {
      if (stopped) return false;
      if (n < events) {
        res.write(progressEvent(name, n, id, events));
        n++;
        return true;
      }
      res.end(resultEvent(name, n, id));
      return false;
    });
    if (!pacer) {
      owed = 0;
      last = process.hrtime.bigint();
      pacer = setInterval(pace, 1);
    }
    return;
  }
  const write = (): void => {
    while (n < events) {
      if (stopped) return;
      const more = res.write(progressEvent(name, n, id, events));
      n++;
      if (!more) {
        res.once('drain', write);
        return;
      }
    }
    res.end(resultEvent(name, n, id));
  };
  write();
}

function hold(res: ServerResponse, session: string, rpc: Rpc): void {
  const name = String(nextStream++);
  const id = rpc.id ?? 0;
  sse(res, session);
  res.write(progressEvent(name, 0, id, 1));
  let set = held.get(session);
  if (!set) held.set(session, (set = new Set()));
  const entry = { res, id, stream: name };
  set.add(entry);
  res.once('close', () => set.delete(entry));
}

const server = createServer((req, res) => {
  const session = req.headers[SESSION];
  if (req.method === 'DELETE') {
    req.resume();
    const sid = typeof session === 'string' ? session : '';
    for (const h of held.get(sid) ?? []) h.res.end(resultEvent(h.stream, 1, h.id));
    held.delete(sid);
    res.writeHead(200, { 'content-length': '0' }).end();
    return;
  }
  if (req.method !== 'POST') {
    req.resume();
    res.writeHead(405, { allow: 'POST, DELETE', 'content-length': '0' }).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const rpc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Rpc;
    if (rpc.method === 'initialize') {
      const sid = `s${process.pid}-${nextSession++}-${Math.random().toString(36).slice(2, 10)}`;
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: rpc.id,
        result: {
          protocolVersion: rpc.params?.protocolVersion ?? '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'bench-upstream', version: '1.0.0' },
        },
      });
      res.writeHead(200, { 'content-type': 'application/json', [SESSION]: sid }).end(body);
      return;
    }
    const sid = typeof session === 'string' ? session : '';
    if (rpc.id === undefined) {
      res.writeHead(202, { 'content-length': '0' }).end();
      return;
    }
    const tool = rpc.params?.name;
    if (tool === 'stream') return stream(res, sid, rpc);
    if (tool === 'hold') return hold(res, sid, rpc);
    const json = { 'content-type': 'application/json', [SESSION]: sid };
    if (rpc.method === TaskMethod.GET) return void res.writeHead(200, json).end(getTask(rpc));
    if (rpc.params?.task !== undefined) return void res.writeHead(200, json).end(createTask(rpc));
    res.writeHead(200, { 'content-type': 'application/json', [SESSION]: sid }).end(JSON_RESULT(rpc.id));
  });
});
// Idle keep-alive connections stay (a proxy's agent keeps at most 256 free ones, before and after the
// memory phase alike): an upstream closing idle connections races a proxy reusing one (ECONNRESET,
// a 502), and at 1 s Node's agent reuses none at all (`Keep-Alive: timeout=1`).
server.keepAliveTimeout = 600_000;
server.requestTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
});
let connections = 0;
server.on('connection', () => connections++);
// `{ seq, op: 'connections' }`: how many connections proxies (or the client) opened so far.
process.on('message', (m: { seq: number }) => process.send!({ seq: m.seq, connections }));
process.on('disconnect', () => process.exit(0));
