/**
 * The parts of the gateway's benchmarks, in one process (instructions.bench.ts) or each in its own
 * (`node parts.ts upstream|gateway|gateway-nodetector|bare|client`, over bench/harness.ts's IPC):
 *
 * - upstream: Streamable HTTP as an MCP server speaks it, no more than the benchmarks need: `initialize`,
 *   notifications (202), tools/call `json` (a JSON result of a few hundred bytes), `stream` (`events`
 *   progress notifications and the result, one write with an `id:` each, unpaced or paced at `rate`
 *   events/s in all; each progress `message` is the upstream's clock in ns when written), `hold` (one
 *   event, then open until its session is DELETEd), task-augmented tools/call and `tasks/get`.
 * - proxies: the gateway's build (built-in detector on, or off: `gateway-nodetector`) and the bare Node
 *   reverse proxy (node:http piped to node:http, keep-alive agent, hop-by-hop headers dropped).
 * - client: sessions, JSON calls, streams (each event's delay from the upstream's write), paced JSON
 *   calls (their round trips), tasks and polls, held streams, DELETEs; over node:http, one agent.
 */
import {
  Agent,
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import * as S from '@resumewatch/semconv';
import type { RunningGateway } from '../src/gateway.js';
import { listen, pool, serve } from '../../../bench/harness.js';

const SID = 'mcp-session-id';

// --- Upstream ---

interface Rpc {
  id?: number | string;
  method?: string;
  params?: {
    name?: string;
    arguments?: { events?: number; rate?: number };
    protocolVersion?: string;
    task?: { ttl?: number };
    taskId?: string;
  };
}
const JSON_RESULT = JSON.stringify({
  content: [{ type: 'text', text: 'The weather in Lisbon is 21 °C, clear sky, wind 12 km/h from the north-west.' }],
  structuredContent: { city: 'Lisbon', temperatureC: 21, sky: 'clear', windKmh: 12, windFrom: 'NW' },
  isError: false,
});
const progress = (s: string, n: number, id: unknown, total: number) =>
  `id: ${s}_${n}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${JSON.stringify(id)},"progress":${n},"total":${total},"message":"${process.hrtime.bigint()}"}}\n\n`;
const done = (s: string, n: number, id: unknown) =>
  `id: ${s}_${n}\nevent: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"done"}]}}\n\n`;
const task = (taskId: string) => ({
  [S.TaskField.TASK_ID]: taskId,
  [S.TaskField.STATUS]: S.TaskStatus.WORKING,
  [S.TaskField.TTL]: 3_600_000,
  createdAt: '2026-01-01T00:00:00Z',
  lastUpdatedAt: '2026-01-01T00:00:00Z',
  [S.TaskField.POLL_INTERVAL]: 20,
});

export async function startUpstream(): Promise<string> {
  const held = new Map<string, () => void>();
  let next = 1;
  // One pacer for every paced stream: `rate` events a second in all, round-robin.
  const paced: (() => boolean)[] = [];
  let pacer: NodeJS.Timeout | undefined;
  let [rate, owed, last, turn] = [1000, 0, 0n, 0];
  const pace = () => {
    const now = process.hrtime.bigint();
    owed = Math.min(owed + (Number(now - last) * rate) / 1e9, 100);
    last = now;
    for (; owed >= 1 && paced.length > 0; owed--) {
      const i = turn++ % paced.length;
      if (!paced[i]!()) paced.splice(i, 1);
    }
    if (paced.length === 0) pacer = void clearInterval(pacer);
  };
  const stream = (res: ServerResponse, rpc: Rpc) => {
    const { events = 100, rate: r = 0 } = rpc.params?.arguments ?? {};
    const s = String(next++);
    let n = 0;
    if (r > 0) {
      rate = r;
      paced.push(() => {
        if (n >= events) {
          res.end(done(s, n, rpc.id));
          return false;
        }
        res.write(progress(s, n++, rpc.id, events));
        return true;
      });
      if (!pacer) [owed, last, pacer] = [0, process.hrtime.bigint(), setInterval(pace, 1)];
      return;
    }
    const write = (): void => {
      while (n < events) if (!res.write(progress(s, n++, rpc.id, events))) return void res.once('drain', write);
      res.end(done(s, n, rpc.id));
    };
    write();
  };
  const server = createServer((req, res) => {
    const sid = String(req.headers[SID] ?? '');
    if (req.method === 'DELETE') {
      held.get(sid)?.();
      held.delete(sid);
      return void req.resume().once('end', () => res.writeHead(200, { 'content-length': '0' }).end());
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rpc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Rpc;
      const json = (result: unknown, session = sid) =>
        res
          .writeHead(200, { 'content-type': 'application/json', [SID]: session })
          .end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result }));
      if (rpc.method === 'initialize')
        return json(
          {
            protocolVersion: rpc.params?.protocolVersion ?? '2025-06-18',
            capabilities: { tools: {} },
            serverInfo: { name: 'u', version: '1' },
          },
          `s${process.pid}-${next++}`,
        );
      if (rpc.id === undefined) return void res.writeHead(202, { 'content-length': '0' }).end();
      if (rpc.method === S.TaskMethod.GET) return json(task(rpc.params?.taskId ?? ''));
      if (rpc.params?.task) return json({ [S.TaskField.TASK]: task(`task-${next++}`) });
      const tool = rpc.params?.name;
      if (tool !== 'stream' && tool !== 'hold')
        return void res
          .writeHead(200, { 'content-type': 'application/json', [SID]: sid })
          .end(`{"jsonrpc":"2.0","id":${JSON.stringify(rpc.id)},"result":${JSON_RESULT}}`);
      res
        .writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', [SID]: sid })
        .flushHeaders();
      if (tool === 'stream') return stream(res, rpc);
      const s = String(next++);
      res.write(progress(s, 0, rpc.id, 1));
      held.set(sid, () => res.end(done(s, 1, rpc.id)));
    });
  });
  server.keepAliveTimeout = 600_000;
  server.requestTimeout = 0;
  return listen(server);
}

