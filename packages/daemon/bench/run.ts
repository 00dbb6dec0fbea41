import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_SERVICE_NAME,
  SPAN_REQUEST_TERMINAL,
} from '@resumewatch/semconv';
import { figure } from '../../../bench/figure.js';
import { Detector, decodeJsonRequest, decodeProtobufRequest, type SpanRecord } from '@resumewatch/detector';
import { ExportTraceServiceRequest, otlpProtobufBodies, protobufOfJsonRequest } from './otlp-proto.js';
import { otlpBodies, workload } from '../../detector/test/helpers/workload.js';
import { mixedJsonBodies, mixedRequests } from '../../detector/test/helpers/app-spans.js';

/**
 * node --expose-gc --import tsx bench/run.ts [core] [core-dict] [memory] [serve] [serve-protobuf] [serve-mixed]
 *   [serve-mixed-protobuf] [decode] [--smoke]
 * serve-mixed, serve-mixed-protobuf: serve on a mixed stream (1 span in 10 MCP, the others an application's
 * HTTP, database and framework spans), against JSON.parse and protobufjs of the same bodies.
 * --smoke: tiny sizes, for the CI check that the benchmark starts and prints figures (not a measurement).
 */
const args = process.argv.slice(2);
const SMOKE = args.includes('--smoke');
const which = new Set(args.filter((a) => !a.startsWith('--')));
const all = which.size === 0;
const range = (xs: number[]): [number, number] => [Math.min(...xs), Math.max(...xs)];
/** The ratio of each round (a[i] / b[i]), in round order: the spread of a serve figure from round to round. */
const perRound = (a: number[], b: number[]): string => a.map((x, i) => (x / b[i]!).toFixed(3)).join(' ');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
function cpuSecondsOf(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
const CLOCK_TICKS = 100;

/** CPU seconds of each thread of a process so far, summed by thread name (Linux; empty elsewhere). */
function cpuSecondsByThread(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const label = tid === String(pid) ? `main (${name})` : name;
      out.set(label, (out.get(label) ?? 0) + (Number(f[11]) + Number(f[12])) / CLOCK_TICKS);
    }
  } catch {
    // Not Linux, or the process is gone.
  }
  return out;
}

/** With BENCH_THREADS=1: the serve process's CPU seconds per thread over the measured rounds, on stderr. */
function threadsReport(pid: number, before: Map<string, number>, label: string): void {
  if (!process.env.BENCH_THREADS) return;
  const after = cpuSecondsByThread(pid);
  const parts = [...after].map(([name, s]) => `${name} ${(s - (before.get(name) ?? 0)).toFixed(2)} s`);
  console.error(`${label}: serve's CPU by thread over the measured rounds: ${parts.join(', ')}`);
}

/** The benchmark's clients drop a keep-alive socket idle this long (serve's keep-alive timeout is 5 s). */
const IDLE_SOCKET_MS = 2_000;

/** Requests of the unmeasured round that warms a serve process up before its measured rounds. */
const WARM_UP_REQUESTS = SMOKE ? 100 : 20_000;

