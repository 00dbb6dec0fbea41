/** `resumewatch serve` (its build, as users run it) or another server as a process of its own, and a keep-alive poster. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';

const SERVE_CLI = join(import.meta.dirname, '../dist/cli.js');

/** Spawns `node ...args` and waits for `ready` in what it prints; `out` is what it printed by then. */
export async function listening(args: string[], ready: RegExp): Promise<{ proc: ChildProcess; out: string }> {
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  process.on('exit', () => proc.kill());
  let out = '';
  const take = (d: Buffer) => void (out.length < 65_536 && (out += d.toString()));
  proc.stdout!.on('data', take);
  proc.stderr!.on('data', take);
  for (const until = Date.now() + 60_000; !ready.test(out); await new Promise((r) => setTimeout(r, 20)))
    if (proc.exitCode !== null || Date.now() > until) throw new Error(`${args.join(' ')} did not start: ${out}`);
  return { proc, out };
}

/** serve on loopback ports; its ports read from what it prints. */
export async function startServe(grpc: boolean) {
  const s = await listening(
    [
      SERVE_CLI,
      'serve',
      '--port',
      '0',
      '--grpc-port',
      grpc ? '0' : 'off',
      '--metrics-port',
      '0',
      '--max-requests',
      '1000000',
    ],
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