// --- Proxies ---

const HOP = new Set('connection keep-alive proxy-connection te trailer transfer-encoding upgrade host'.split(' '));
const endToEnd = (h: IncomingHttpHeaders) => Object.fromEntries(Object.entries(h).filter(([k]) => !HOP.has(k)));

export type ProxyKind = 'gateway' | 'gateway-nodetector' | 'gateway-forwarding' | 'bare';

// The build, as it runs (tsx would add a property to each named closure: time and heap per stream); a
// path the type-check, run before any build, does not follow.
const [BUILT_GATEWAY, BUILT_FORWARD] = ['../dist/gateway.js', '../dist/forward.js'];

export async function startProxy(
  kind: ProxyKind,
  upstream: string,
  maxStreams = 100_000,
): Promise<{ url: string; gateway?: RunningGateway; close(): Promise<void> }> {
  if (kind !== 'bare') {
    const { startGateway } = (await import(BUILT_GATEWAY)) as typeof import('../src/gateway.js');
    // `gateway-forwarding`: its forwarding alone, no request described to the observer (as for a batch
    // over --max-batch-messages), so no exchange is observed.
    const { Forwarder } = (await import(BUILT_FORWARD)) as typeof import('../src/forward.js');
    const proto = Forwarder.prototype as unknown as { begin?: () => object };
    if (kind === 'gateway-forwarding' && typeof proto.begin !== 'function')
      throw new Error('no Forwarder#begin to stub');
    if (kind === 'gateway-forwarding') proto.begin = () => ({ request: undefined, joined: false });
    const gateway = await startGateway({
      upstream,
      port: 0,
      maxStreams,
      maxSessions: maxStreams,
      detector: kind === 'gateway' ? { config: { metricsPort: 0 }, output: null } : false,
    });
    return { url: gateway.url, gateway, close: () => gateway.close() };
  }
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const server = createServer({ requestTimeout: 0 }, (req, res) => {
    const up = request({
      host: target.hostname,
      port: target.port,
      path: req.url,
      method: req.method,
      headers: { ...endToEnd(req.headers), host: target.host },
      agent,
    });
    up.once('response', (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.statusMessage, endToEnd(ur.headers)).flushHeaders();
      ur.pipe(res);
    });
    up.once('error', () => res.destroy());
    res.once('close', () => void (res.writableFinished || up.destroy()));
    req.pipe(up);
  });
  const close = () =>
    new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections(), agent.destroy()));
  return { url: await listen(server), close };
}