/** CPU seconds of this process (user + system) since `from`. */
function ownCpuSeconds(from: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(from);
  return Math.max(u.user + u.system, 1) / 1e6;
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/**
 * The same spans with null-prototype attribute records (Object.create(null), as a door may build them):
 * V8 keeps such objects in dictionary mode, where a lookup is one hash probe and a missing attribute
 * ends at once, while the `{}` records the doors build today go through megamorphic lookups that cost
 * 60 ns a present and about 200 ns a missing attribute on this machine (bench/run.ts core-dict).
 */
function withDictionaryAttributes(spans: SpanRecord[]): SpanRecord[] {
  return spans.map((s) => ({
    ...s,
    attributes: Object.assign(Object.create(null) as Record<string, never>, s.attributes),
  }));
}

function benchCore(failEvery: number, dictionary = false): void {
  // Two workloads with distinct sessions and span ids, alternated on one detector sized for one of them:
  // every round starts from a grown table and evicts the other workload's states, as a long-running
  // receiver does, and no span id of a round is still in the dedupe set.
  const REQUESTS = SMOKE ? 500 : 100_000;
  let w = [workload(REQUESTS, 'a', failEvery), workload(REQUESTS, 'b', failEvery)];
  if (dictionary) w = w.map(withDictionaryAttributes);
  let findings = 0;
  // In smoke mode the rounds are small enough for the dedupe set to remember every span: shrink it.
  const d = new Detector({
    maxRequests: REQUESTS,
    onFinding: () => findings++,
    ...(SMOKE ? { dedupeCapacity: 64 } : {}),
  });
  const rates: number[] = [];
  const ROUNDS = SMOKE ? 5 : 14;
  for (let round = 0; round < ROUNDS; round++) {
    const spans = w[round & 1]!;
    findings = 0;
    const start = process.hrtime.bigint();
    for (let i = 0; i < spans.length; i++) d.ingest(spans[i]!);
    const s = Number(process.hrtime.bigint() - start) / 1e9;
    if (round >= 4) rates.push(spans.length / s);
  }
  rates.sort((a, b) => a - b);
  const label = `core, 1 request in ${failEvery} failing${dictionary ? ', null-prototype attribute records' : ''}`;
  console.log(
    `${label}: ${fmt(rates[rates.length >> 1]!)} spans/s median, ${fmt(rates[rates.length - 1]!)} best (${rates.length} rounds of ${fmt(w[0]!.length)} spans after 4 warm-up; ` +
      `${fmt(findings)} findings a round; ${fmt(d.stats().evictions)} evictions)`,
  );
  figure({
    bench: 'detector',
    name: `${label} (median of rounds)`,
    value: median(rates),
    unit: 'spans/s',
    range: range(rates),
    target: failEvery >= 100 && !dictionary ? '2 M spans/s' : undefined,
    note: `${fmt(w[0]!.length)} spans a round, ${fmt(findings)} findings a round, every round evicts the previous one's ${fmt(REQUESTS)} states`,
  });
}

/** The spans of an OTLP/JSON body (for bodies of unequal sizes: the mixed streams' last body). */
function spansOfJson(body: string): number {
  let n = 0;
  decodeJsonRequest(body, () => n++);
  return n;
}

/** The spans of an OTLP/protobuf body. */
function spansOfProtobuf(body: Buffer): number {
  let n = 0;
  decodeProtobufRequest(body, () => n++);
  return n;
}

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/** The serve benchmark's OTLP/JSON bodies: the MCP workload, 512 spans a body. */
function mcpJsonRounds(): { rounds: string[][]; warm: string[] } {
  const ROUNDS = SMOKE ? 1 : 5;
  return {
    rounds: Array.from({ length: ROUNDS }, (_, i) => otlpBodies(workload(SMOKE ? 600 : 40_000, `serve${i}`), 512)),
    warm: otlpBodies(workload(WARM_UP_REQUESTS, 'servewarm'), 512),
  };
}

/**
 * A mixed stream: 9 spans in 10 an application's HTTP, database and framework spans
 * (auto-instrumentations-node's shapes, test/helpers/app-spans.ts), 1 in 10 the MCP workload's, 512 a
 * body, one service (`bench`) as an application's own exporter sends them.
 */
function mixedRounds<T>(make: (mcp: SpanRecord[], seed: number) => T[]): { rounds: T[][]; warm: T[] } {
  const ROUNDS = SMOKE ? 1 : 5;
  const requests = SMOKE ? 60 : 1_200;
  return {
    rounds: Array.from({ length: ROUNDS }, (_, i) => make(workload(requests, `mix${i}`), i + 1)),
    // A warm-up with about a third of the MCP spans of the MCP benchmarks' (and ten times as many spans in
    // all): the core's and the page's rarer paths (storms, findings) turn hot on the MCP spans only.
    warm: make(workload(SMOKE ? 20 : (WARM_UP_REQUESTS * 3) / 10, 'mixwarm'), 99),
  };
}

/**
 * `resumewatch serve` over loopback HTTP against JSON.parse of the same bodies, in alternating rounds:
 * by wall time and by the serve process's CPU time.
 */
async function benchServe(what: 'mcp' | 'mixed'): Promise<void> {
  const { rounds, warm } =
    what === 'mcp' ? mcpJsonRounds() : mixedRounds((mcp, seed) => mixedJsonBodies(mcp, { service: 'bench', seed }));
  const counts = rounds.map((bodies) => bodies.map(spansOfJson));
  const ROUNDS = rounds.length;
  const { child, port } = await startServe(false);
  const bare = await startBare('json');
  const CONNECTIONS = 4;
  // Idle sockets are dropped after 2 s, before serve's 5 s keep-alive timeout closes them: a socket reused
  // just as the server closes it fails its request ("socket hang up"), which a loaded machine's pauses
  // between rounds made happen.
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS, timeout: IDLE_SOCKET_MS });
  const postTo = (to: number, body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: to,
          path: '/v1/traces',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const post = (body: string) => postTo(port, body);
  const serve: number[] = [];
  const parse: number[] = [];
  const serveCpu: number[] = [];
  const parseCpu: number[] = [];
  const bareCpu: number[] = [];
  // One unmeasured round first: the serve process compiles its hot paths (on helper threads, counted in its
  // CPU time) during its first thousands of spans, which the built-in JSON.parse never has to.
  for (const body of warm) await post(body);
  for (const body of warm) await postTo(bare.port, body);
  const threads0 = cpuSecondsByThread(child.pid!);
  for (const [r, bodies] of rounds.entries()) {
    await post(bodies[0]!);
    const spans = sum(counts[r]!);
    const measured = spans - counts[r]![0]!;
    const start = process.hrtime.bigint();
    const cpu0 = cpuSecondsOf(child.pid!);
    let next = 1;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < bodies.length) await post(bodies[next++]!);
      }),
    );
    serve.push(measured / (Number(process.hrtime.bigint() - start) / 1e9));
    serveCpu.push(measured / Math.max(cpuSecondsOf(child.pid!) - cpu0, 1 / CLOCK_TICKS));
    const parseStart = process.hrtime.bigint();
    const parseCpu0 = process.cpuUsage();
    for (const b of bodies) JSON.parse(b);
    parse.push(spans / (Number(process.hrtime.bigint() - parseStart) / 1e9));
    parseCpu.push(spans / ownCpuSeconds(parseCpu0));
    // The same bodies into the bare receiver, the same way.
    await postTo(bare.port, bodies[0]!);
    const bare0 = cpuSecondsOf(bare.child.pid!);
    next = 1;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < bodies.length) await postTo(bare.port, bodies[next++]!);
      }),
    );
    bareCpu.push(measured / Math.max(cpuSecondsOf(bare.child.pid!) - bare0, 1 / CLOCK_TICKS));
  }
  const stream = what === 'mcp' ? 'MCP spans' : 'a mixed stream (1 span in 10 MCP, 9 HTTP, database, framework)';
  threadsReport(child.pid!, threads0, `serve OTLP/JSON, ${stream}`);
  agent.destroy();
  child.kill('SIGTERM');
  bare.child.kill('SIGTERM');
  const show = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
  console.log(
    `serve (OTLP/JSON over loopback, ${stream}, 512 spans a request, ${CONNECTIONS} connections, ${ROUNDS} rounds): ${show(serve)} spans/s; ` +
      `bare JSON.parse of the same bodies: ${show(parse)} spans/s (${(rounds[0]![0]!.length / 1024).toFixed(0)} KiB a body); ` +
      `ratio per round, wall ${perRound(serve, parse)}, CPU ${perRound(serveCpu, parseCpu)}`,
  );
  const name =
    what === 'mcp'
      ? 'serve, OTLP/JSON over loopback'
      : 'serve, mixed stream (1 span in 10 MCP), OTLP/JSON over loopback';
  figure({
    bench: 'detector',
    name: `${name}, 512 spans a request (median of rounds)`,
    value: median(serve),
    unit: 'spans/s',
    range: range(serve),
    reference: {
      name: 'bare JSON.parse of the same bodies',
      value: median(parse),
      unit: 'spans/s',
      range: range(parse),
    },
    ratio: median(serve.map((x, i) => x / parse[i]!)),
    target: what === 'mcp' ? 'ratio at least 0.6, aim 1.0' : 'ratio at least 1.5',
    note: `${CONNECTIONS} keep-alive connections; ratio is the median of per-round ratios`,
  });
  // The same rounds by CPU time, which a shared machine's load disturbs far less than wall time: the serve
  // process's own CPU seconds (HTTP, decoding, detection, metrics) against JSON.parse's in this process.
  figure({
    bench: 'detector',
    name: `${name}, spans per CPU second of the serve process (median of rounds)`,
    value: median(serveCpu),
    unit: 'spans/s',
    range: range(serveCpu),
    reference: {
      name: 'bare JSON.parse of the same bodies, per CPU second',
      value: median(parseCpu),
      unit: 'spans/s',
      range: range(parseCpu),
    },
    ratio: median(serveCpu.map((x, i) => x / parseCpu[i]!)),
    target: what === 'mcp' ? undefined : 'ratio at least 1.5',
    note: `the rounds above; serve's CPU from /proc (10 ms ticks), JSON.parse's from process.cpuUsage`,
  });
  doorFigure(name, serveCpu, bareCpu, 'JSON.parse');
}

