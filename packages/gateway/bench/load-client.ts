/**
 * The benchmark's load client, in its own process: MCP Streamable HTTP requests over node:http (one
 * keep-alive agent), to whichever base URL the orchestrator names (a proxy, or the upstream
 * directly). Answers `{ seq, op, ... }` messages over IPC with `{ seq, ... }`:
 *
 * - `open` (`base`, `n`, `version`): n sessions (initialize, then notifications/initialized) of protocol
 *   `version` (2025-06-18 unless said); their ids.
 * - `json` (`base`, `sessions`, `requests`): tools/call with a JSON answer, one worker per session.
 * - `sse` (`base`, `sessions`, `streams`, `events`, `rate`, `latency`): tools/call answered by
 *   an SSE stream of `events` progress notifications and the result, one worker per session; with
 *   `latency`, each progress event's delay (µs) from the upstream's write to its arrival here.
 * - `jsonPaced` (`base`, `sessions`, `requests`, `rate`): tools/call sent at `rate` per second
 *   whatever the answers do; each request's round trip (µs).
 * - `tasks` (`base`, `sessions`, `n`, `ttl`, `pollInterval`): n task-augmented tools/call per session
 *   (2025-11-25's `params.task {ttl}`); each session's task ids, from the handles.
 * - `poll` (`base`, `sessions`, `tasks`, `requests`): tasks/get, one worker per session, each polling
 *   its session's tasks in turn.
 * - `close` (`base`, `sessions`): DELETE each session.
 * - `hold` (`base`, `n`): n sessions, each with one SSE stream the upstream keeps open (answered once
 *   its first event arrived); `release`: DELETE them all, wait for each held stream to end with its
 *   result, then drop every idle connection.
 */
import { Agent, request, type IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { TaskField, TaskMethod } from '@resumewatch/semconv';

let agent = new Agent({ keepAlive: true, maxSockets: Infinity });
let nextId = 1;
/** Each session's protocol version, sent in its requests' header. */
const versionOf = new Map<string, string>();

interface Sent {
  status: number;
  session: string | undefined;
  res: IncomingMessage;
}

function post(base: string, body: string, session: string | undefined): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/mcp`, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': Buffer.byteLength(body),
        ...(session
          ? { 'mcp-session-id': session, 'mcp-protocol-version': versionOf.get(session) ?? '2025-06-18' }
          : {}),
      },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      const sid = res.headers['mcp-session-id'];
      resolve({ status: res.statusCode ?? 0, session: typeof sid === 'string' ? sid : undefined, res });
    });
    req.end(body);
  });
}

function drain(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (text += c));
    res.once('end', () => resolve(text));
    res.once('error', reject);
  });
}

function del(base: string, session: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/mcp`, {
      method: 'DELETE',
      agent,
      headers: { 'mcp-session-id': session, 'mcp-protocol-version': versionOf.get(session) ?? '2025-06-18' },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`DELETE: ${res.statusCode}`))));
    });
    req.end();
  });
}

const call = (tool: string, args: object = {}): string =>
  JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: tool, arguments: args } });

/** A tools/call that asks for a task (2025-11-25). */
const taskCall = (ttl: number, pollInterval: number): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: nextId++,
    method: 'tools/call',
    params: { name: 'research', arguments: { pollInterval }, [TaskField.TASK]: { [TaskField.TTL]: ttl } },
  });
const poll = (taskId: string): string =>
  JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: TaskMethod.GET, params: { [TaskField.TASK_ID]: taskId } });

async function openSession(base: string, version = '2025-06-18'): Promise<string> {
  const init = await post(
    base,
    JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } },
    }),
    undefined,
  );
  const text = await drain(init.res);
  if (init.status !== 200 || !init.session) throw new Error(`initialize via ${base}: ${init.status} ${text}`);
  versionOf.set(init.session, version);
  const note = await post(base, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), init.session);
  await drain(note.res);
  return init.session;
}

/** Reads an SSE body; calls `onEvent` with each event block and the time its chunk arrived. */
function readSse(res: IncomingMessage, onEvent: (block: string, at: bigint) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let events = 0;
    res.setEncoding('latin1');
    res.on('data', (chunk: string) => {
      const at = process.hrtime.bigint();
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        onEvent(buffer.slice(0, end), at);
        buffer = buffer.slice(end + 2);
        events++;
      }
    });
    res.once('end', () => resolve(events));
    res.once('error', reject);
    res.once('aborted', () => reject(new Error('stream aborted')));
  });
}

const MESSAGE = '"message":"';

async function runWorkers(sessions: string[], total: number, work: (session: string) => Promise<void>): Promise<void> {
  let left = total;
  await Promise.all(
    sessions.map(async (s) => {
      while (left > 0) {
        left--;
        await work(s);
      }
    }),
  );
}

const holding: { session: string; ended: Promise<number> }[] = [];

