/**
 * One proxy of the benchmark in a process of its own, so that its CPU time (process.cpuUsage: every
 * thread of the process, user + system) and its heap are its own:
 *
 * - `gateway`: startGateway in front of the upstream, observing (or enforcing, with `--enforce`), the
 *   built-in detector on (metrics on a free port, findings written nowhere).
 * - `bare`: the least a Node reverse proxy does: node:http server → node:http client with a
 *   keep-alive agent, the request piped up, the response piped down (backpressure both ways),
 *   hop-by-hop headers dropped.
 * - `bare-undici`: the same with undici's Pool for the upstream (its `stream`).
 *
 * Sends `{ url }` over IPC once listening; answers `{ seq, op }` messages: `cpu` (process.cpuUsage),
 * `heap` (after full GCs: heap used without code space, plus array buffers; RSS), `stats` (the
 * gateway's observed sessions and open exchanges), `snapshot` (`path`: the heap after full GCs, as
 * `heap` answers, and a heap snapshot written there), `operations` (the requests its
 * mcp_server_operation_duration_seconds observed so far), `tasks` (its detector's live task records,
 * the polls resumewatch_task_polls_total counted, the polls recorded on the records of `ids`, and the
 * findings so far: tasks-poll.bench.ts), and `profileStart` / `profileStop` (V8's
 * sampling profiler through the inspector, over a phase only: cpu-parts.ts; the stop answers
 * `{ profile }`, the .cpuprofile's object).
 *
 *   node --expose-gc --import tsx bench/proxy-child.ts gateway|bare|bare-undici <upstream URL> [--enforce] [--max-streams n]
 */
import { Agent, createServer, request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { Session } from 'node:inspector/promises';
import { METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS, METRIC_TASK_POLLS_TOTAL } from '@resumewatch/semconv';
import { Pool } from 'undici';
import type { RunningGateway } from '../src/gateway.js';

const [kind, upstream] = process.argv.slice(2) as [string, string];
const enforce = process.argv.includes('--enforce');
const maxIndex = process.argv.indexOf('--max-streams');
const maxStreams = maxIndex > 0 ? Number(process.argv[maxIndex + 1]) : 100_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) if (!HOP_BY_HOP.has(name)) out[name] = headers[name];
  return out;
}