/**
 * The decoders alone, in this process, against their references on the same bodies, by CPU time in
 * alternating rounds: the OTLP/JSON scanner (what serve runs, depth guard included) against JSON.parse
 * of the body's text, the protobuf decoder (detector attributes only) against protobufjs.
 */
function benchDecode(): void {
  const spans = workload(SMOKE ? 600 : 20_000, 'dec');
  const json = otlpBodies(spans, 512);
  const jsonBytes = json.map((b) => Buffer.from(b));
  const pb = otlpProtobufBodies(spans, 512, ATTR_SERVICE_NAME);
  let sunk = 0;
  const sink = (): void => {
    sunk++;
  };
  const jsonOptions = { detectorAttributesOnly: true, maxDepth: 64 };
  const variants: [string, () => void][] = [
    ['parse', () => json.forEach((b) => JSON.parse(b))],
    ['scan', () => jsonBytes.forEach((b) => decodeJsonRequest(b, sink, jsonOptions))],
    ['protobufjs', () => pb.forEach((b) => ExportTraceServiceRequest.decode(b))],
    ['protobuf', () => pb.forEach((b) => decodeProtobufRequest(b, sink, { detectorAttributesOnly: true }))],
  ];
  const rates = new Map<string, number[]>(variants.map(([k]) => [k, []]));
  const ROUNDS = SMOKE ? 3 : 10;
  for (let round = 0; round < ROUNDS; round++) {
    for (const [k, f] of variants) {
      const c0 = process.cpuUsage();
      f();
      if (round >= 2 || SMOKE) rates.get(k)!.push(spans.length / ownCpuSeconds(c0));
    }
  }
  const r = (k: string) => rates.get(k)!;
  const ratios = (a: string, b: string) => r(a).map((x, i) => x / r(b)[i]!);
  console.log(
    `decoders alone (CPU time, ${r('scan').length} alternating rounds of ${fmt(spans.length)} spans, 512 a body): OTLP/JSON scanner ${fmt(median(r('scan')))} spans/s, JSON.parse ${fmt(median(r('parse')))}; ` +
      `protobuf decoder ${fmt(median(r('protobuf')))}, protobufjs ${fmt(median(r('protobufjs')))} (${fmt(sunk)} records made)`,
  );
  figure({
    bench: 'detector',
    name: 'OTLP/JSON decoder alone (scanner, detector attributes, depth guard), CPU time (median of rounds)',
    value: median(r('scan')),
    unit: 'spans/s',
    range: range(r('scan')),
    reference: {
      name: 'JSON.parse of the same bodies (text), CPU time',
      value: median(r('parse')),
      unit: 'spans/s',
      range: range(r('parse')),
    },
    ratio: median(ratios('scan', 'parse')),
    note: 'in one process, alternating rounds; the records are made, no detector',
  });
  figure({
    bench: 'detector',
    name: 'OTLP/protobuf decoder alone (detector attributes), CPU time (median of rounds)',
    value: median(r('protobuf')),
    unit: 'spans/s',
    range: range(r('protobuf')),
    reference: {
      name: 'protobufjs decode of the same bodies, CPU time',
      value: median(r('protobufjs')),
      unit: 'spans/s',
      range: range(r('protobufjs')),
    },
    ratio: median(ratios('protobuf', 'protobufjs')),
    note: 'in one process, alternating rounds; the records are made, no detector',
  });
}

