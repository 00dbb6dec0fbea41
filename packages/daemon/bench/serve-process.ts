/**
 * `resumewatch serve` (its build, as users run it) as a process of its own, a keep-alive poster, and the
 * bare receiver: the door's own cost, for serve's benchmark to show beside serve. The bare receiver is a
 * plain node:http server that reads each POSTed body whole, decodes it with the reference decoder
 * (JSON.parse, or protobufjs) and answers 200, measured as serve is: what any receiver behind node:http
 * pays before detecting anything.
 */
import { readFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { join } from 'node:path';
import { listen, spawnReady } from '../../../bench/harness.js';
import { reference } from './bodies.js';

/** serve on loopback ports; its ports read from what it prints. */
export async function startServe(grpc: boolean) {
  const s = await spawnReady(
    [join(import.meta.dirname, '../dist/cli.js'), 'serve', '--port', '0', '--grpc-port', grpc ? '0' : 'off'].concat([
      '--metrics-port',
      '0',
      '--max-requests',
      '1000000',
    ]),
    /metrics on/,
  );
  const port = (re: RegExp) => Number(re.exec(s.out)?.[1] ?? 0);
  return {
    ...s,
    port: port(/:(\d+)\/v1\/traces/),
    grpcPort: port(/gRPC on [\d.]+:(\d+)/),
    metricsPort: port(/:(\d+)\/metrics/),
  };
}

/** The bare receiver (see above) in a process of its own: its process and port. */
export async function startBare(encoding: 'json' | 'protobuf') {
  const s = await spawnReady(['--import', 'tsx', import.meta.filename, encoding], /port \d+\n/);
  return { ...s, port: Number(/port (\d+)/.exec(s.out)![1]) };
}
if (process.argv[1] === import.meta.filename) {
  const decode = reference(process.argv[2] === 'protobuf' ? 'protobuf' : 'json');
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      decode(Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.keepAliveTimeout = 5_000; // serve's, so that the client treats both alike
  process.stdout.write(`port ${new URL(await listen(server)).port}\n`);
}

/** CPU µs a process has used so far, from /proc (10 ms ticks). */
export function procCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

// Idle sockets dropped before serve's 5 s keep-alive timeout could close one under a request.
const agent = new Agent({ keepAlive: true, maxSockets: 4, timeout: 2_000 });
/** POSTs a body to /v1/traces on a keep-alive connection; rejects on any status but 200. */
export const post = (port: number, type: string, body: Buffer | string) =>
  new Promise<void>((resolve, reject) =>
    request(
      { host: '127.0.0.1', port, path: '/v1/traces', method: 'POST', agent, headers: { 'content-type': type } },
      (res) =>
        res
          .resume()
          .on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)))),
    )
      .on('error', reject)
      .end(body),
  );
export const closePosts = () => agent.destroy();
