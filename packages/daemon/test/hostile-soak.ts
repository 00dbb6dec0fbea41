/**
 * Soak: a spawned `resumewatch serve` at default options under a bounded hostile run, recording its RSS
 * and how long /healthz takes to answer (docs/reliability.md). Not part of any test suite; run it on a
 * quiet machine:
 *
 *   node --import tsx test/hostile-soak.ts [seconds=60] [rounds=1000]
 *
 * Every round sends, next to healthy seed-failure traffic: the 11-byte negative-length protobuf body
 * (HTTP and gRPC), 30 spans with unique 1 MiB session ids (gzip), findings with 600 KiB ids, services
 * named by 1 MiB, a 16 M-level "[" JSON bomb, 300 connections each holding an 8 MiB body minus its last
 * byte, 200 unfinished gRPC streams, requests without the token; stdout is never read. It stops after
 * `seconds` or `rounds`, whichever comes first.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect as h2connect, constants as h2, type ClientHttp2Session } from 'node:http2';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { METRIC_FINDINGS_DROPPED_TOTAL, METRIC_REQUESTS_SHED_TOTAL } from '@resumewatch/semconv';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { seedScenario, terminal } from '../../detector/test/helpers/spans.js';

const SECONDS = Math.min(600, Number(process.argv[2] ?? 60));
const ROUNDS = Math.min(10_000, Number(process.argv[3] ?? 1000));
const TOKEN = 'soak';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const MIB = 1024 * 1024;

const child = spawn(
  process.execPath,
  [join(import.meta.dirname, '../dist/cli.js'), 'serve', '--port', '0', '--grpc-port', '0', '--metrics-port', '0'],
  // stdout is a pipe nobody reads: findings must be dropped and counted, not buffered.
  { env: { ...process.env, RESUMEWATCH_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] },
);
let stderr = '';
child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
for (const until = Date.now() + 10_000; !/metrics on/.test(stderr) && Date.now() < until;) await sleep(20);
const port = (re: RegExp) => Number(re.exec(stderr)![1]);
const [httpPort, grpcPort, metricsPort] = [/:(\d+)\/v1\/traces/, /gRPC on [\d.]+:(\d+)/, /:(\d+)\/metrics/].map(
  port,
) as [number, number, number];
const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) / 1024;

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
  const socket = connect(httpPort, '127.0.0.1').on('error', () => undefined);
  let answered = '';
  socket.on('data', (d: Buffer) => (answered ||= d.toString('latin1', 0, 12)));
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  socket.write(
    `POST /v1/traces HTTP/1.1\r\nhost: 127.0.0.1:${httpPort}\r\ncontent-type: application/json\r\nauthorization: Bearer ${TOKEN}\r\ncontent-length: ${bytes}\r\n\r\n`,
  );
  const chunk = Buffer.alloc(64 * 1024, ' ');
  for (let sent = 0; sent < bytes - 1 && !socket.destroyed && !answered; sent += chunk.length)
    if (!socket.write(chunk.subarray(0, Math.min(chunk.length, bytes - 1 - sent))))
      await Promise.race([new Promise((r) => socket.once('drain', r)), closed, sleep(2000)]);
  await Promise.race([closed, sleep(holdMs)]);
  count(answered ? `held ${answered.slice(9, 12)}` : 'held, unanswered');
  socket.destroy();
}

/** A gRPC Export call on `session` that sends `data`; `ended` when it closes, counted under `what` and its status. */
function grpcCall(session: ClientHttp2Session, what: string, data: Buffer, end: boolean): Promise<void> {
  const s = session.request({
    [h2.HTTP2_HEADER_METHOD]: 'POST',
    [h2.HTTP2_HEADER_PATH]: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
    [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
    te: 'trailers',
    ...AUTH,
  });
  let status: unknown;
  s.on('response', (h) => (status ??= h['grpc-status']));
  s.on('trailers', (h) => (status ??= h['grpc-status']));
  s.on('error', () => undefined);
  if (end) s.end(data);
  else s.write(data);
  s.resume();
  return new Promise((r) => s.on('close', () => r(count(`${what} ${String(status ?? 'unanswered')}`))));
}
const grpcSession = () => h2connect(`http://127.0.0.1:${grpcPort}`).on('error', () => undefined);

/** `streams` gRPC calls, 10 to a connection, that send a prefix declaring 4 MiB and 64 KiB of it, then nothing. */
async function unfinishedGrpc(streams: number, holdMs: number): Promise<void> {
  const sessions = Array.from({ length: Math.ceil(streams / 10) }, grpcSession);
  const stalled = Buffer.concat([Buffer.from([0, 0, 0x40, 0, 0]), Buffer.alloc(64 * 1024)]);
  const done = Array.from({ length: streams }, (_, i) =>
    grpcCall(sessions[(i / 10) | 0]!, 'grpc stalled', stalled, false),
  );
  await Promise.race([Promise.all(done), sleep(holdMs)]);
  for (const session of sessions) session.destroy();
  await Promise.all(done);
}
async function grpcExport(body: Buffer): Promise<void> {
  const session = grpcSession();
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  await grpcCall(session, 'grpc', Buffer.concat([prefix, body]), true);
  session.destroy();
}

const negative = Buffer.from([0x12, 0xf5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
const bomb = gzipSync(Buffer.alloc(16 * MIB, '['));
const gzipped = (request: object) => post(gzipSync(JSON.stringify(request)), { 'content-encoding': 'gzip' });
const scrape = (path: string) =>
  fetch(`http://127.0.0.1:${metricsPort}${path}`, { headers: AUTH }).then(
    (r) => (count(`${path.slice(1)} ${r.status}`), r.arrayBuffer()),
  );

async function hostileRound(round: number): Promise<void> {
  const now = Date.now();
  const seeds = (n: number, session: (i: number) => string) =>
    Array.from({ length: n }, (_, i) => seedScenario({ session: session(i), request: i }, 3, now)).flat();
  const healthy = (phase: string) =>
    Array.from({ length: 4 }, (_, i) =>
      post(JSON.stringify(otlpJson(seeds(1, () => `healthy-${round}-${phase}-${i}`)))),
    );
  const longIds = Array.from({ length: 30 }, (_, i) =>
    terminal({ session: `${round}-${i}-`.padEnd(MIB, 'x'), request: i }, now, 'A'),
  );
  // Phase 1: the bodies that took serve down, next to healthy traffic.
  await Promise.all([
    post(negative, { 'content-type': 'application/x-protobuf' }),
    grpcExport(negative),
    gzipped(otlpJson(longIds)),
    gzipped(otlpJson(seeds(4, (i) => `${round}-${i}-`.padEnd(600 * 1024, 'f')))),
    gzipped(otlpJson([terminal({ session: `svc-${round}`, request: 1 }, now, 'A')], `svc-${round}-`.padEnd(MIB, 'n'))),
    post(bomb, { 'content-encoding': 'gzip' }),
    post('{}', { authorization: 'Bearer wrong' }),
    scrape('/findings'),
    scrape('/metrics'),
    ...healthy('a'),
    // 1,200 findings (about 600 KB) for the stdout nobody reads.
    post(JSON.stringify(otlpJson(seeds(300, (i) => `many-${round}-${i}`)))),
  ]);
  // Phase 2: memory held open: bodies minus their last byte and unfinished gRPC streams fill the budget.
  await Promise.all([
    ...Array.from({ length: 300 }, () => holdBody(8 * MIB, 3000)),
    unfinishedGrpc(200, 3000),
    ...healthy('b'),
  ]);
}

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMiB())), 200);
// The prober is its own process: the load generator's own work (gzip, JSON) must not count as serve's latency.
const PROBE = `
  for (;;) {
    const t = performance.now();
    try {
      const res = await fetch(process.argv[1], { signal: AbortSignal.timeout(1000) });
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

const started = Date.now();
const rssByRound: number[] = [];
while (Date.now() - started < SECONDS * 1000 && rssByRound.length < ROUNDS) {
  await hostileRound(rssByRound.length);
  rssByRound.push(rssMiB());
}
probe.kill();
clearInterval(sampler);
const lines = probeOut.trim().split('\n');
const healthMs = lines
  .map(Number)
  .filter((ms) => Number.isFinite(ms) && ms < 1000)
  .sort((a, b) => a - b);
const healthErrors = new Set(lines.filter((l) => !(Number(l) < 1000)));
const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { headers: AUTH })).text();
const metric = (name: string) => `${name} ${new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1] ?? '?'}`;
// The reader resumes: serve then drains what waits for stdout and exits (a write a stalled pipe never
// takes would keep any Node process alive).
child.stdout.resume();
child.kill('SIGTERM');
const exitCode = await Promise.race([
  once(child),
  sleep(15_000).then(() => (child.kill('SIGKILL'), 'none within 15 s (killed)')),
]);
const answers = [...statuses].sort().map(([k, v]) => `${k}: ${v}`);
console.log(`soak: ${rssByRound.length} hostile rounds in ${((Date.now() - started) / 1000).toFixed(0)} s against serve at default options
  RSS: peak ${peakRss.toFixed(0)} MiB; after each round ${rssByRound.map((r) => r.toFixed(0)).join(', ')} MiB
  /healthz: ${healthMs.length} answers, median ${healthMs[healthMs.length >> 1]?.toFixed(1)} ms, max ${healthMs.at(-1)?.toFixed(1)} ms, ${lines.length - healthMs.length} failures (over 1 s or not 200) ${[...healthErrors].join(' ')}
  answers: ${answers.join(', ')}
  ${metric(METRIC_REQUESTS_SHED_TOTAL)}, ${metric(METRIC_FINDINGS_DROPPED_TOTAL)}
  exit on SIGTERM: ${exitCode}`);

function once(p: typeof child): Promise<number | null> {
  return new Promise((r) => p.on('exit', (c) => r(c)));
}
