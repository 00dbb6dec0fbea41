import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { ATTR_JSONRPC_REQUEST_ID, ATTR_MCP_SESSION_ID, ATTR_MCP_STREAM_ID, SPAN_REQUEST_TERMINAL } from '@resumewatch/semconv';
import { Detector, type SpanRecord } from '../src/index.js';
import { otlpBodies, workload } from './workload.js';

const which = new Set(process.argv.slice(2));
const all = which.size === 0;

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function benchCore(failEvery: number): void {
  // Two workloads with distinct sessions and span ids, alternated on one detector sized for one of them:
  // every round starts from a grown table and evicts the other workload's states, as a long-running
  // receiver does, and no span id of a round is still in the dedupe set.
  const REQUESTS = 100_000;
  const w = [workload(REQUESTS, 'a', failEvery), workload(REQUESTS, 'b', failEvery)];
  let findings = 0;
  const d = new Detector({ maxRequests: REQUESTS, onFinding: () => findings++ });
  const rates: number[] = [];
  for (let round = 0; round < 14; round++) {
    const spans = w[round & 1]!;
    findings = 0;
    const start = process.hrtime.bigint();
    for (let i = 0; i < spans.length; i++) d.ingest(spans[i]!);
    const s = Number(process.hrtime.bigint() - start) / 1e9;
    if (round >= 4) rates.push(spans.length / s);
  }
  rates.sort((a, b) => a - b);
  console.log(
    `core, 1 request in ${failEvery} failing: ${fmt(rates[rates.length >> 1]!)} spans/s median, ${fmt(rates[rates.length - 1]!)} best (10 rounds of ${fmt(w[0]!.length)} spans after 4 warm-up; ` +
      `${fmt(findings)} findings a round; ${fmt(d.stats().evictions)} evictions)`,
  );
}

async function benchServe(): Promise<void> {
  const ROUNDS = 3;
  const rounds = Array.from({ length: ROUNDS }, (_, i) => otlpBodies(workload(40_000, `serve${i}`), 512));
  const cli = join(import.meta.dirname, '../src/cli.ts');
  const child = spawn(process.execPath, [...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/sprof'] : []), '--import', 'tsx', cli, 'serve', '--port', '0', '--grpc-port', 'off', '--metrics-port', '0', '--max-requests', '1000000'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  while (!/v1\/traces/.test(stderr)) await new Promise((r) => setTimeout(r, 20));
  const port = Number(/:(\d+)\/v1\/traces/.exec(stderr)![1]);
  const CONNECTIONS = 4;
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const post = (body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/v1/traces', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  const serve: number[] = [];
  const parse: number[] = [];
  for (const bodies of rounds) {
    await post(bodies[0]!);
    const start = process.hrtime.bigint();
    let next = 1;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < bodies.length) await post(bodies[next++]!);
      }),
    );
    serve.push(((bodies.length - 1) * 512) / (Number(process.hrtime.bigint() - start) / 1e9));
    const parseStart = process.hrtime.bigint();
    for (const b of bodies) JSON.parse(b);
    parse.push((bodies.length * 512) / (Number(process.hrtime.bigint() - parseStart) / 1e9));
  }
  agent.destroy();
  child.kill('SIGTERM');
  const range = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
  console.log(
    `serve (OTLP/JSON over loopback, 512 spans a request, ${CONNECTIONS} connections, ${ROUNDS} rounds): ${range(serve)} spans/s; ` +
      `bare JSON.parse of the same bodies: ${range(parse)} spans/s (${(rounds[0]![0]!.length / 1024).toFixed(0)} KiB a body)`,
  );
}

function benchMemory(): void {
  const N = 1_000_000;
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  const used = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const before = used();
  const d = new Detector({ maxRequests: N });
  const attributes: Record<string, string | number> = {};
  const s: SpanRecord = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: '', name: SPAN_REQUEST_TERMINAL, kind: 1, startTimeUnixMs: 0, endTimeUnixMs: 0, attributes, service: 'bench' };
  for (let i = 0; i < N; i++) {
    attributes[ATTR_MCP_SESSION_ID] = randomUUID();
    attributes[ATTR_JSONRPC_REQUEST_ID] = i & 7;
    attributes[ATTR_MCP_STREAM_ID] = `stream-${i}`;
    s.spanId = i.toString(16).padStart(16, '0');
    s.startTimeUnixMs = s.endTimeUnixMs = 1_700_000_000_000 + i;
    d.ingest(s);
  }
  const after = used();
  const tracked = d.stats().tracked;
  console.log(`memory: ${((after - before) / tracked).toFixed(0)} bytes per tracked request at ${fmt(tracked)} tracked (heap + array buffers, after GC; includes the span-id dedupe set)`);
}

if (all || which.has('core')) {
  benchCore(10);
  benchCore(100);
}
if (all || which.has('memory')) benchMemory();
if (all || which.has('serve')) await benchServe();
