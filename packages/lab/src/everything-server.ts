import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The official everything server, started as a peer for tests. */
export interface EverythingServer {
  /** Its Streamable HTTP endpoint, e.g. http://127.0.0.1:P/mcp */
  url: string;
  port: number;
  /** The last 64 KiB of what it wrote to stdout and stderr (it logs every request). */
  output(): string;
  /** SIGTERM, then SIGKILL after 2 s; resolves when it exited. */
  stop(): Promise<void>;
}

export interface EverythingServerOptions {
  /** Give up if it has not listened within this many ms. Default 15000. */
  startTimeoutMs?: number;
}

const OUTPUT_CAP = 64 * 1024;
/** The preload that makes every listen() bind 127.0.0.1 on a free port and report it over IPC. */
const PRELOAD = join(dirname(fileURLToPath(import.meta.url)), '..', 'preload', 'loopback-listen.cjs');

/**
 * Starts `@modelcontextprotocol/server-everything` (a dev dependency of the lab, for tests) in
 * Streamable HTTP mode (`dist/index.js streamableHttp`: express, SDK `StreamableHTTPServerTransport`,
 * stateful sessions, endpoint `/mcp`, its own in-memory event store) in a child process, bound to
 * 127.0.0.1 on a free port by a `--require` preload. Its store never evicts and replays every stream
 * of the session into a resumed stream (it returns the last replayed event id as the stream id, so
 * live events after a mid-stream resume are lost).
 */
export async function startEverythingServer(options: EverythingServerOptions = {}): Promise<EverythingServer> {
  let entry: string;
  try {
    entry = join(
      dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json')),
      'dist',
      'index.js',
    );
  } catch {
    throw new Error(
      '@modelcontextprotocol/server-everything is not installed (it is a dev dependency of @resumewatch/lab, for tests)',
    );
  }
  const child = spawn(process.execPath, ['--require', PRELOAD, entry, 'streamableHttp'], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...process.env, PORT: '0' },
  });
  let output = '';
  const keep = (chunk: Buffer): void => {
    output += chunk.toString('utf8');
    if (output.length > OUTPUT_CAP) output = output.slice(-OUTPUT_CAP);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        fail(
          new Error(
            `the everything server did not listen within ${options.startTimeoutMs ?? 15_000} ms: ${output.slice(-500)}`,
          ),
        ),
      options.startTimeoutMs ?? 15_000,
    );
    function fail(error: Error): void {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    }
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void =>
      fail(new Error(`the everything server exited (${code ?? signal}) before listening: ${output.slice(-500)}`));
    child.on('message', (message: { resumewatchListening?: { port: number } }) => {
      if (!message.resumewatchListening) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve(message.resumewatchListening.port);
    });
    child.once('exit', onExit);
  });
  // The IPC channel has done its job; it must not keep this process alive.
  child.disconnect();

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(killer);
    },
  };
}