/** Spawns `resumewatch serve` from source; resolves its ports from the line it prints. */
async function startServe(
  withGrpc: boolean,
): Promise<{ child: ReturnType<typeof spawn>; port: number; grpcPort: number; metricsPort: number }> {
  // serve runs from its build, as users run it: through tsx, each named closure gets a property of its own
  // (its transform's `__name`), CPU and heap serve does not have. `pnpm bench` builds first.
  const cli = join(import.meta.dirname, '../dist/cli.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npx tsc -b)`);
  const prof = process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/sprof'] : [];
  const child = spawn(
    process.execPath,
    [
      ...prof,
      cli,
      'serve',
      '--port',
      '0',
      '--grpc-port',
      withGrpc ? '0' : 'off',
      '--metrics-port',
      '0',
      '--max-requests',
      '1000000',
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const deadline = Date.now() + 60_000;
  while (!/metrics on/.test(stderr)) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`resumewatch serve did not start: ${stderr.trim()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    child,
    port: Number(/:(\d+)\/v1\/traces/.exec(stderr)![1]),
    grpcPort: withGrpc ? Number(/gRPC on [\d.]+:(\d+)/.exec(stderr)![1]) : 0,
    metricsPort: Number(/:(\d+)\/metrics/.exec(stderr)![1]),
  };
}

/**
 * OTLP/protobuf over HTTP and OTLP/gRPC into `serve`, each against protobufjs decoding the same bodies
 * (ExportTraceServiceRequest.decode, the generated decoder) in the same round.
 */
/** The bare HTTP receiver (bench/bare-receiver.ts) of `kind`, listening on loopback. */
async function startBare(kind: 'json' | 'protobuf'): Promise<{ child: ReturnType<typeof spawn>; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'bare-receiver.ts'), kind], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + 60_000;
  while (!/port \d+/.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`bare receiver did not start: ${out.trim()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { child, port: Number(/port (\d+)/.exec(out)![1]) };
}

/** The door's share of serve's CPU: serve's spans per CPU second against the bare receiver's, round by round. */
function doorFigure(name: string, serveCpu: number[], bareCpu: number[], decoder: string): void {
  figure({
    bench: 'detector',
    name: `${name}, serve's spans per CPU second against a bare HTTP receiver's (median of rounds)`,
    value: median(serveCpu),
    unit: 'spans/s',
    range: range(serveCpu),
    reference: {
      name: `bare node:http receiver that reads each body and decodes it with ${decoder}, per CPU second of its process`,
      value: median(bareCpu),
      unit: 'spans/s',
      range: range(bareCpu),
    },
    ratio: median(serveCpu.map((x, i) => x / bareCpu[i]!)),
    note: `the same rounds and client; both processes' CPU from /proc (10 ms ticks): what serve costs beyond what any HTTP receiver with the reference decoder pays`,
  });
}

async function benchServeProtobuf(what: 'mcp' | 'mixed'): Promise<void> {
  const PER = 512;
  const { rounds, warm } =
    what === 'mcp'
      ? {
          rounds: Array.from({ length: SMOKE ? 1 : 5 }, (_, i) =>
            otlpProtobufBodies(workload(SMOKE ? 600 : 40_000, `pb${i}`), PER, ATTR_SERVICE_NAME),
          ),
          warm: otlpProtobufBodies(workload(WARM_UP_REQUESTS, 'pbwarm'), PER, ATTR_SERVICE_NAME),
        }
      : mixedRounds((mcp, seed) =>
          mixedRequests(mcp, { service: 'bench', seed, intValue: Number }).map(protobufOfJsonRequest),
        );
  const ROUNDS = rounds.length;
  const counts = rounds.map((bodies) => bodies.map(spansOfProtobuf));
  const { child, port, grpcPort } = await startServe(true);
  const bare = await startBare('protobuf');
  const CONNECTIONS = 4;
  // Idle sockets are dropped after 2 s, before serve's 5 s keep-alive timeout closes them: a socket reused
  // just as the server closes it fails its request ("socket hang up"), which a loaded machine's pauses
  // between rounds made happen.
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS, timeout: IDLE_SOCKET_MS });
  const postHttpTo = (to: number, body: Buffer) =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: to,
          path: '/v1/traces',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/x-protobuf', 'content-length': body.length },
        },
        (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const postHttp = (body: Buffer) => postHttpTo(port, body);
  const client = new grpc.Client(`127.0.0.1:${grpcPort}`, grpc.credentials.createInsecure());
  const postGrpc = (body: Buffer) =>
    new Promise<void>((resolve, reject) => {
      client.makeUnaryRequest(
        '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        (b: Buffer) => b,
        (b: Buffer) => b,
        body,
        (e) => (e ? reject(e) : resolve()),
      );
    });
  const cpu = { http: [] as number[], rpc: [] as number[], decode: [] as number[], bare: [] as number[] };
  const rate = async (
    bodies: Buffer[],
    measured: number,
    post: (b: Buffer) => Promise<void>,
    clients: number,
    cpuRates: number[],
    pid = child.pid!,
  ) => {
    await post(bodies[0]!);
    let next = 1;
    const start = process.hrtime.bigint();
    const cpu0 = cpuSecondsOf(pid);
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (next < bodies.length) await post(bodies[next++]!);
      }),
    );
    cpuRates.push(measured / Math.max(cpuSecondsOf(pid) - cpu0, 1 / CLOCK_TICKS));
    return measured / (Number(process.hrtime.bigint() - start) / 1e9);
  };
  const http: number[] = [];
  const rpc: number[] = [];
  const decode: number[] = [];
  // One unmeasured round first through each door (see benchServe).
  for (const body of warm) await postHttp(body);
  for (const body of warm) await postGrpc(body);
  for (const body of warm) await postHttpTo(bare.port, body);
  for (const [r, bodies] of rounds.entries()) {
    const spans = sum(counts[r]!);
    const measured = spans - counts[r]![0]!;
    http.push(await rate(bodies, measured, postHttp, CONNECTIONS, cpu.http));
    rpc.push(await rate(bodies, measured, postGrpc, CONNECTIONS, cpu.rpc));
    const start = process.hrtime.bigint();
    const cpu0 = process.cpuUsage();
    for (const b of bodies) ExportTraceServiceRequest.decode(b);
    decode.push(spans / (Number(process.hrtime.bigint() - start) / 1e9));
    cpu.decode.push(spans / ownCpuSeconds(cpu0));
    await rate(bodies, measured, (b) => postHttpTo(bare.port, b), CONNECTIONS, cpu.bare, bare.child.pid!);
  }
  agent.destroy();
  client.close();
  child.kill('SIGTERM');
  bare.child.kill('SIGTERM');
  const show = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
  const stream = what === 'mcp' ? '' : ', a mixed stream (1 span in 10 MCP, 9 HTTP, database, framework)';
  const mixed = what === 'mcp' ? '' : ', mixed stream (1 span in 10 MCP)';
  const target = what === 'mcp' ? 'ratio at least 0.6' : 'ratio at least 1.5';
  console.log(
    `serve${stream}, OTLP/protobuf over HTTP: ${show(http)} spans/s; OTLP/gRPC: ${show(rpc)} spans/s; protobufjs ExportTraceServiceRequest.decode of the same bodies: ${show(decode)} spans/s ` +
      `(${PER} spans, ${(rounds[0]![0]!.length / 1024).toFixed(0)} KiB a body, ${CONNECTIONS} clients, ${ROUNDS} rounds); ` +
      `ratio per round, HTTP wall ${perRound(http, decode)}, CPU ${perRound(cpu.http, cpu.decode)}; ` +
      `gRPC wall ${perRound(rpc, decode)}, CPU ${perRound(cpu.rpc, cpu.decode)}`,
  );
  const reference = {
    name: 'protobufjs decode of the same bodies',
    value: median(decode),
    unit: 'spans/s',
    range: range(decode),
  };
  figure({
    bench: 'detector',
    name: `serve${mixed}, OTLP/protobuf over HTTP, 512 spans a request (median of rounds)`,
    value: median(http),
    unit: 'spans/s',
    range: range(http),
    reference,
    ratio: median(http.map((x, i) => x / decode[i]!)),
    target,
  });
  figure({
    bench: 'detector',
    name: `serve${mixed}, OTLP/gRPC, 512 spans a request (median of rounds)`,
    value: median(rpc),
    unit: 'spans/s',
    range: range(rpc),
    reference,
    ratio: median(rpc.map((x, i) => x / decode[i]!)),
    target,
  });
  const cpuReference = {
    name: 'protobufjs decode of the same bodies, per CPU second',
    value: median(cpu.decode),
    unit: 'spans/s',
    range: range(cpu.decode),
  };
  for (const [label, xs] of [
    ['OTLP/protobuf over HTTP', cpu.http],
    ['OTLP/gRPC', cpu.rpc],
  ] as const) {
    figure({
      bench: 'detector',
      name: `serve${mixed}, ${label}, spans per CPU second of the serve process (median of rounds)`,
      value: median(xs),
      unit: 'spans/s',
      range: range(xs),
      reference: cpuReference,
      ratio: median(xs.map((x, i) => x / cpu.decode[i]!)),
      note: `the rounds above; serve's CPU from /proc (10 ms ticks), protobufjs's from process.cpuUsage`,
    });
  }
  doorFigure(`serve${mixed}, OTLP/protobuf over HTTP`, cpu.http, cpu.bare, 'protobufjs');
}

