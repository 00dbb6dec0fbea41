/**
 * One result of a benchmark, as a line for `pnpm bench` (bench/run-all.ts, which knows the benchmark)
 * to collect into its table: `FIGURE {"id":"gateway-json","what":"...","target":{...},"ours":{...},...}`.
 * A result is only ever printed from a measurement of the run that prints it; its reference is measured
 * in the same run (alternating rounds, or the same callgrind runs).
 */
interface Target {
  /** As a reader says it: "≤ 1.3x a bare node:http proxy". */
  text: string;
  /** The bound and its direction, on the ratio (default) or on ours' value. */
  bound: number;
  dir: '<=' | '>=';
  on?: 'ratio' | 'ours';
}

export interface Figure {
  /** The row's id, stable from run to run. */
  id: string;
  what: string;
  target?: Target;
  reference?: { what: string; value: number; unit: string; range?: [number, number] };
  ours: { value: number; unit: string; range?: [number, number] };
  /** Median of per-round ratios (time), or the ratio of counts (instructions). */
  ratio?: number;
  ratioRange?: [number, number];
  /** Whether the target is met; undefined without a target. */
  met?: boolean;
  /** For a target not met: the part that holds it (the benchmark's own words). */
  heldBy?: string;
  note?: string;
}

const FIGURE_PREFIX = 'FIGURE ';

/** Prints a result (its `met` computed from its target) and returns it. */
export function figure(f: Omit<Figure, 'met'>): void {
  const t = f.target;
  let met: boolean | undefined;
  if (t) {
    const v = t.on === 'ours' ? f.ours.value : f.ratio;
    met = v !== undefined && Number.isFinite(v) && (t.dir === '<=' ? v <= t.bound : v >= t.bound);
  }
  const out: Figure = { ...f, met, heldBy: met === false ? f.heldBy : undefined };
  console.log(FIGURE_PREFIX + JSON.stringify(out));
}

export function parseFigures(output: string): Figure[] {
  const out: Figure[] = [];
  for (const line of output.split('\n'))
    if (line.startsWith(FIGURE_PREFIX)) out.push(JSON.parse(line.slice(FIGURE_PREFIX.length)) as Figure);
  return out;
}
