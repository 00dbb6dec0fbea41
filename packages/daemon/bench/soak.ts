/**
 * Soak: a spawned `resumewatch serve` at default options under a bounded hostile run, recording its RSS
 * and how long /healthz takes to answer. Not part of any test suite; run it on a quiet machine:
 *
 *   node --import tsx bench/soak.ts [seconds=60] [rounds=1000]
 *
 * Every round sends, concurrently with healthy seed-failure traffic: the 11-byte negative-length protobuf
 * body (HTTP and gRPC), 30 spans with unique 1 MiB session ids (gzip), findings with 600 KiB ids, services
 * named by 1 MiB, a 16 M-level "[" JSON bomb, 300 connections each holding an 8 MiB body minus its last
 * byte, 200 unfinished gRPC streams, requests without the token; stdout is never read. It stops after
 * `seconds` or `rounds`, whichever comes first, and prints the figures of docs/reliability.md.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect as h2connect, constants as h2 } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { METRIC_FINDINGS_DROPPED_TOTAL, METRIC_REQUESTS_SHED_TOTAL } from '@resumewatch/semconv';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { seedScenario, terminal } from '../../detector/test/helpers/spans.js';

const SECONDS = Math.min(600, Number(process.argv[2] ?? 60));
const ROUNDS = Math.min(10_000, Number(process.argv[3] ?? 1000));
const TOKEN = 'soak';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const MIB = 1024 * 1024;
const EXPORT = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
const CLI = join(import.meta.dirname, '../dist/cli.js');

const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--grpc-port', '0', '--metrics-port', '0'], {
  env: { ...process.env, RESUMEWATCH_TOKEN: TOKEN },
  // stdout is a pipe nobody reads: findings must be dropped and counted, not buffered.
  stdio: ['ignore', 'pipe', 'pipe'],
});
let stderr = '';
child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
const until = Date.now() + 10_000;
while (!/metrics on/.test(stderr) && Date.now() < until) await sleep(20);
const httpPort = Number(/127\.0\.0\.1:(\d+)\/v1\/traces/.exec(stderr)![1]);
const grpcPort = Number(/OTLP\/gRPC on 127\.0\.0\.1:(\d+)/.exec(stderr)![1]);
const metricsPort = Number(/127\.0\.0\.1:(\d+)\/metrics/.exec(stderr)![1]);

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function rssMiB(): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const statuses = new Map<string, number>();
const count = (k: string): void => void statuses.set(k, (statuses.get(k) ?? 0) + 1);

async function post(body: Buffer | string, headers: Record<string, string> = {}): Promise<void> {
  try {
    const res = await fetch(`http://127.0.0.1:${httpPort}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH, ...headers },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    await res.arrayBuffer();
    count(`http ${res.status}`);
  } catch (e) {
    count(`http error ${(e as Error).name}`);
  }
}

/** A connection that sends `bytes - 1` of a declared `bytes`-long body, with backpressure, then holds. */
async function holdBody(bytes: number, holdMs: number): Promise<void> {
  const socket: Socket = connect(httpPort, '127.0.0.1');
  socket.on('error', () => undefined);
  let answered = '';
  socket.on('data', (d: Buffer) => (answered ||= d.toString('latin1', 0, 12)));
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  socket.write(
    `POST /v1/traces HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nauthorization: Bearer ${TOKEN}\r\ncontent-length: ${bytes}\r\n\r\n`,
  );
  const chunk = Buffer.alloc(64 * 1024, ' ');
  let sent = 0;
  while (sent < bytes - 1 && !socket.destroyed && !answered) {
    const n = Math.min(chunk.length, bytes - 1 - sent);
    if (!socket.write(n === chunk.length ? chunk : chunk.subarray(0, n)))
      await Promise.race([new Promise((r) => socket.once('drain', r)), closed, sleep(2000)]);
    sent += n;
  }
  await Promise.race([closed, sleep(holdMs)]);
  count(answered ? `held ${answered.slice(9, 12)}` : 'held, unanswered');
  socket.destroy();
}

