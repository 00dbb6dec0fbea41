/**
 * CI smoke of `pnpm bench`: every benchmark runs in its tiny mode and must start, finish and print its
 * figures (as FIGURE lines for docs/benchmarks.md). No figure is compared with anything: speed is never
 * a test's verdict on this shared machine. The timeout only stops a hang.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BENCHES, NODE_FLAGS, ROOT, argsOf } from '../bench/benches.js';
import { parseFigures } from '../bench/figure.js';

/** How many figures each benchmark prints: a lost figure fails the smoke. */
const EXPECTED_FIGURES: Record<string, number> = {
  // Three rates of the core (1 in 100 failing, 1 in 10, dictionary records); heap per tracked request.
  'detector-core': 4,
  // Per encoding and stream: serve over HTTP, the bare receiver, and over gRPC for protobuf.
  'detector-serve': 10,
  // A poll span against a request span; a task record's bytes, never polled and polled 64 times.
  'detector-tasks': 3,
  'detector-lag': 4,
  // The decoder, the detector, the pipeline against the reference; the evidence's share.
  'serve-stages': 4,
  'serve-stages-protobuf': 4,
  // The smoke counts the decoder only.
  'serve-instructions': 1,
  // Instructions and time, guard and instrumentation; the lean client.
  client: 5,
  // Live, closed, DELETEd and two churn counts, for each wrapper.
  'client-soak': 10,
  // The client path and the proxy path.
  wire: 2,
  gateway: 8,
  'gateway-tasks': 1,
  // A JSON request and an SSE event.
  'gateway-instructions': 2,
};

describe('pnpm bench smoke', () => {
  it('lists every benchmark of the workspace once', () => {
    expect(BENCHES.map((b) => b.id).sort()).toEqual(Object.keys(EXPECTED_FIGURES).sort());
  });

  for (const b of BENCHES) {
    it(`${b.id} starts and prints its figures`, { timeout: 900_000 }, () => {
      const run = spawnSync(process.execPath, [...NODE_FLAGS, ...argsOf(b, true)], {
        cwd: join(ROOT, b.dir),
        encoding: 'utf8',
        timeout: 880_000,
      });
      expect(run.error, run.stderr).toBeUndefined();
      expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
      const figures = parseFigures(run.stdout);
      expect(figures.length).toBe(EXPECTED_FIGURES[b.id]);
      for (const f of figures) {
        expect(f.bench.length).toBeGreaterThan(0);
        expect(f.id.length).toBeGreaterThan(0);
        expect(Number.isFinite(f.ours.value), f.id).toBe(true);
        if (f.reference) expect(Number.isFinite(f.reference.value), f.id).toBe(true);
        if (f.target) expect(typeof f.met, f.id).toBe('boolean');
      }
    });
  }
});
