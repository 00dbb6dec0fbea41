/** What the client benchmarks share: the lab server in a child, and each variant's fetch. */
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
