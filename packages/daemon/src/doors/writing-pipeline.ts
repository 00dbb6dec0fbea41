import { METRIC_FINDINGS_DROPPED_TOTAL } from '@resumewatch/semconv';
import { DEFAULT_CONFIG, type ResumewatchConfig } from '../config.js';
import type { Finding } from '@resumewatch/detector';
import { doorCounter } from './door-counters.js';
import { FindingsOutput } from './findings-output.js';
import { Pipeline } from './pipeline.js';

/** What a door that runs the detector (serve, the embedded one) says of its findings and clock. */
export interface WritingPipelineOptions {
  /** Called for every finding, after it is counted and kept for /findings. */
  onFinding?: ((f: Finding) => void) | undefined;
  /** Where findings are written as JSON lines; null for nowhere. Defaults to process.stdout. */
  output?: NodeJS.WritableStream | null | undefined;
  /** Unix ms; drives storm windows and retention. Defaults to Date.now. */
  clock?: (() => number) | undefined;
}

/** The defaults with what `given` sets over them: every door's configuration. */
export function configWith(given: Partial<ResumewatchConfig> = {}): ResumewatchConfig {
  const config: ResumewatchConfig = { ...DEFAULT_CONFIG };
  for (const key of Object.keys(DEFAULT_CONFIG) as (keyof ResumewatchConfig)[]) {
    if (given[key] !== undefined) (config as unknown as Record<string, unknown>)[key] = given[key];
  }
  return config;
}

/**
 * The pipeline of a door, its findings written as JSON lines to `output` (a reader that does not keep
 * up loses lines, counted, never the findings kept for /findings); returns it and the output used.
 */
export function writingPipeline(
  config: ResumewatchConfig,
  options: WritingPipelineOptions,
): { pipeline: Pipeline; output: NodeJS.WritableStream | null } {
  const output = options.output === undefined ? process.stdout : options.output;
  let findingsOut: FindingsOutput | undefined;
  const pipeline = new Pipeline({
    config,
    ...(options.clock ? { clock: options.clock } : {}),
    onFinding: (f, json) => {
      findingsOut?.write(json);
      options.onFinding?.(f);
    },
  });
  if (output)
    findingsOut = new FindingsOutput(
      output,
      config.stdoutBufferBytes,
      doorCounter(pipeline.metrics, METRIC_FINDINGS_DROPPED_TOTAL),
    );
  return { pipeline, output };
}
