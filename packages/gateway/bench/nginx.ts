/**
 * Debian's nginx as the third proxy of the gateway benchmark: one worker (the Node proxies run on one
 * thread too), a generated config in a temporary directory, proxy buffering off (SSE passes event by
 * event), HTTP/1.1 keep-alive to the upstream. Its CPU is read from /proc (master and workers, user +
 * system, in clock ticks), its memory as the workers' resident set. Resolves to `{ missing }` with the
 * reason when nginx is not installed or does not start: the benchmark goes on without it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  accessSync,
  constants,
  chmodSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Nginx {
  url: string;
  /** CPU time of master and workers, µs (clock-tick resolution). */
  cpuUs(): number;
  /** Resident set of the workers, bytes. */
  workersRss(): number;
  /** The last lines of its error log. */
  errors(): string;
  stop(): void;
}

const CANDIDATES = [process.env.NGINX, '/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx'];

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function children(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** utime + stime of one process, in clock ticks. */
function ticks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function rss(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : 0;
}

export async function startNginx(upstream: string, connections: number): Promise<Nginx | { missing: string }> {
  const bin = CANDIDATES.find((c) => {
    if (!c) return false;
    try {
      accessSync(c, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (!bin) return { missing: 'nginx not installed (apt-get install nginx, or NGINX=/path/to/nginx)' };
  const dir = mkdtempSync(join(tmpdir(), 'rw-bench-nginx-'));
  // Run as root, nginx's workers switch to `nobody`, which must reach the temp paths.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const target = new URL(upstream);
  const conf = join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1;
worker_rlimit_nofile ${connections + 512};
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections ${connections}; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_requests 1000000;
  upstream mcp { server ${target.host}; keepalive 256; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
    }
  }
}
`,
  );
  const child: ChildProcess = spawn(bin, ['-p', `${dir}/`, '-c', conf, '-e', join(dir, 'error.log')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  let exited = false;
  child.once('exit', () => (exited = true));
  for (let i = 0; i < 100 && !exited; i++) {
    if (await accepts(port)) break;
    await sleep(50);
  }
  if (exited || !(await accepts(port))) {
    child.kill();
    let log = '';
    try {
      log = readFileSync(join(dir, 'error.log'), 'utf8');
    } catch {
      // No log written.
    }
    rmSync(dir, { recursive: true, force: true });
    return { missing: `nginx did not start: ${(stderr + log).trim().split('\n').slice(-2).join(' ')}` };
  }
  const master = child.pid!;
  const tick = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return {
    url: `http://127.0.0.1:${port}`,
    cpuUs: () => ([master, ...children(master)].reduce((n, pid) => n + ticks(pid), 0) * 1e6) / tick,
    workersRss: () => children(master).reduce((n, pid) => n + rss(pid), 0),
    errors: () => {
      try {
        return readFileSync(join(dir, 'error.log'), 'utf8').trim().split('\n').slice(-3).join(' | ');
      } catch {
        return '';
      }
    },
    stop: () => {
      child.kill('SIGQUIT');
      setTimeout(() => {
        if (!exited) child.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
      }, 1000).unref();
    },
  };
}