async function bareProxy(): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const server = createServer({ requestTimeout: 0 }, (req, res) => {
    const headers = endToEnd(req.headers);
    headers.host = target.host;
    const up = request({
      host: target.hostname,
      port: target.port,
      path: req.url,
      method: req.method,
      headers,
      agent,
    });
    up.once('response', (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.statusMessage, endToEnd(ur.headers));
      res.flushHeaders();
      ur.pipe(res);
      ur.once('error', () => res.destroy());
    });
    up.once('error', (e: NodeJS.ErrnoException) => {
      if (!res.headersSent)
        res.writeHead(502, { 'content-type': 'text/plain' }).end(`bare proxy: ${e.code ?? e.message}`);
      else res.destroy();
    });
    res.once('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}

/**
 * The same proxy with undici's pool for the upstream: the request body streamed up, the response
 * written down by the pool's `stream` (backpressure both ways), hop-by-hop headers dropped.
 */
async function bareUndiciProxy(): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(upstream);
  const pool = new Pool(target.origin, { connections: null, pipelining: 1 });
  const server = createServer({ requestTimeout: 0 }, (req, res) => {
    const method = req.method ?? 'GET';
    pool
      .stream(
        {
          path: req.url ?? '/',
          method: method as 'GET',
          headers: endToEnd(req.headers) as Record<string, string>,
          body: method === 'GET' || method === 'HEAD' ? null : req,
          signal: undefined,
        },
        ({ statusCode, headers }) => {
          res.writeHead(statusCode, endToEnd(headers as IncomingHttpHeaders));
          res.flushHeaders();
          return res;
        },
      )
      .catch((e: NodeJS.ErrnoException) => {
        if (!res.headersSent)
          res.writeHead(502, { 'content-type': 'text/plain' }).end(`bare proxy: ${e.code ?? e.message}`);
        else res.destroy();
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        void pool.destroy();
      }),
  };
}

let gateway: RunningGateway | undefined;
let proxy: { url: string; close(): Promise<void> };
if (kind === 'gateway') {
  // The gateway as it runs (its build: `pnpm bench` builds first), not its sources through tsx, whose
  // transform adds to each named closure a property of its own (time, and heap per open stream).
  // BENCH_GATEWAY_DIST: the build of another source tree (proxy.bench.ts's BENCH_BEFORE).
  const dist = process.env.BENCH_GATEWAY_DIST ?? '../dist';
  const { startGateway } = (await import(`${dist}/gateway.js`)) as typeof import('../src/gateway.js');
  gateway = await startGateway({
    upstream,
    port: 0,
    enforce,
    // The benchmark opens more than the defaults allow at once (10,000 of each): the caps are not what it measures.
    maxStreams,
    maxSessions: maxStreams,
    detector: { config: { metricsPort: 0 }, output: null },
  });
  proxy = { url: gateway.url, close: () => gateway!.close() };
} else if (kind === 'bare') {
  proxy = await bareProxy();
} else if (kind === 'bare-undici') {
  proxy = await bareUndiciProxy();
} else {
  throw new Error(`proxy-child: unknown kind ${kind}`);
}

/** The sum of a metric's series so far (`series`: the name and `{`, e.g. a histogram's `_count{`). */
async function metricSum(g: RunningGateway, series: string): Promise<number> {
  const { body } = await g.detector!.metrics.render(undefined);
  let n = 0;
  for (const line of body.split('\n')) if (line.startsWith(series)) n += Number(line.split(' ').at(-1));
  return n;
}
/** Observations of mcp_server_operation_duration_seconds so far: the sum of its _count series. */
const operationsObserved = (g: RunningGateway) =>
  metricSum(g, `${METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS}_count{`);

/** The detector's live task records, the polls counted and recorded on the records of `ids`, the findings. */
async function tasks(ids: string[]): Promise<object> {
  const embedded = gateway?.detector;
  if (!embedded) return { live: 0, polls: 0, recorded: 0, findings: 0 };
  const d = embedded.detector;
  let recorded = 0;
  for (const service of d.liveTasksByService().keys())
    for (const id of ids) recorded += d.taskTimeline(service, id)?.polls.total ?? 0;
  return {
    live: d.stats().tasks,
    polls: await metricSum(gateway!, `${METRIC_TASK_POLLS_TOTAL}{`),
    recorded,
    findings: embedded.findings().length,
  };
}

async function heap(): Promise<{ heap: number; rss: number }> {
  for (let i = 0; i < 4; i++) {
    await sleep(25);
    gc!();
  }
  const m = process.memoryUsage();
  const code = getHeapSpaceStatistics().find((s) => s.space_name === 'code_space')?.space_used_size ?? 0;
  return { heap: m.heapUsed - code + m.arrayBuffers, rss: m.rss };
}

// V8's sampling profiler over one phase of the benchmark (cpu-parts.ts), not the process's life.
let inspector: Session | undefined;
async function profileStart(intervalUs: number): Promise<object> {
  inspector ??= new Session();
  inspector.connect();
  await inspector.post('Profiler.enable');
  await inspector.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await inspector.post('Profiler.start');
  return {};
}
async function profileStop(): Promise<object> {
  const { profile } = await inspector!.post('Profiler.stop');
  await inspector!.post('Profiler.disable');
  inspector!.disconnect();
  return { profile };
}

process.on('message', (m: { seq: number; op: string }) => {
  void (async () => {
    let reply: object;
    if (m.op === 'cpu') reply = process.cpuUsage();
    else if (m.op === 'heap') reply = await heap();
    else if (m.op === 'snapshot') reply = { ...(await heap()), path: writeHeapSnapshot((m as { path?: string }).path) };
    else if (m.op === 'stats')
      reply = gateway ? { ...gateway.stats(), open: gateway.counts().open } : { sessions: 0, open: 0 };
    else if (m.op === 'operations') reply = { observed: gateway ? await operationsObserved(gateway) : 0 };
    else if (m.op === 'tasks') reply = await tasks((m as { ids?: string[] }).ids ?? []);
    else if (m.op === 'profileStart') reply = await profileStart((m as { intervalUs?: number }).intervalUs ?? 100);
    else if (m.op === 'profileStop') reply = await profileStop();
    else reply = { error: `unknown op ${m.op}` };
    process.send!({ seq: m.seq, ...reply });
  })();
});
process.on('disconnect', () => {
  // A clean exit, so that --cpu-prof (BENCH_PROF=1) writes its profile.
  void proxy.close().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
});
process.send!({ url: proxy.url });

// BENCH_LOOP=1: event-loop stalls and GC pauses over 20 ms, on stderr (what a latency figure's tail is).
if (process.env.BENCH_LOOP) {
  const { monitorEventLoopDelay, PerformanceObserver } = await import('node:perf_hooks');
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  setInterval(() => {
    if (loop.max > 20e6) process.stderr.write(`${kind}: event loop stalled ${(loop.max / 1e6).toFixed(0)} ms\n`);
    loop.reset();
  }, 1000).unref();
  new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      if (e.duration > 20)
        process.stderr.write(
          `${kind}: gc ${e.duration.toFixed(0)} ms (${JSON.stringify((e as { detail?: unknown }).detail)})\n`,
        );
  }).observe({ entryTypes: ['gc'] });
}
