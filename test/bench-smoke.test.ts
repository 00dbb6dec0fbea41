/**
 * CI smoke of `pnpm bench`: every benchmark runs in its tiny mode and must start, finish and print its
 * rows (FIGURE lines for docs/benchmarks.md), the same ids as a full run. No figure is compared with
 * anything: speed is never a test's verdict on this shared machine, and a smoke figure is never a
 * result. One after the other: side by side they only slow each other down on two cores, and widen
 * keep-alive races that a benchmark's client does not retry. The timeout only stops a hang.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BENCHES, NODE_FLAGS, ROOT, argsOf } from '../bench/benches.js';
import { parseFigures } from '../bench/figure.js';

const soak = (w: string) => ['closed', 'deleted', 'ended-10', 'ended-20', 'live'].map((k) => `soak-${w}-${k}`);
/** The rows each benchmark prints: a lost row fails the smoke. */
const EXPECTED_ROWS: Record<string, string[]> = {
  'detector-core': ['core-1-in-100', 'core-1-in-10', 'core-1-in-100-dictionary', 'core-heap-per-request'],
  'detector-serve': ['json', 'protobuf', 'grpc']
    .flatMap((e) => ['mcp', 'mixed'].map((s) => `serve-${e}-${s}`))
    .concat(['door-json-mcp', 'door-protobuf-mcp', 'door-json-mixed', 'door-protobuf-mixed']),
  'detector-tasks': ['detector-task-poll', 'task-record-never', 'task-record-polled'],
  'detector-lag': ['lag-p50-emitted', 'lag-p50-metrics', 'lag-p99-emitted', 'lag-p99-metrics'],
  'serve-stages': ['decode', 'detector', 'pipeline'].map((s) => `stage-json-mcp-${s}`).concat('evidence-json-mcp'),
  'serve-stages-protobuf': ['decode', 'detector', 'pipeline']
    .map((s) => `stage-protobuf-mcp-${s}`)
    .concat('evidence-protobuf-mcp'),
  'serve-instructions': ['instructions-json-mcp-decode', 'instructions-json-mcp-pipeline'],
  client: ['guard', 'instrumented']
    .flatMap((v) => [`client-${v}-instructions`, `client-${v}-time`])
    .concat('client-guard-lean'),
  // The smoke ends 10 and 20 sessions where a full run ends 1000 and 10000.
  'client-soak': [...soak('guard'), ...soak('instrumented')],
  wire: ['wire-observer-client', 'wire-observer-proxy'],
  gateway: ['json', 'sse', 'sse-latency', 'json-latency', 'stream-heap', 'kept', 'operation-observations']
    .map((k) => `gateway-${k}`)
    .concat('gateway-operation-cpu'),
  'gateway-tasks': ['gateway-task-poll'],
  'gateway-instructions': ['gateway-json-instructions', 'gateway-sse-instructions'],
};

describe('pnpm bench smoke', () => {
  it('lists every benchmark of the workspace once', () => {
    expect(BENCHES.map((b) => b.id).sort()).toEqual(Object.keys(EXPECTED_ROWS).sort());
  });

  for (const b of BENCHES) {
    it(`${b.id} runs and prints its rows`, { timeout: 900_000 }, async () => {
      const child = spawn(process.execPath, [...NODE_FLAGS, ...argsOf(b, true)], { cwd: join(ROOT, b.dir) });
      let [stdout, stderr] = ['', ''];
      child.stdout.on('data', (d: Buffer) => void (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => void (stderr += d.toString()));
      const timer = setTimeout(() => child.kill(), 880_000);
      const [code] = (await once(child, 'close')) as [number | null];
      clearTimeout(timer);
      expect(code, `${stdout}\n${stderr}`).toBe(0);
      const figures = parseFigures(stdout);
      expect(figures.map((f) => f.id).sort()).toEqual([...EXPECTED_ROWS[b.id]!].sort());
      for (const f of figures) {
        expect(Number.isFinite(f.ours.value), f.id).toBe(true);
        if (f.reference) expect(Number.isFinite(f.reference.value), f.id).toBe(true);
        if (f.target) expect(typeof f.met, f.id).toBe('boolean');
      }
    });
  }
});