function benchMemory(): void {
  const N = SMOKE ? 2_000 : 1_000_000;
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
  const s: SpanRecord = {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: '',
    name: SPAN_REQUEST_TERMINAL,
    kind: 1,
    startTimeUnixMs: 0,
    endTimeUnixMs: 0,
    attributes,
    service: 'bench',
  };
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
  const perRequest = (after - before) / tracked;
  console.log(
    `memory: ${perRequest.toFixed(0)} bytes per tracked request at ${fmt(tracked)} tracked (heap + array buffers, after GC; includes the span-id dedupe set)`,
  );
  figure({
    bench: 'detector',
    name: `heap per tracked request at ${fmt(tracked)} tracked`,
    value: perRequest,
    unit: 'bytes',
    target: N >= 1_000_000 ? '200 bytes' : undefined,
    note: 'heap + array buffers after GC, a distinct 36-character session id per request (its string included), span-id dedupe set included',
  });
  // Keeps the detector alive until after the measurement.
  if (d.stats().tracked !== tracked) throw new Error('unreachable');
}

if (all || which.has('core')) {
  benchCore(10);
  benchCore(100);
}
if (all || which.has('core-dict')) benchCore(100, true);
if (all || which.has('memory')) benchMemory();
if (all || which.has('serve')) await benchServe('mcp');
if (all || which.has('serve-protobuf')) await benchServeProtobuf('mcp');
if (all || which.has('serve-mixed')) await benchServe('mixed');
if (all || which.has('serve-mixed-protobuf')) await benchServeProtobuf('mixed');
if (all || which.has('decode')) benchDecode();
