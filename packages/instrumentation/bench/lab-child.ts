import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The lab server in a child process (its built bin, as the workspace links it into this package's
 * node_modules), so that process.cpuUsage() and the heap of the benchmark count the client only.
 * Resolves with its MCP URL once it prints it; `stop()` ends it. `slowClients`: its clients run under
 * valgrind, so it keeps idle connections for minutes, not Node's 5 s (slow-client-keep-alive.mjs).
 */
export function startLabChild(options: { slowClients?: boolean } = {}): Promise<{ url: string; stop(): void }> {
  const cli = fileURLToPath(new URL('../node_modules/@resumewatch/lab/dist/cli.js', import.meta.url));
  const preload = options.slowClients
    ? ['--import', fileURLToPath(new URL('slow-client-keep-alive.mjs', import.meta.url))]
    : [];
  return startServerChild([...preload, cli, 'server', '--capacity', '100000']);
}

/** A server child that prints `MCP <url>` once it listens. */
async function startServerChild(args: string[]): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /MCP\s+(\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`lab server exited with ${code}`)));
  });
  return { url, stop: () => void child.kill('SIGTERM') };
}
