import type { Counter } from 'prom-client';
import type { DetectorMetrics } from '../metrics.js';

/** Increments a label-less counter of the contract in both registries (Prometheus and OpenMetrics). */
export function doorCounter(metrics: DetectorMetrics, name: string): (n?: number) => void {
  const counters = [metrics.prometheus, metrics.openMetrics].map(
    (r) => r.getSingleMetric(name) as Counter<string> | undefined,
  );
  return (n = 1) => {
    for (const c of counters) c?.inc(n);
  };
}
