import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { repoRoot } from './promql.js';
import { requireTools } from './required-tools.js';
import { waitFor } from './wait.js';

/** The shipped configuration of the load balancer in front of the gateway replicas. */
export const HAPROXY_CONFIG = 'deploy/gateway/haproxy.cfg';

/** Where one `server` line of the shipped configuration points on this machine. */
export interface HaproxyServer {
  /** The server's name in the shipped file (gateway-1, …). */
  name: string;
  port: number;
  /** The port its health check asks (the replica's --metrics-port). */
  checkPort: number;
}

const BIND = /^(\s*bind\s+)\S+/m;
const SERVER = /^(\s*server\s+)(\S+)(\s+)\S+(\s+check\s+port\s+)\d+/gm;

/**
 * The shipped configuration with the frontend bound to a loopback port and each `server` line
 * pointed at a loopback replica; every other line (the balance rules, timeouts, log format) stays as
 * shipped. Throws when a shipped server has no replica or the other way round.
 */
export function renderHaproxyConfig(shipped: string, port: number, servers: HaproxyServer[]): string {
  if (!BIND.test(shipped)) throw new Error(`${HAPROXY_CONFIG} has no bind line`);
  const byName = new Map(servers.map((s) => [s.name, s]));
  const rendered = new Set<string>();
  const text = shipped
    .replace(BIND, `$1127.0.0.1:${port}`)
    .replace(SERVER, (_line, lead: string, name: string, gap: string, check: string) => {
      const server = byName.get(name);
      if (server === undefined) throw new Error(`${HAPROXY_CONFIG}: no replica for server ${name}`);
      rendered.add(name);
      return `${lead}${name}${gap}127.0.0.1:${server.port}${check}${server.checkPort}`;
    });
  const missing = servers.filter((s) => !rendered.has(s.name)).map((s) => s.name);
  if (missing.length > 0) throw new Error(`${HAPROXY_CONFIG} has no server line for ${missing.join(', ')}`);
  return text;
}

/** One line of the shipped log-format: which server got an exchange, with its session and cursor. */
export interface HaproxyExchange {
  method: string;
  path: string;
  status: number;
  server: string;
  /** Undefined when the request carried no Mcp-Session-Id. */
  session: string | undefined;
  lastEventId: string | undefined;
  /** The request's Mcp-Name (the tool, prompt or resource of a 2026-07-28 call); undefined when absent. */
  name: string | undefined;
}

// log-format "%ci:%cp %HM %HU %ST %b/%s session=%[capture.req.hdr(0)] last-event-id=%[capture.req.hdr(1)] name=%[capture.req.hdr(2)] %Tt"
const LINE = /^\S+ (\S+) (\S+) (-?\d+) [^/\s]+\/(\S+) session=(\S*) last-event-id=(\S*) name=(\S*) -?\d+$/;

/** A captured header: haproxy logs `-` (or nothing) for one the request did not carry. */
const captured = (value: string): string | undefined => (value === '' || value === '-' ? undefined : value);

export interface RunningHaproxy {
  readonly url: string;
  /** The exchanges haproxy has logged so far (an exchange is logged when it ends). */
  exchanges(): HaproxyExchange[];
  /** Everything haproxy wrote, for failure messages. */
  output(): string;
  close(): Promise<void>;
}

/** A haproxy process started by `runHaproxy`. */
export interface HaproxyProcess {
  readonly url: string;
  /** Everything haproxy wrote (its log lines included), for the test's reading and failure messages. */
  output(): string;
  close(): Promise<void>;
}

/**
 * Runs Debian's haproxy in the foreground with `config` (whose frontend binds 127.0.0.1:`port`), after
 * `haproxy -c` accepts it; resolves once the frontend answers (any status).
 */
export async function runHaproxy(config: string, port: number, what = 'configuration'): Promise<HaproxyProcess> {
  requireTools('haproxy');
  const dir = mkdtempSync(join(tmpdir(), 'resumewatch-haproxy-'));
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, config);
  const check = spawnSync('haproxy', ['-c', '-f', file], { encoding: 'utf8', timeout: 15_000 });
  if (check.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`haproxy -c rejects the ${what}:\n${check.stdout}${check.stderr}`);
  }
  const child: ChildProcess = spawn('haproxy', ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const close = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.race([exited, sleep(5_000, undefined, { ref: false })]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // An exit before the frontend answers ends the wait at once (after it, the exit is close()'s).
    let ready = false;
    await Promise.race([
      waitFor(() => fetch(`${url}/`).then(() => true), `haproxy on ${url}`, 15_000).then(() => {
        ready = true;
      }),
      exited.then(() => {
        if (!ready) throw new Error(`haproxy exited (${child.exitCode ?? child.signalCode})`);
      }),
    ]);
  } catch (e) {
    await close();
    throw new Error(`${(e as Error).message}\n${output}`, { cause: e });
  }
  return { url, output: () => output, close };
}

/**
 * Runs Debian's haproxy in the foreground with the shipped configuration rendered for `servers`,
 * after `haproxy -c` accepts it; resolves once the frontend answers.
 */
export async function startHaproxy(port: number, servers: HaproxyServer[]): Promise<RunningHaproxy> {
  const shipped = readFileSync(join(repoRoot, HAPROXY_CONFIG), 'utf8');
  const { url, output, close } = await runHaproxy(
    renderHaproxyConfig(shipped, port, servers),
    port,
    `rendered ${HAPROXY_CONFIG}`,
  );
  return {
    url,
    exchanges: () =>
      output()
        .split('\n')
        .flatMap((line) => {
          const m = LINE.exec(line.trim());
          if (!m) return [];
          return [
            {
              method: m[1]!,
              path: m[2]!,
              status: Number(m[3]),
              server: m[4]!,
              session: captured(m[5]!),
              lastEventId: captured(m[6]!),
              name: captured(m[7]!),
            },
          ];
        }),
    output,
    close,
  };
}

/** Sends one command to haproxy's stats socket (`stats socket <path> level admin`) and returns its answer. */
function haproxyCommand(socketPath: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => (answer += text));
    socket.once('error', reject);
    socket.once('end', () => resolve(answer));
    socket.end(`${command}\n`);
  });
}

/** A server's connections as `show servers conn` counts them: in use, and idle in its pool. */
export async function serverConnections(
  socketPath: string,
  backend: string,
  server: string,
): Promise<{ used: number; idle: number }> {
  const answer = await haproxyCommand(socketPath, `show servers conn ${backend}`);
  const header = answer.split('\n')[0]!.replace(/^#\s*/, '').split(/\s+/);
  const row = answer
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find((fields) => fields[0] === `${backend}/${server}`);
  if (row === undefined) throw new Error(`show servers conn ${backend}: no ${server} in\n${answer}`);
  const field = (name: string): number => Number(row[header.indexOf(name)]);
  return { used: field('used_cur'), idle: field('idle_cur') };
}
