/**
 * One line per measured figure, for `pnpm bench` (bench/run-all.ts) to collect into docs/benchmarks.md.
 * A benchmark prints its own readable lines too; this line is the machine-readable copy:
 *
 *   FIGURE {"bench":"detector","name":"core, 1 in 100 failing","value":1.2e6,"unit":"spans/s",...}
 *
 * `reference` is what the figure is measured against in the same run (a bare SDK client, a bare
 * JSON.parse, protobufjs decoding), `target` what issue 14 asks for; both optional. A figure is only
 * ever printed from a measurement of the run that prints it.
 */
export interface Figure {
  /** The benchmark that measured it: detector, guard, instrumentation, soak. */
  bench: string;
  name: string;
  value: number;
  unit: string;
  /** Spread over rounds or runs of this process, when measured: [min, max]. */
  range?: [number, number];
  reference?: { name: string; value: number; unit: string; range?: [number, number] };
  /** value / reference.value (or the ratio the benchmark defines), when it is the figure that matters. */
  ratio?: number;
  target?: string;
  note?: string;
}

const FIGURE_PREFIX = 'FIGURE ';

export function figure(f: Figure): void {
  console.log(FIGURE_PREFIX + JSON.stringify(f));
}

export function parseFigures(output: string): Figure[] {
  const out: Figure[] = [];
  for (const line of output.split('\n'))
    if (line.startsWith(FIGURE_PREFIX)) out.push(JSON.parse(line.slice(FIGURE_PREFIX.length)) as Figure);
  return out;
}