const ops: Record<string, (m: Record<string, unknown>) => Promise<object>> = {
  async open(m) {
    const sessions: string[] = [];
    for (let i = 0; i < (m.n as number); i++)
      sessions.push(await openSession(m.base as string, m.version as string | undefined));
    return { sessions };
  },
  async json(m) {
    const base = m.base as string;
    await runWorkers(m.sessions as string[], m.requests as number, async (s) => {
      const r = await post(base, call('json'), s);
      const text = await drain(r.res);
      if (r.status !== 200 || !text.includes('"result"')) throw new Error(`json call: ${r.status} ${text}`);
    });
    return {};
  },
  async sse(m) {
    const base = m.base as string;
    const events = m.events as number;
    const delays: number[] = [];
    const latency = m.latency === true;
    await runWorkers(m.sessions as string[], m.streams as number, async (s) => {
      const r = await post(base, call('stream', { events, rate: m.rate }), s);
      if (r.status !== 200) throw new Error(`stream call: ${r.status}`);
      const got = await readSse(r.res, (block, at) => {
        if (!latency) return;
        const i = block.indexOf(MESSAGE);
        if (i < 0) return;
        const sent = BigInt(block.slice(i + MESSAGE.length, block.indexOf('"', i + MESSAGE.length)));
        delays.push(Number(at - sent) / 1000);
      });
      if (got !== events + 1) throw new Error(`stream: ${got} events, expected ${events + 1}`);
    });
    return { delays };
  },
  async tasks(m) {
    const tasks: Record<string, string[]> = {};
    for (const s of m.sessions as string[]) {
      const ids: string[] = (tasks[s] = []);
      for (let i = 0; i < (m.n as number); i++) {
        const r = await post(m.base as string, taskCall(m.ttl as number, m.pollInterval as number), s);
        const text = await drain(r.res);
        const id = (JSON.parse(text) as { result?: { task?: { taskId?: string } } }).result?.task?.taskId;
        if (r.status !== 200 || id === undefined) throw new Error(`task call: ${r.status} ${text}`);
        ids.push(id);
      }
    }
    return { tasks };
  },
  async poll(m) {
    const base = m.base as string;
    const tasks = m.tasks as Record<string, string[]>;
    const turn = new Map<string, number>();
    await runWorkers(m.sessions as string[], m.requests as number, async (s) => {
      const ids = tasks[s]!;
      const i = turn.get(s) ?? 0;
      turn.set(s, i + 1);
      const r = await post(base, poll(ids[i % ids.length]!), s);
      const text = await drain(r.res);
      if (r.status !== 200 || !text.includes('"result"')) throw new Error(`tasks/get: ${r.status} ${text}`);
    });
    return {};
  },
  async jsonPaced(m) {
    const base = m.base as string;
    const sessions = m.sessions as string[];
    const requests = m.requests as number;
    const gapNs = 1e9 / (m.rate as number);
    const times: number[] = [];
    const pending: Promise<void>[] = [];
    const start = process.hrtime.bigint();
    for (let i = 0; i < requests; i++) {
      const due = start + BigInt(Math.round(i * gapNs));
      const wait = Number(due - process.hrtime.bigint()) / 1e6;
      if (wait >= 1) await sleep(wait);
      const sent = process.hrtime.bigint();
      pending.push(
        post(base, call('json'), sessions[i % sessions.length]).then(async (r) => {
          await drain(r.res);
          if (r.status !== 200) throw new Error(`json call: ${r.status}`);
          times.push(Number(process.hrtime.bigint() - sent) / 1000);
        }),
      );
    }
    await Promise.all(pending);
    return { times };
  },
  async close(m) {
    for (const s of m.sessions as string[]) {
      await del(m.base as string, s);
      versionOf.delete(s);
    }
    return {};
  },
  async hold(m) {
    const base = m.base as string;
    const n = m.n as number;
    let next = 0;
    // At most 64 being set up at once: an open stream is what is measured, not a burst of connects.
    await Promise.all(
      Array.from({ length: Math.min(64, n) }, async () => {
        while (next < n) {
          next++;
          const session = await openSession(base);
          const r = await post(base, call('hold'), session);
          if (r.status !== 200) throw new Error(`hold call via ${base}: ${r.status} ${await drain(r.res)}`);
          let opened!: () => void;
          const first = new Promise<void>((resolve) => (opened = resolve));
          const ended = readSse(r.res, () => opened());
          ended.catch(() => undefined);
          holding.push({ session, ended });
          await first;
        }
      }),
    );
    return { opened: holding.length };
  },
  async release(m) {
    const base = m.base as string;
    const all = holding.splice(0);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(64, all.length) }, async () => {
        while (next < all.length) {
          const h = all[next++]!;
          await del(base, h.session);
          const events = await h.ended;
          if (events !== 2) throw new Error(`held stream ended with ${events} events, expected 2`);
        }
      }),
    );
    // No idle connection to the proxy stays open: the proxy's heap is read without them.
    agent.destroy();
    agent = new Agent({ keepAlive: true, maxSockets: Infinity });
    return { released: all.length };
  },
};

process.on('message', (m: { seq: number; op: string } & Record<string, unknown>) => {
  const op = ops[m.op];
  if (!op) throw new Error(`load-client: unknown op ${m.op}`);
  op(m).then(
    (reply) => process.send!({ seq: m.seq, ...reply }),
    (e: unknown) => process.send!({ seq: m.seq, error: String((e as Error).stack ?? e) }),
  );
});
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
