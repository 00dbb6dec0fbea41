/**
 * Every benchmark of the workspace, as `pnpm bench` runs it (full) and as the CI smoke runs it (tiny:
 * it must start and print figures, never within a time limit). Each runs as its own Node process in
 * its package directory, one after the other. Sizes are each benchmark's own defaults (bench/README.md
 * says how long each takes).
 */
import { join } from 'node:path';

export interface Bench {
  id: string;
  /** Package directory, relative to the repository root. */
  dir: string;
  script: string;
  /** The full run's arguments (default none: the benchmark's own sizes) and the smoke's (default `--smoke`). */
  args?: string[];
  smokeArgs?: string[];
  what?: string;
}

export const ROOT = join(import.meta.dirname, '..');
export const NODE_FLAGS = ['--expose-gc', '--import', 'tsx'];

export const BENCHES: Bench[] = [
  // Each says at its top what it measures and against what; bench/README.md has the list. The
  // counted ones (callgrind) last: the slowest.
  { id: 'gateway', dir: 'packages/gateway', script: 'bench/proxy.bench.ts' },
  { id: 'gateway-tasks', dir: 'packages/gateway', script: 'bench/tasks.bench.ts' },
  { id: 'client-soak', dir: 'packages/instrumentation', script: 'bench/soak.bench.ts' },
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
  { id: 'wire', dir: 'packages/wire', script: 'bench/observer.bench.ts' },
  { id: 'client', dir: 'packages/instrumentation', script: 'bench/client.bench.ts' },
  { id: 'gateway-instructions', dir: 'packages/gateway', script: 'bench/instructions.bench.ts' },
];
