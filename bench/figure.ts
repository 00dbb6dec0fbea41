/**
 * One result of a benchmark, as a line for `pnpm bench` (bench/run-all.ts) to collect into its table:
 *
 *   FIGURE {"bench":"gateway","id":"gateway-json","what":"...","target":{...},"ours":{...},"ratio":1.9,"met":false}
 *
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
  /** The benchmark that printed it (bench/benches.ts's id). */
  bench: string;
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

/** The older shape, still printed by packages/daemon/bench until it is on the harness; parseFigures converts it. */
interface LegacyFigure {
  bench: string;
  name: string;
  value: number;
  unit: string;
  range?: [number, number];
  reference?: { name: string; value: number; unit: string; range?: [number, number] };
  ratio?: number;
  target?: string;
  note?: string;
}

const FIGURE_PREFIX = 'FIGURE ';

/** Prints a result (its `met` computed from its target) and returns it. */
export function figure(f: Omit<Figure, 'met'> | LegacyFigure): void {
  if ('name' in f) return void console.log(FIGURE_PREFIX + JSON.stringify(f));
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
    if (line.startsWith(FIGURE_PREFIX)) {
      const f = JSON.parse(line.slice(FIGURE_PREFIX.length)) as Figure & { name?: string; value?: number };
      // A benchmark not yet on the harness prints the older shape: { name, value, unit, reference.name }.
      if (f.ours === undefined && f.value !== undefined) {
        const old = f as unknown as LegacyFigure;
        const ref = f.reference as unknown as { name?: string; what?: string } | undefined;
        if (ref && ref.what === undefined) ref.what = ref.name ?? '';
        Object.assign(f, {
          id: old.name,
          what: old.name,
          ours: { value: old.value, unit: old.unit, range: old.range },
          target: undefined,
        });
        if (old.target) f.note = `target: ${old.target}${f.note ? `; ${f.note}` : ''}`;
      }
      out.push(f);
    }
  return out;
}
