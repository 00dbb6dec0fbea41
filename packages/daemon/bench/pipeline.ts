/**
 * Where serve's CPU per span goes, without HTTP: the serve benchmark's OTLP/JSON bodies (512 spans a
 * body, 1 request in 10 failing) fed in this process to stages of serve's path:
 *   parse        JSON.parse of the bodies' text (the reference of the serve figures)
 *   decode       the OTLP/JSON decoder alone, into a sink that drops the records
 *   detector     decode + a bare detector (no metrics, no findings output, no evidence)
 *   metrics      decode + the detector reporting to the metrics (DetectorMetrics, findings counted)
 *   no-evidence  serve's pipeline without the page's evidence (ids bounded, detector, metrics, each finding
 *                as JSON for /findings and a stream that drops the lines)
 *   pipeline     serve's pipeline whole
 *   pipeline-all serve's pipeline whole without skipping the spans that cannot matter (before the skipping)
 * Every stage but pipeline-all skips the spans that cannot matter, as serve does (onSkipped).
 * The difference between two stages is what the later one adds; what the serve benchmark's CPU per span
 * adds to `pipeline` is the HTTP door.
 *
 *   node --import tsx bench/pipeline.ts [--smoke] [--mixed] [--protobuf]   (pnpm bench serve-stages serve-stages-protobuf)
 * --mixed: the mixed stream of `bench/run.ts serve-mixed` (1 span in 10 MCP, 9 an application's HTTP,
 * database and framework spans; 3,720 MCP spans and 33,480 others a round) instead of the MCP workload.
 * --protobuf: the same spans as OTLP/protobuf bodies (as `bench/run.ts serve-protobuf` and
 * `serve-mixed-protobuf` make them), decoded by serve's protobuf decoder; `parse` is then protobufjs's
 * ExportTraceServiceRequest.decode, the reference of the protobuf figures. With --bodies, a round's
 * bodies are kept as base64 in round-<i>.pb.json.
 * runs every stage in alternating rounds, by this process's CPU time (GC helper threads included, as in
 * serve's), and the main thread's GC pauses that fell in each stage's rounds (a stage's survivors are also
 * copied in the next stage's scavenges: read them side by side, not as exact shares); --stages a,b,c runs
 * only those. On a shared machine that time moves a lot; instruction counts do not:
 *   valgrind --tool=callgrind node --import tsx bench/pipeline.ts --only pipeline --rounds 1
 *   valgrind --tool=callgrind node --import tsx bench/pipeline.ts --only pipeline --rounds 3
 * make the same bodies and feed one stage 1 or 3 rounds: the difference of the two totals over the spans
 * of two rounds is the stage's instructions per span, warm. Repeatable to about 40 instructions a span for
 * the decoder (bench/notes.md, "Ingest, part 3"):
 *   node --import tsx bench/pipeline.ts --bodies /tmp/bodies --rounds 7 --only none      (writes them once)
 *   valgrind --tool=callgrind node --single-threaded --import tsx bench/pipeline.ts \
 *     --bodies /tmp/bodies --rounds 1|7 --only decode|none
 * reads the rounds' bodies from files instead of making them, and only as many rounds as are fed; `none`
 * feeds nothing (what reading the files costs, to subtract); --single-threaded puts V8's collections and
 * compilations on the main thread, where they fall the same way in every run.
 * One run gives each round's count apart: the process calls process.cpuUsage() (libuv's uv_getrusage) before
 * the first round and after each, so that
 *   valgrind --tool=callgrind --dump-before=uv_getrusage --callgrind-out-file=/tmp/cg/out.%p \
 *     node --single-threaded --import tsx bench/pipeline.ts --bodies /tmp/bodies --rounds 3 --only pipeline
 * writes one file per round (out.<pid>.2 to .4; .1 is the start, the last the exit): the totals of the
 * later rounds over the spans of a round are the stage's instructions per span, warm.
 * What a stage costs the collector, in bytes that do not move with the load: the same two runs under
 * `node --trace-gc-nvp` (no valgrind), the sums of `new_space_survived=` (copied within the young
 * generation) and `promoted=` over the difference of the rounds' spans (bench/notes.md, "the evidence
 * window's collections").
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Writable } from 'node:stream';
import { PerformanceObserver, performance, type PerformanceEntry } from 'node:perf_hooks';
import {
  Detector,
  decodeJsonRequest,
  decodeProtobufRequest,
  type DecodeResult,
  type SpanRecord,
} from '@resumewatch/detector';
import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';
import { configWith, writingPipeline } from '../src/doors/writing-pipeline.js';
import { DetectorMetrics } from '../src/metrics.js';
import { otlpBodies, workload } from '../../detector/test/helpers/workload.js';
import { mixedJsonBodies, mixedRequests } from '../../detector/test/helpers/app-spans.js';
import { figure } from '../../../bench/figure.js';
import { ExportTraceServiceRequest, otlpProtobufBodies, protobufOfJsonRequest } from './otlp-proto.js';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    mixed: { type: 'boolean', default: false },
    protobuf: { type: 'boolean', default: false },
    only: { type: 'string' },
    rounds: { type: 'string' },
    bodies: { type: 'string' },
    stages: { type: 'string' },
  },
});
const SMOKE = values.smoke;
const ROUNDS = SMOKE ? 2 : 12;
const WARM = SMOKE ? 0 : 2;
const REQUESTS = SMOKE ? 600 : 6_000;
const PROTOBUF = values.protobuf;
const jsonOptions = { detectorAttributesOnly: true, maxDepth: 64 } as const;
/** Serve's options for the body's encoding (http-receiver.ts): protobuf has no depth to bound. */
const decodeOptions = PROTOBUF ? ({ detectorAttributesOnly: true } as const) : jsonOptions;