/** `streams` gRPC calls, 10 to a connection, that send a prefix declaring 4 MiB and 64 KiB of it, then nothing. */
async function unfinishedGrpc(streams: number, holdMs: number): Promise<void> {
  const done: Promise<void>[] = [];
  const sessions = [];
  for (let i = 0; i < streams; i++) {
    if (i % 10 === 0) {
      const session = h2connect(`http://127.0.0.1:${grpcPort}`);
      session.on('error', () => undefined);
      sessions.push(session);
    }
    const s = sessions[sessions.length - 1]!.request({
      [h2.HTTP2_HEADER_METHOD]: 'POST',
      [h2.HTTP2_HEADER_PATH]: EXPORT,
      [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
      te: 'trailers',
      ...AUTH,
    });
    s.on('error', () => undefined);
    s.write(Buffer.concat([Buffer.from([0, 0, 0x40, 0, 0]), Buffer.alloc(64 * 1024)]));
    done.push(
      new Promise((r) => {
        let status: unknown;
        s.on('response', (h) => (status ??= h['grpc-status']));
        s.on('trailers', (h) => (status ??= h['grpc-status']));
        s.on('close', () => {
          count(`grpc stalled ${status === undefined ? 'unanswered' : `status ${String(status)}`}`);
          r();
        });
        s.resume();
      }),
    );
  }
  await Promise.race([Promise.all(done), sleep(holdMs)]);
  for (const session of sessions) session.destroy();
  await Promise.all(done);
}

function grpcExport(body: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const session = h2connect(`http://127.0.0.1:${grpcPort}`);
    session.on('error', () => undefined);
    const s = session.request({
      [h2.HTTP2_HEADER_METHOD]: 'POST',
      [h2.HTTP2_HEADER_PATH]: EXPORT,
      [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
      te: 'trailers',
      ...AUTH,
    });
    let status: unknown;
    s.on('response', (h) => (status ??= h['grpc-status']));
    s.on('trailers', (h) => (status ??= h['grpc-status']));
    s.on('error', () => undefined);
    s.on('close', () => {
      count(`grpc ${String(status)}`);
      session.destroy();
      resolve();
    });
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(body.length, 1);
    s.end(Buffer.concat([prefix, body]));
    s.resume();
  });
}

