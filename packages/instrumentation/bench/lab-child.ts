/** What the client benchmarks share: the lab server in a child, a lean MCP server, and each variant's fetch. */
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { guardedFetch } from '@resumewatch/guard';
import type { FetchLike } from '@resumewatch/wire';
import { spawnReady } from '../../../bench/harness.js';

// The build, as users run it (`pnpm bench` builds first); a path the type-check, run before any build, does not follow.
const BUILT = '../dist/index.js';
const { instrumentFetch } = (await import(BUILT)) as typeof import('../src/index.js');

export const VARIANTS = ['bare', 'guard', 'instrumented'] as const;
export type Variant = (typeof VARIANTS)[number];

/**
 * A variant's fetch (undefined: the bare client's own) and the tracer provider of instrumentFetch's
 * spans: a BatchSpanProcessor and an exporter that counts and drops them.
 */
export function variantFetch(variant: Variant) {
  const provider = new BasicTracerProvider({
    spanProcessors: [
      new BatchSpanProcessor({
        export: (s: unknown[], done: (r: { code: 0 }) => void) => void ((out.exported += s.length), done({ code: 0 })),
        shutdown: async () => undefined,
      }),
    ],
  });
  const fetch: FetchLike | undefined =
    variant === 'guard'
      ? guardedFetch()
      : variant === 'instrumented'
        ? instrumentFetch({ tracerProvider: provider })
        : undefined;
  const out = { fetch, provider, exported: 0 };
  return out;
}

/**
 * The lab server in a child process (its built bin, as the workspace links it), so that this process's
 * CPU and heap count the client only. `slowClients`: its clients run under valgrind, so it keeps idle
 * connections for minutes, not Node's 5 s (slow-client-keep-alive.mjs).
 */
export async function startLabChild(options: { slowClients?: boolean } = {}): Promise<{ url: string; stop(): void }> {
  const file = (f: string) => fileURLToPath(new URL(f, import.meta.url));
  const preload = options.slowClients ? ['--import', file('slow-client-keep-alive.mjs')] : [];
  const cli = file('../node_modules/@resumewatch/lab/dist/cli.js');
  const { proc, out } = await spawnReady([...preload, cli, 'server', '--capacity', '100000'], /MCP\s+\S+\n/);
  return { url: /MCP\s+(\S+)/.exec(out)![1]!, stop: () => void proc.kill('SIGTERM') };
}

/**
 * A lean MCP server: just what the client benchmarks' sessions do, answered at once: initialize, 202 to
 * a notification, a held GET stream, DELETE, and any tools/call answered with `events` progress events
 * and the result, one event a write. `paced`: each next event only once the client read the one before
 * (its SIGUSR2), so that every read holds one event whatever the relative speed of client and server.
 */
export function leanServer(events: number, paced = false) {
  let [n, read] = [0, () => {}];
  process.on('SIGUSR2', () => read());
  const info =
    '{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"lean","version":"1"}}';
  const event = (id: string, data: string) => `id: ${id}\nevent: message\ndata: {"jsonrpc":"2.0",${data}}\n\n`;
  const server = createServer((req, res) => {
    if (req.method === 'GET') return void res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', async () => {
      const m = JSON.parse(body) as { id?: number; method: string; params?: { _meta?: { progressToken?: number } } };
      if (m.id === undefined) return void res.writeHead(202).end();
      const [s, head] = [++n, { 'content-type': 'application/json', 'mcp-session-id': `lean-${n}` }];
      if (m.method === 'initialize')
        return void res.writeHead(200, head).end(`{"jsonrpc":"2.0","id":${m.id},"result":${info}}`);
      res.writeHead(200, { 'content-type': 'text/event-stream' }); // sent with the first event
      const token = m.params?._meta?.progressToken;
      for (let i = 0; i < events; i++) {
        const progress = event(
          `${s}_${i}`,
          `"method":"notifications/progress","params":{"progressToken":${token},"progress":${i},"total":${events}}`,
        );
        if (!paced) res.write(progress);
        else await new Promise<void>((resolve) => void ((read = resolve), res.write(progress)));
      }
      res.end(event(`${s}_${events}`, `"id":${m.id},"result":{"content":[{"type":"text","text":"done"}]}`));
    });
  });
  server.keepAliveTimeout = 600_000;
  return server;
}