/** Round i's bodies, as the text (OTLP/JSON) or base64 (protobuf) kept in the --bodies files. */
function makeBodies(i: number): string[] {
  if (PROTOBUF) {
    const pb = values.mixed
      ? mixedRequests(workload(REQUESTS / 5, `p${i}`), { service: 'bench', seed: i + 1, intValue: Number }).map(
          protobufOfJsonRequest,
        )
      : otlpProtobufBodies(workload(REQUESTS, `p${i}`), 512, ATTR_SERVICE_NAME);
    return pb.map((b) => b.toString('base64'));
  }
  return values.mixed
    ? mixedJsonBodies(workload(REQUESTS / 5, `p${i}`), { service: 'bench', seed: i + 1 })
    : otlpBodies(workload(REQUESTS, `p${i}`), 512);
}
/** Round i's bodies: made, or read from (and written to, the first time) the --bodies directory. */
function roundBodies(i: number): string[] {
  const dir = values.bodies;
  if (dir === undefined) return makeBodies(i);
  const file = join(dir, PROTOBUF ? `round-${i}.pb.json` : `round-${i}.json`);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as string[];
  const bodies = makeBodies(i);
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, JSON.stringify(bodies));
  return bodies;
}
// Without --bodies every round's bodies are made first, whatever is fed: the counted runs differ only in
// what they feed. With it, only the rounds fed are read.
const made = values.only ? (values.bodies === undefined ? 3 : Number(values.rounds ?? 1)) : ROUNDS;
const rounds = Array.from({ length: made }, (_, i) =>
  roundBodies(i).map((kept) =>
    PROTOBUF ? { text: '', bytes: Buffer.from(kept, 'base64') } : { text: kept, bytes: Buffer.from(kept) },
  ),
);
/** Serve's decoder for the bodies' encoding. */
function decodeBody(
  bytes: Buffer,
  sink: (s: SpanRecord) => void,
  options: typeof decodeOptions & { onSkipped?: () => void },
): DecodeResult {
  return PROTOBUF ? decodeProtobufRequest(bytes, sink, options) : decodeJsonRequest(bytes, sink, options);
}
let spansPerRound = 0;
for (const b of rounds[0]!) decodeBody(b.bytes, () => spansPerRound++, decodeOptions);

type Body = (typeof rounds)[number][number];
type Feed = (body: Body) => void;

const drop = (): Writable =>
  new Writable({
    write(_chunk, _enc, done) {
      done();
    },
  });
const config = configWith({ maxRequests: 1_000_000 });
const noop = (): void => {};
/** The decoder as serve runs it: a span that cannot matter skipped (here dropped; serve counts it). */
const skipping = { ...decodeOptions, onSkipped: noop };

/** Each stage, made only when asked for (a detector sized for 1 M requests is a few tens of MB). */
const stages: Record<string, () => Feed> = {
  none: () => noop,
  parse: () => (PROTOBUF ? (b) => ExportTraceServiceRequest.decode(b.bytes) : (b) => JSON.parse(b.text)),
  decode: () => (b) => decodeBody(b.bytes, noop, skipping),
  detector: () => {
    const d = new Detector({ ...config, onFinding: noop });
    const sink = (s: SpanRecord): void => void d.ingest(s);
    const options = { ...decodeOptions, onSkipped: () => d.ignored() };
    return (b) => decodeBody(b.bytes, sink, options);
  },
  metrics: () => {
    const metrics = new DetectorMetrics();
    const d = new Detector({ ...config, events: metrics, onFinding: (f) => metrics.finding(f, 0) });
    const sink = (s: SpanRecord): void => void d.ingest(s);
    const options = { ...decodeOptions, onSkipped: () => d.ignored() };
    return (b) => decodeBody(b.bytes, sink, options);
  },
  'no-evidence': () => {
    const p = writingPipeline(config, { output: drop() }).pipeline;
    p.evidence.observe = noop;
    p.evidence.reported = noop;
    const options = { ...decodeOptions, onSkipped: p.skipped };
    return (b) => p.ingest((sink) => decodeBody(b.bytes, sink, options));
  },
  pipeline: () => {
    const p = writingPipeline(config, { output: drop() }).pipeline;
    const options = { ...decodeOptions, onSkipped: p.skipped };
    return (b) => p.ingest((sink) => decodeBody(b.bytes, sink, options));
  },
  /** The pipeline whole without skipping the spans that cannot matter: every span made and fed to the detector. */
  'pipeline-all': () => {
    const p = writingPipeline(config, { output: drop() }).pipeline;
    return (b) => p.ingest((sink) => decodeBody(b.bytes, sink, decodeOptions));
  },
};