/** The sum of a gateway's metric series so far (`series`: name and `{`). */
async function metricSum(g: RunningGateway, series: string): Promise<number> {
  let n = 0;
  for (const line of (await g.detector!.metrics.render(undefined)).body.split('\n'))
    if (line.startsWith(series)) n += Number(line.split(' ').at(-1));
  return n;
}

// --- Client ---

let agent = new Agent({ keepAlive: true, maxSockets: Infinity });
/** Drops every idle connection: the next requests open new ones. */
export function freshConnections(): void {
  agent.destroy();
  agent = new Agent({ keepAlive: true, maxSockets: Infinity });
}
let nextId = 1;
const versions = new Map<string, string>();
const headers = (s?: string) => (s ? { [SID]: s, 'mcp-protocol-version': versions.get(s) ?? '2025-06-18' } : {});

function send(base: string, method: string, body: string, session?: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/mcp`, {
      method,
      agent,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': Buffer.byteLength(body),
        ...headers(session),
      },
    });
    req.once('error', reject).once('response', resolve).end(body);
  });
}
/** The body's text, and each SSE event block with the time its chunk arrived. */
function read(
  res: IncomingMessage,
  onEvent?: (block: string, at: bigint) => void,
): Promise<{ text: string; events: number }> {
  return new Promise((resolve, reject) => {
    let text = '';
    let events = 0;
    res.setEncoding('latin1');
    res.on('data', (c: string) => {
      const at = process.hrtime.bigint();
      text += c;
      for (let end; (end = text.indexOf('\n\n')) >= 0; events++) {
        onEvent?.(text.slice(0, end), at);
        text = text.slice(end + 2);
      }
    });
    res.once('end', () => resolve({ text, events })).once('error', reject);
  });
}
const rpc = (method: string, params: object) => JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });
async function ask(base: string, body: string, session?: string): Promise<string> {
  const res = await send(base, 'POST', body, session);
  const { text } = await read(res);
  if (res.statusCode !== 200 || !text.includes('"result"'))
    throw new Error(`${base}: ${res.statusCode} ${text.slice(0, 200)}`);
  return text;
}
const del = async (base: string, s: string) => void (await read(await send(base, 'DELETE', '', s)));

export async function open(base: string, n: number, version = '2025-06-18'): Promise<string[]> {
  const out: string[] = [];
  const init = { protocolVersion: version, capabilities: {}, clientInfo: { name: 'bench', version: '1' } };
  for (let i = 0; i < n; i++) {
    const res = await send(base, 'POST', rpc('initialize', init));
    await read(res);
    const s = String(res.headers[SID]);
    versions.set(s, version);
    await read(await send(base, 'POST', '{"jsonrpc":"2.0","method":"notifications/initialized"}', s));
    out.push(s);
  }
  return out;
}
/** `total` pieces of work, one worker per session. */
const workers = async (sessions: string[], total: number, work: (s: string, i: number) => Promise<void>) => {
  let left = total;
  await pool(sessions.length, async (k) => {
    while (left > 0) await work(sessions[k]!, --left);
  });
};
export const jsonCalls = (base: string, sessions: string[], n: number) =>
  workers(sessions, n, (s) => ask(base, rpc('tools/call', { name: 'json', arguments: {} }), s).then(() => undefined));

/** `streams` streams of `events` progress events and the result; with `latency`, each event's delay (µs). */
export async function streams(
  base: string,
  sessions: string[],
  n: number,
  events: number,
  rate = 0,
  latency = false,
): Promise<number[]> {
  const delays: number[] = [];
  await workers(sessions, n, async (s) => {
    const res = await send(base, 'POST', rpc('tools/call', { name: 'stream', arguments: { events, rate } }), s);
    const got = await read(res, (block, at) => {
      const i = latency ? block.indexOf('"message":"') : -1;
      if (i >= 0) delays.push(Number(at - BigInt(block.slice(i + 11, block.indexOf('"', i + 11)))) / 1000);
    });
    if (got.events !== events + 1) throw new Error(`stream: ${got.events} events, expected ${events + 1}`);
  });
  return delays;
}

const holding: { session: string; ended: Promise<unknown> }[] = [];

/** What the parent asks the client with. */
interface Work {
  base: string;
  sessions: string[];
  n: number;
  events: number;
  rate: number;
  latency: boolean;
  version?: string;
  /** Each session's task ids. */
  tasks: Record<string, string[]>;
}
const clientOps = {
  open: (m: Work) => open(m.base, m.n, m.version).then((sessions) => ({ sessions })),
  json: (m: Work) => jsonCalls(m.base, m.sessions, m.n),
  sse: (m: Work) => streams(m.base, m.sessions, m.n, m.events, m.rate, m.latency).then((delays) => ({ delays })),
  /** `n` JSON calls sent at `rate`/s whatever the answers do: each round trip (µs). */
  async jsonPaced(m: Work) {
    const times: number[] = [];
    const start = process.hrtime.bigint();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < m.n; i++) {
      const wait = Number(start + BigInt(Math.round((i * 1e9) / m.rate)) - process.hrtime.bigint()) / 1e6;
      if (wait >= 1) await sleep(wait);
      const sent = process.hrtime.bigint();
      const call = rpc('tools/call', { name: 'json', arguments: {} });
      pending.push(
        ask(m.base, call, m.sessions[i % m.sessions.length]).then(
          () => void times.push(Number(process.hrtime.bigint() - sent) / 1000),
        ),
      );
    }
    await Promise.all(pending);
    return { times };
  },
  /** `n` task-augmented tools/call per session: each session's task ids. */
  async tasks(m: Work) {
    const tasks: Record<string, string[]> = {};
    const call = () =>
      rpc('tools/call', { name: 'research', arguments: {}, [S.TaskField.TASK]: { [S.TaskField.TTL]: 3_600_000 } });
    for (const s of m.sessions)
      for (let i = 0; i < m.n; i++) {
        const text = await ask(m.base, call(), s);
        (tasks[s] ??= []).push((JSON.parse(text) as { result: { task: { taskId: string } } }).result.task.taskId);
      }
    return { tasks };
  },
  /** `n` tasks/get, one worker per session, each polling its session's tasks in turn. */
  poll: (m: Work) =>
    workers(m.sessions, m.n, async (s, i) => {
      const ids = m.tasks[s]!;
      await ask(m.base, rpc(S.TaskMethod.GET, { [S.TaskField.TASK_ID]: ids[i % ids.length] }), s);
    }),
  close: async (m: Work) => {
    for (const s of m.sessions) await del(m.base, s);
  },
  /** `n` sessions each holding one SSE stream open (once its first event arrived). */
  async hold(m: Work) {
    let left = m.n;
    await pool(Math.min(64, left), async () => {
      while (left-- > 0) {
        const [session] = await open(m.base, 1);
        const res = await send(m.base, 'POST', rpc('tools/call', { name: 'hold', arguments: {} }), session);
        await new Promise<void>((first) => holding.push({ session: session!, ended: read(res, () => first()) }));
      }
    });
  },
  /** DELETE every held session, wait for each stream's end, drop every idle connection. */
  async release(m: Work) {
    const all = holding.splice(0);
    await pool(Math.min(64, all.length), async () => {
      for (let h; (h = all.pop());) await Promise.all([del(m.base, h.session), h.ended]);
    });
    freshConnections();
  },
};

// --- A part in its own process ---

const role = process.argv[2];
if (process.send && role === 'upstream') serve({}, { url: await startUpstream() });
else if (process.send && role === 'client') serve(clientOps);
else if (process.send && (role === 'gateway' || role === 'gateway-nodetector' || role === 'bare')) {
  const p = await startProxy(role, process.argv[3]!, Number(process.argv[4] ?? 100_000));
  const g = p.gateway;
  const sum = (series: string) => (g?.detector ? metricSum(g, series) : Promise.resolve(0));
  const ops = {
    stats: () => ({ sessions: g?.stats().sessions ?? 0 }),
    operations: async () => ({ observed: await sum(`${S.METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS}_count{`) }),
    /** The detector's live tasks, the polls it counted and recorded on the tasks of `ids`, its findings. */
    async tasks(m: { ids: string[] }) {
      const d = g!.detector!.detector;
      let recorded = 0;
      for (const service of d.liveTasksByService().keys())
        for (const id of m.ids) recorded += d.taskTimeline(service, id)?.polls.total ?? 0;
      const findings = g!.detector!.findings().length;
      return { live: d.stats().tasks, polls: await sum(`${S.METRIC_TASK_POLLS_TOTAL}{`), recorded, findings };
    },
  };
  serve(ops, { url: p.url }, () => p.close());
}
