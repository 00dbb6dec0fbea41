/**
 * `resumewatch serve` at its OTLP doors against the reference decoders, by CPU: serve's spans per CPU
 * second of its process (HTTP, decoding, detection, metrics, the page's evidence) over loopback, against
 * the reference decoder's spans per CPU second of the same bodies in this process (JSON.parse for
 * OTLP/JSON, protobufjs for OTLP/protobuf and gRPC), in alternating rounds; beside them, a bare node:http
 * receiver that only decodes with the reference (serve-process.ts): the door's own cost, the bound of
 * any receiver behind node:http. Two streams: MCP spans (target 0.6 of the reference) and a mixed stream,
 * 1 span in 10 MCP (target 1.5: spans that cannot matter are skipped before they are decoded).
 */
import * as grpc from '@grpc/grpc-js';
import { alternate, arg, compare, compared, cpuOf, figure, pool } from '../../../bench/harness.js';
import { bodies, reference, spansIn, type Encoding, type Stream } from './bodies.js';
import { closePosts, post, procCpuUs, startBare, startServe } from './serve-process.js';

const ROUNDS = arg('rounds', 5, 1);
const REQUESTS = arg('requests', 30_000, 300);
const CONNECTIONS = 4;
const EXPORT = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

/** Every body of a round, on CONNECTIONS connections at once. */
async function sendAll(list: Buffer[], send: (b: Buffer) => Promise<void>): Promise<void> {
  let next = 0;
  await pool(CONNECTIONS, async () => {
    while (next < list.length) await send(list[next++]!);
  });
}

async function door(encoding: Encoding, stream: Stream): Promise<void> {
  const grpcOn = encoding === 'protobuf';
  const serve = await startServe(grpcOn);
  const bare = await startBare(encoding);
  const type = grpcOn ? 'application/x-protobuf' : 'application/json';
  const client = grpcOn ? new grpc.Client(`127.0.0.1:${serve.grpcPort}`, grpc.credentials.createInsecure()) : undefined;
  const viaGrpc = (b: Buffer) =>
    new Promise<void>((resolve, reject) =>
      client!.makeUnaryRequest(
        EXPORT,
        (x: Buffer) => x,
        (x: Buffer) => x,
        b,
        (e) => (e ? reject(e) : resolve()),
      ),
    );
  const rounds = Array.from({ length: ROUNDS + 1 }, (_, i) =>
    bodies(encoding, stream, REQUESTS, `${stream}${i}`, i + 1),
  );
  const spans = rounds.map((r) => spansIn(encoding, r));
  const parse = reference(encoding);
  /** Spans per CPU second of `pid` while `send` posts round r. */
  const through = async (pid: number, r: number, send: (b: Buffer) => Promise<void>) => {
    const c0 = procCpuUs(pid);
    await sendAll(rounds[r + 1]!, send);
    return spans[r + 1]! / ((procCpuUs(pid) - c0 || 10_000) / 1e6);
  };
  const variants = grpcOn ? (['serve', 'grpc', 'bare', 'parse'] as const) : (['serve', 'bare', 'parse'] as const);
  // Round -1 (the harness's warm-up) sends round 0's bodies: serve compiles its paths once, as a long-running serve has.
  const per = await alternate(variants, ROUNDS, async (v, r) => {
    if (v === 'serve') return through(serve.proc.pid!, r, (b) => post(serve.port, type, b));
    if (v === 'grpc') return through(serve.proc.pid!, r, viaGrpc);
    if (v === 'bare') return through(bare.proc.pid!, r, (b) => post(bare.port, type, b));
    const cpu = await cpuOf(() => rounds[r + 1]!.forEach(parse));
    return spans[r + 1]! / (cpu / 1e6);
  });
  client?.close();
  serve.proc.kill('SIGTERM');
  bare.proc.kill('SIGTERM');
  const refName = encoding === 'json' ? 'JSON.parse' : 'protobufjs';
  const what = stream === 'mcp' ? 'MCP spans' : 'a mixed stream (1 span in 10 MCP)';
  const bound = stream === 'mcp' ? 0.6 : 1.5;
  const ref = `${refName} of the same bodies, this process`;
  const doorRatio = compare(per.bare, per.parse);
  const rows = [
    ['serve', `OTLP/${encoding === 'json' ? 'JSON' : 'protobuf'} over HTTP`],
    ...(grpcOn ? [['grpc', 'OTLP/gRPC']] : []),
  ] as const;
  for (const [v, door] of rows) {
    const c = compare(per[v as 'serve'], per.parse);
    figure({
      id: `serve-${v === 'grpc' ? 'grpc' : encoding}-${stream}`,
      what: `serve, ${door}, ${what}: spans per CPU second of serve's process`,
      target: { text: `≥ ${bound}x ${refName}`, bound, dir: '>=' },
      ...compared(c, ref, 'spans/CPU s'),
      heldBy: `the door: a bare node:http receiver that only runs ${refName} is at ${doorRatio.ratio.toFixed(2)} of ${refName} in the same rounds; serve is at ${compare(per[v as 'serve'], per.bare).ratio.toFixed(2)} of it`,
      note: `${ROUNDS} alternating rounds of ${spans[1]} spans, 512 a body, ${CONNECTIONS} keep-alive connections; serve's CPU from /proc`,
    });
  }
  figure({
    id: `door-${encoding}-${stream}`,
    what: `a bare node:http receiver that only runs ${refName}, ${what}: the door's bound, beside serve`,
    ...compared(doorRatio, ref, 'spans/CPU s'),
  });
}

for (const [encoding, stream] of [
  ['json', 'mcp'],
  ['protobuf', 'mcp'],
  ['json', 'mixed'],
  ['protobuf', 'mixed'],
] as const)
  await door(encoding, stream);
closePosts();
