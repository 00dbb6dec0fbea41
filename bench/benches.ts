/**
 * Every benchmark of the workspace, as `pnpm bench` runs it (full) and as the CI smoke runs it (tiny:
 * it must start and print figures, never within a time limit). Each runs as its own Node process in
 * its package directory; the full arguments are what docs/benchmarks.md says to rerun.
 */
import { join } from 'node:path';

export interface Bench {
  id: string;
  /** Package directory, relative to the repository root. */
  dir: string;
  script: string;
  args: string[];
  smokeArgs: string[];
  what: string;
}

export const ROOT = join(import.meta.dirname, '..');
export const NODE_FLAGS = ['--expose-gc', '--import', 'tsx'];

export const BENCHES: Bench[] = [
  {
    id: 'detector-core',
    dir: 'packages/daemon',
    script: 'bench/run.ts',
    args: ['core', 'core-dict', 'memory'],
    smokeArgs: ['core', 'core-dict', 'memory', '--smoke'],
    what: 'the detector core alone: spans/s on mostly healthy traffic, heap per tracked request',
  },
  {
    id: 'detector-tasks',
    dir: 'packages/daemon',
    script: 'bench/tasks.bench.ts',
    args: ['--rounds', '12', '--spans', '20000', '--records', '20000'],
    smokeArgs: ['--smoke'],
    what: 'what tasks cost the detector: CPU per tasks/get span of a live task against per tools/call span without a task (Detector.ingest with its metrics, alternating rounds), and the bytes of one live task record, never polled and polled 64 times, over 20,000 records (`node --expose-gc`)',
  },
  {
    id: 'detector-serve',
    dir: 'packages/daemon',
    script: 'bench/run.ts',
    args: ['serve', 'serve-protobuf', 'serve-mixed', 'serve-mixed-protobuf', 'decode'],
    smokeArgs: ['serve', 'serve-protobuf', 'serve-mixed', 'serve-mixed-protobuf', 'decode', '--smoke'],
    what: "`resumewatch serve` over loopback: OTLP/JSON against JSON.parse, OTLP/protobuf and gRPC against protobufjs decoding (by wall and by CPU time), on MCP spans and on a mixed stream (1 span in 10 MCP, 9 an application's HTTP, database and framework spans), and the decoders alone",
  },
  {
    id: 'serve-stages',
    dir: 'packages/daemon',
    script: 'bench/pipeline.ts',
    args: [],
    smokeArgs: ['--smoke'],
    what: "where serve's CPU per span goes, OTLP/JSON MCP spans, in-process without HTTP: JSON.parse, the decoder, the detector, its metrics, serve's pipeline without and with the page's evidence, and without the skipping, side by side in alternating rounds",
  },
  {
    id: 'serve-stages-protobuf',
    dir: 'packages/daemon',
    script: 'bench/pipeline.ts',
    args: ['--protobuf'],
    smokeArgs: ['--protobuf', '--smoke'],
    what: 'the same stages as serve-stages over the OTLP/protobuf bodies, protobufjs decoding as the reference',
  },
  {
    id: 'detector-lag',
    dir: 'packages/daemon',
    script: 'bench/lag.ts',
    args: [],
    smokeArgs: ['--smoke'],
    what: 'detection lag under load: completing span sent → finding emitted, and → visible in /metrics',
  },
  {
    id: 'guard',
    dir: 'packages/guard',
    script: 'bench/guard.bench.ts',
    args: ['--events', '20000', '--calls', '20', '--progress', '100', '--rounds', '10'],
    smokeArgs: ['--events', '200', '--calls', '1', '--progress', '3', '--rounds', '1', '--warmup', '0'],
    what: 'client CPU per SSE event with guardedFetch against the same client without it, each in its own process (lean client, unmodified SDK 1.x client)',
  },
  {
    id: 'instrumentation',
    dir: 'packages/instrumentation',
    script: 'bench/fetch.bench.ts',
    // 20 calls a round: with 5 the variants' few thousand events let the ratio scatter from run to run.
    args: ['--rounds', '10', '--calls', '20', '--progress', '100'],
    smokeArgs: ['--rounds', '1', '--warmup', '0', '--calls', '1', '--progress', '3', '--pings', '3'],
    what: 'client CPU per SSE event and per request of instrumentFetch against the bare SDK 1.x client and @opentelemetry/instrumentation-undici, each in its own process',
  },
  {
    id: 'client-instructions',
    dir: 'packages/instrumentation',
    script: 'bench/instructions.bench.ts',
    // About 3.5 minutes on two loaded cores (the three clients under callgrind at once); needs valgrind.
    args: ['--calls', '80', '--warm', '300', '--progress', '100', '--timed', '3'],
    smokeArgs: ['--calls', '1', '--warm', '0', '--progress', '3', '--timed', '1'],
    what: "client instructions per SSE event (valgrind's callgrind, the measured calls only) of the unmodified SDK 1.x client bare, with guardedFetch and with instrumentFetch, each in its own process, and the µs they add at the bare client's timed µs per instruction",
  },
  {
    id: 'client-soak',
    dir: 'packages/instrumentation',
    script: 'bench/soak.bench.ts',
    args: ['--sessions', '600', '--ended', '1000,10000'],
    smokeArgs: ['--sessions', '12', '--ended', '40,80'],
    what: 'client heap per live session, per request and kept per ended session (at 1,000 and 10,000 ended): bare SDK, guardedFetch, instrumentFetch',
  },
  {
    id: 'gateway',
    dir: 'packages/gateway',
    script: 'bench/proxy.bench.ts',
    args: ['--rounds', '6', '--open', '10000'],
    smokeArgs: ['--smoke'],
    what: 'the gateway against a bare Node reverse proxy and nginx on the same loopback MCP traffic: proxy CPU per JSON request and per SSE event, latency added at 1,000 events/s, heap per open stream with 10,000 open, heap kept after DELETE; mcp_server_operation_duration_seconds: its observations per SSE event, and its CPU per request with and without it',
  },
  {
    id: 'gateway-tasks',
    dir: 'packages/gateway',
    script: 'bench/tasks-poll.bench.ts',
    args: ['--rounds', '6', '--requests', '3000'],
    smokeArgs: ['--smoke'],
    what: "the gateway's CPU per task poll (tasks/get of a live 2025-11-25 task, observing) against its CPU per tools/call answered with JSON (a request before tasks), in alternating rounds, the bare Node proxy's beside them",
  },
  {
    id: 'gateway-json-parts',
    dir: 'packages/gateway',
    script: 'bench/cpu-parts.ts',
    args: ['--phase', 'json', '--rounds', '4', '--json', '4000'],
    smokeArgs: ['--phase', 'json', '--rounds', '1', '--json', '50', '--concurrency', '2'],
    what: "where the gateway's CPU per JSON request goes, part by part (wire observer, digests, span recorder, detector, forwarding, Node's HTTP, sockets, GC...), against the same parts of the bare Node proxy: V8's sampling profile of each proxy over the JSON phase alone, each part's share of busy samples times the process's CPU per request",
  },
  {
    id: 'gateway-sse-parts',
    dir: 'packages/gateway',
    script: 'bench/cpu-parts.ts',
    args: ['--phase', 'sse', '--rounds', '4', '--streams', '300', '--events', '100'],
    smokeArgs: ['--phase', 'sse', '--rounds', '1', '--streams', '4', '--events', '5', '--concurrency', '2'],
    what: "where the gateway's CPU per SSE event goes, part by part, against the bare Node proxy's (as gateway-json-parts, over the SSE phase: streams of 100 progress events and a result, a stream's own work spread over its events)",
  },
];

export function rerunCommand(b: Bench): string {
  return `cd ${b.dir} && node ${NODE_FLAGS.join(' ')} ${b.script}${b.args.length ? ' ' + b.args.join(' ') : ''}`;
}