const negative = Buffer.from([0x12, 0xf5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
const bomb = gzipSync(Buffer.alloc(16 * MIB, '['));

async function hostileRound(round: number): Promise<void> {
  const longIds = Array.from({ length: 30 }, (_, i) =>
    terminal({ session: `${round}-${i}-`.padEnd(MIB, 'x'), request: i }, Date.now(), 'A'),
  );
  const longFindings = Array.from({ length: 4 }, (_, i) =>
    seedScenario({ session: `${round}-${i}-`.padEnd(600 * 1024, 'f'), request: i }, 3, Date.now()),
  ).flat();
  const longService = `svc-${round}-`.padEnd(MIB, 'n');
  const healthy = (phase: string) =>
    Array.from({ length: 4 }, (_, i) =>
      post(
        JSON.stringify(
          otlpJson(seedScenario({ session: `healthy-${round}-${phase}-${i}`, request: i }, 3, Date.now())),
        ),
      ),
    );
  // Phase 1: the bodies that took serve down, next to healthy traffic.
  await Promise.all([
    post(negative, { 'content-type': 'application/x-protobuf' }),
    grpcExport(negative),
    post(gzipSync(JSON.stringify(otlpJson(longIds))), { 'content-encoding': 'gzip' }),
    post(gzipSync(JSON.stringify(otlpJson(longFindings))), { 'content-encoding': 'gzip' }),
    post(
      gzipSync(
        JSON.stringify(otlpJson([terminal({ session: `svc-${round}`, request: 1 }, Date.now(), 'A')], longService)),
      ),
      { 'content-encoding': 'gzip' },
    ),
    post(bomb, { 'content-encoding': 'gzip' }),
    post('{}', { authorization: 'Bearer wrong' }),
    fetch(`http://127.0.0.1:${metricsPort}/findings`, { headers: AUTH }).then(
      (r) => (count(`findings ${r.status}`), r.arrayBuffer()),
    ),
    fetch(`http://127.0.0.1:${metricsPort}/metrics`, { headers: AUTH }).then(
      (r) => (count(`metrics ${r.status}`), r.arrayBuffer()),
    ),
    ...healthy('a'),
    // 1,200 findings (about 600 KB) for the stdout nobody reads.
    post(
      JSON.stringify(
        otlpJson(
          Array.from({ length: 300 }, (_, i) =>
            seedScenario({ session: `many-${round}-${i}`, request: i }, 3, Date.now()),
          ).flat(),
        ),
      ),
    ),
  ]);
  // Phase 2: memory held open: bodies minus their last byte and unfinished gRPC streams fill the budget.
  await Promise.all([
    ...Array.from({ length: 300 }, () => holdBody(8 * MIB, 3000)),
    unfinishedGrpc(200, 3000),
    ...healthy('b'),
  ]);
}

let peakRss = 0;
const healthMs: number[] = [];
let healthFailures = 0;
const healthErrors = new Set<string>();
const sampler = setInterval(() => {
  const rss = rssMiB();
  if (rss > peakRss) peakRss = rss;
}, 200);
// The prober is its own process: the load generator's own work (gzip, JSON) must not count as serve's latency.
const PROBE = `
  const url = process.argv[1];
  for (;;) {
    const t = performance.now();
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.text();
      console.log(res.status === 200 ? String(performance.now() - t) : 'status ' + res.status);
    } catch (e) {
      console.log(e.name);
    }
    await new Promise((r) => setTimeout(r, 250));
  }`;
const probe = spawn(process.execPath, ['--input-type=module', '-e', PROBE, `http://127.0.0.1:${metricsPort}/healthz`], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
let probeOut = '';
probe.stdout.on('data', (d: Buffer) => (probeOut += d.toString()));
const prober = async (): Promise<void> => {
  probe.kill();
  for (const line of probeOut.trim().split('\n')) {
    const ms = Number(line);
    if (Number.isFinite(ms) && ms < 1000) healthMs.push(ms);
    else {
      healthFailures++;
      healthErrors.add(line);
    }
  }
};

const started = Date.now();
let rounds = 0;
const rssByRound: number[] = [];
while (Date.now() - started < SECONDS * 1000 && rounds < ROUNDS) {
  await hostileRound(rounds++);
  rssByRound.push(rssMiB());
}
await prober();
clearInterval(sampler);
const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { headers: AUTH })).text();
const metric = (name: string): string => new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1] ?? '?';
// The reader resumes: serve then drains what waits for stdout and exits (a write a stalled pipe never
// takes would keep any Node process alive).
child.stdout.resume();
child.kill('SIGTERM');
const exitCode = await Promise.race([
  new Promise<number | null | string>((r) => child.on('exit', (c) => r(c))),
  sleep(15_000).then(() => {
    child.kill('SIGKILL');
    return 'none within 15 s (killed)';
  }),
]);
healthMs.sort((a, b) => a - b);
console.log(
  `soak: ${rounds} hostile rounds in ${((Date.now() - started) / 1000).toFixed(0)} s against serve at default options`,
);
console.log(
  `  RSS: peak ${peakRss.toFixed(0)} MiB; after each round ${rssByRound.map((r) => r.toFixed(0)).join(', ')} MiB`,
);
console.log(
  `  /healthz: ${healthMs.length} answers, median ${healthMs[healthMs.length >> 1]?.toFixed(1)} ms, max ${healthMs[healthMs.length - 1]?.toFixed(1)} ms, ${healthFailures} failures (over 1 s or not 200) ${[...healthErrors].join(' ')}`,
);
console.log(
  `  answers: ${[...statuses]
    .sort()
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ')}`,
);
console.log(
  `  ${METRIC_REQUESTS_SHED_TOTAL} ${metric(METRIC_REQUESTS_SHED_TOTAL)}, ${METRIC_FINDINGS_DROPPED_TOTAL} ${metric(METRIC_FINDINGS_DROPPED_TOTAL)}`,
);
console.log(`  exit on SIGTERM: ${exitCode}`);