if (values.only !== undefined) {
  const make = stages[values.only];
  if (!make) throw new Error(`no stage ${values.only}; one of ${Object.keys(stages).join(', ')}`);
  const feed = make();
  // Each round ends with a process.cpuUsage() call, which calls libuv's uv_getrusage: under
  // `valgrind --tool=callgrind --dump-before=uv_getrusage` every round's instructions are a dump of their own.
  process.cpuUsage();
  for (const bodies of rounds.slice(0, Number(values.rounds ?? 1))) {
    for (const b of bodies) feed(b);
    // Findings are written to the output in a microtask.
    await new Promise((r) => setImmediate(r));
    process.cpuUsage();
  }
} else {
  const vs = Object.entries(stages)
    .filter(([name]) => name !== 'none' && (values.stages === undefined || values.stages.split(',').includes(name)))
    .map(([name, make]) => [name, make()] as const);
  const cpu = new Map<string, number[]>(vs.map(([k]) => [k, []]));
  // The main thread's GC pauses, placed in the round of the stage they fell in: the collections a stage's
  // survivors cost (the evidence window's records, say) in time, which instruction counts understate.
  const pauses: PerformanceEntry[] = [];
  const gcObserver = new PerformanceObserver((list) => void pauses.push(...list.getEntries()));
  gcObserver.observe({ entryTypes: ['gc'] });
  const intervals: { name: string; from: number; to: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Each stage gets the round's bodies (new span ids each round); the order rotates per round.
    for (let j = 0; j < vs.length; j++) {
      const [name, feed] = vs[(j + round) % vs.length]!;
      const c0 = process.cpuUsage();
      const from = performance.now();
      for (const b of rounds[round]!) feed(b);
      await new Promise((r) => setImmediate(r));
      const u = process.cpuUsage(c0);
      if (round >= WARM) {
        cpu.get(name)!.push((u.user + u.system) / spansPerRound);
        intervals.push({ name, from, to: performance.now() });
      }
    }
  }
  await new Promise((r) => setTimeout(r, 10));
  gcObserver.disconnect();
  const gc = new Map<string, number[]>(vs.map(([k]) => [k, []]));
  for (const { name, from, to } of intervals) {
    let ms = 0;
    for (const p of pauses) if (p.startTime >= from && p.startTime < to) ms += p.duration;
    gc.get(name)!.push((ms * 1000) / spansPerRound);
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  console.log(
    `µs of CPU per span (median of ${ROUNDS - WARM} rounds of ${spansPerRound} spans; min–max; main-thread GC pauses):`,
  );
  let previous = 0;
  for (const [name] of vs) {
    const xs = cpu.get(name)!;
    const m = median(xs);
    const added = name === 'parse' || name === 'decode' ? '' : `  +${(m - previous).toFixed(2)}`;
    console.log(
      `  ${name.padEnd(12)} ${m.toFixed(2)}  (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})${added}` +
        `  GC ${median(gc.get(name)!).toFixed(2)}`,
    );
    previous = m;
  }
  // For `pnpm bench` (docs/benchmarks.md): each stage's µs per span beside the parse of the same bodies
  // (JSON.parse or protobufjs), and what it adds to the stage before it.
  const workloadName = `${PROTOBUF ? 'OTLP/protobuf' : 'OTLP/JSON'}, ${values.mixed ? 'mixed stream' : 'MCP spans'}`;
  const parse = cpu.has('parse') ? median(cpu.get('parse')!) : undefined;
  let before: number | undefined;
  for (const [name] of vs) {
    const xs = cpu.get(name)!;
    const m = median(xs);
    figure({
      bench: 'serve-stages',
      name: `${workloadName}: ${name}`,
      value: m,
      unit: 'µs/span',
      range: [Math.min(...xs), Math.max(...xs)],
      ...(parse !== undefined && name !== 'parse'
        ? {
            reference: { name: PROTOBUF ? 'protobufjs decode' : 'JSON.parse', value: parse, unit: 'µs/span' },
            // As serve's figures: the stage's rate over the parse's (spans per CPU second).
            ratio: parse / m,
          }
        : {}),
      note:
        (before === undefined || name === 'decode' ? '' : `adds ${(m - before).toFixed(2)} µs to the stage above; `) +
        `main-thread GC pauses ${median(gc.get(name)!).toFixed(2)} µs/span; CPU of this process, in-process, no HTTP`,
    });
    if (name !== 'parse') before = m;
  }
}
