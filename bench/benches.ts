/**
 * Every benchmark of the workspace, as `pnpm bench` runs it (full) and as the CI smoke runs it (with
 * `--smoke`: tiny, it must start and print its rows, never within a time limit). Each runs as its own
 * Node process in its package directory, one after the other, at its own default sizes.
 */
import { join } from 'node:path';

export interface Bench {
  id: string;
  /** Package directory, relative to the repository root. */
  dir: string;
  script: string;
  /** Arguments of both runs (the smoke adds `--smoke`). */
  args?: string[];
  /**
   * The one benchmark whose smoke counts instructions with callgrind (its first count only): proof that
   * the counting works, where valgrind under load would take the smoke tens of minutes for all of them.
   */
  smokeCallgrind?: boolean;
}

export const ROOT = join(import.meta.dirname, '..');
export const NODE_FLAGS = ['--expose-gc', '--import', 'tsx'];
export const argsOf = (b: Bench, smoke: boolean): string[] => [
  b.script,
  ...(b.args ?? []),
  ...(smoke ? ['--smoke', ...(b.smokeCallgrind ? ['--callgrind'] : [])] : []),
];

// Each says at its top what it measures and against what. The counted ones (callgrind) last: the slowest.
export const BENCHES: Bench[] = [
  { id: 'gateway', dir: 'packages/gateway', script: 'bench/proxy.bench.ts' },
  { id: 'gateway-tasks', dir: 'packages/gateway', script: 'bench/tasks.bench.ts' },
  { id: 'client-soak', dir: 'packages/instrumentation', script: 'bench/soak.bench.ts' },
  { id: 'detector-core', dir: 'packages/daemon', script: 'bench/core.bench.ts' },
  { id: 'detector-tasks', dir: 'packages/daemon', script: 'bench/tasks.bench.ts' },
  { id: 'detector-serve', dir: 'packages/daemon', script: 'bench/serve.bench.ts' },
  { id: 'serve-stages', dir: 'packages/daemon', script: 'bench/stages.bench.ts' },
  { id: 'serve-stages-protobuf', dir: 'packages/daemon', script: 'bench/stages.bench.ts', args: ['--protobuf'] },
  { id: 'detector-lag', dir: 'packages/daemon', script: 'bench/lag.bench.ts' },
  { id: 'wire', dir: 'packages/wire', script: 'bench/observer.bench.ts', smokeCallgrind: true },
  { id: 'client', dir: 'packages/instrumentation', script: 'bench/client.bench.ts' },
  { id: 'gateway-instructions', dir: 'packages/gateway', script: 'bench/instructions.bench.ts' },
  { id: 'serve-instructions', dir: 'packages/daemon', script: 'bench/stages.bench.ts', args: ['--instructions'] },
];
