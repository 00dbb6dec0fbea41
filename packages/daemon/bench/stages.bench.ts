/**
 * Where serve's CPU per span goes, without HTTP: one round's bodies fed in this process to each stage of
 * serve's path, in alternating rounds (new span ids every round), by this process's CPU:
 *   parse        the reference decoder (JSON.parse of the text, or protobufjs): the serve figures' reference
 *   decode       serve's decoder alone (spans that cannot matter skipped, as serve does)
 *   detector     decode + the detector, with its metrics (DetectorMetrics), findings counted
 *   no-evidence  serve's writing pipeline without the page's evidence window
 *   pipeline     serve's writing pipeline whole
 * Rows: each stage against the reference; the evidence window's share of the pipeline (target: a tenth
 * of the rate at most). With --instructions the same stages are counted by callgrind instead
 * (instructions per span, warm, 1 and 2 rounds three times each, countInstructions): what load cannot move;
 * each counted child is this file with `--only <stage>`, both sizes in one process, V8 single threaded (its
 * compilers done in the warm-up).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Detector, type SpanRecord } from '@resumewatch/detector';
import {
  alternate,
  arg,
  compare,
  compared,
  countInstructions,
  cpuOf,
  figure,
  measured,
  option,
  type Instructions,
} from '../../../bench/harness.js';
import { configWith, writingPipeline } from '../src/doors/writing-pipeline.js';
import { DetectorMetrics } from '../src/metrics.js';
import { bodies, decoder, reference, spansIn } from './bodies.js';

const argv = process.argv;
const encoding = argv.includes('--protobuf') ? 'protobuf' : 'json';
const only = option('only');
// Counted: WARM rounds warm a stage up (the JIT done with it), then 1, 2, 1, 2, 1, 2 rounds are the measured work.
const WARM = 4;
const ROUNDS = only || argv.includes('--instructions') ? WARM + 9 : arg('rounds', 10, 2);
const REQUESTS = arg('requests', argv.includes('--instructions') ? 1_000 : 6_000, 300);
// A counted child reads the bodies its parent made (making them under callgrind would take minutes).
const kept = option('bodies');
const rounds = kept
  ? (JSON.parse(readFileSync(kept, 'utf8')) as string[][])
      .slice(0, ROUNDS)
      .map((r) => r.map((b) => Buffer.from(b, 'base64')))
  : Array.from({ length: ROUNDS }, (_, i) => bodies(encoding, 'mcp', REQUESTS, `s${i}`, i + 1));
const SPANS = spansIn(encoding, rounds[0]!);
const decode = decoder(encoding);
const noop = (): void => {};
const config = configWith({ maxRequests: 1_000_000 });
const pipeline = (evidence: boolean) => {
  const p = writingPipeline(config, { output: new Writable({ write: (_c, _e, done) => done() }) }).pipeline;
  if (!evidence) p.evidence.observe = p.evidence.reported = noop;
  return (b: Buffer) => p.ingest((sink) => decode(b, sink, p.skipped));
};
const STAGES: Record<string, () => (b: Buffer) => unknown> = {
  parse: () => reference(encoding),
  decode: () => (b) => decode(b, noop, noop),
  detector: () => {
    const metrics = new DetectorMetrics();
    const d = new Detector({ ...config, events: metrics, onFinding: (f) => metrics.finding(f, 0) });
    const sink = (s: SpanRecord): void => void d.ingest(s);
    return (b) => decode(b, sink, () => d.ignored());
  },
  'no-evidence': () => pipeline(false),
  pipeline: () => pipeline(true),
};
const feedRound = async (feed: (b: Buffer) => unknown, r: number) => {
  for (const b of rounds[r]!) feed(b);
  await new Promise((resolve) => setImmediate(resolve)); // findings are written in a microtask
};
const label = `OTLP/${encoding === 'json' ? 'JSON' : 'protobuf'}, MCP spans`;
const refName = encoding === 'json' ? 'JSON.parse' : 'protobufjs';

if (only) {
  // A counted child: round 0 warms the stage up, the rest are the measured work.
  const feed = STAGES[only]!();
  let r = 0;
  for (; r < WARM; r++) await feedRound(feed, r);
  await measured(async (n) => {
    for (const end = r + n; r < end; r++) await feedRound(feed, r);
  });
} else if (argv.includes('--instructions')) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-stages-'));
  const file = join(dir, 'bodies.json');
  writeFileSync(file, JSON.stringify(rounds.map((r) => r.map((b) => b.toString('base64')))));
  const all: Record<string, Awaited<ReturnType<typeof countInstructions>>> = {};
  for (const stage of Object.keys(STAGES)) {
    const args = ['--only', stage, '--bodies', file, `--${encoding}`];
    all[stage] = await countInstructions(import.meta.filename, args, [1, 2], (n) => n * SPANS, ['--single-threaded']);
  }
  rmSync(dir, { recursive: true });
  const per = Object.fromEntries(Object.entries(all).map(([k, c]) => [k, c.total]));
  // Each stage's own: without V8's collector and compilers (given apart, stage by stage, in the note).
  const own = (s: string) => all[s]!.own;
  const each = (k: keyof Instructions) => Object.values(all).map((c) => ` ${c[k].toFixed(0)}`);
  for (const stage of ['decode', 'pipeline'])
    figure({
      id: `instructions-${encoding}-mcp-${stage}`,
      what: `serve's ${stage === 'decode' ? 'decoder alone' : 'pipeline (no HTTP)'}, ${label}: instructions per span, warm`,
      reference: { what: `${refName} of the same bodies`, value: per.parse!, unit: 'instructions/span' },
      ours: { value: per[stage]!, unit: 'instructions/span' },
      ratio: per.parse! / per[stage]!,
      note: `per span without collector and compilers: parse ${own('parse').toFixed(0)}, decode ${own('decode').toFixed(0)}, detector +${(own('detector') - own('decode')).toFixed(0)}, pipeline without the evidence +${(own('no-evidence') - own('detector')).toFixed(0)}, the evidence +${(own('pipeline') - own('no-evidence')).toFixed(0)}; ${Object.keys(all).join(', ')}: collector${each('collector')}, compilers${each('compiler')}; ratio is the rate's (reference / ours); callgrind, 1 and 2 rounds three times each of ${SPANS} spans after ${WARM} warm-up rounds`,
    });
} else {
  const feeds = Object.fromEntries(Object.entries(STAGES).map(([k, make]) => [k, make()]));
  const cpu = await alternate(
    Object.keys(STAGES),
    ROUNDS - 1,
    async (stage, r) => (await cpuOf(() => feedRound(feeds[stage]!, r + 1))) / SPANS,
  );
  for (const stage of ['decode', 'detector', 'pipeline']) {
    // As serve's figures: the stage's rate over the reference's (spans per CPU second).
    const c = compare(cpu.parse!, cpu[stage]!);
    figure({
      id: `stage-${encoding}-mcp-${stage}`,
      what: `serve's ${stage === 'decode' ? 'decoder' : stage === 'detector' ? 'decoder and detector' : 'pipeline'}, ${label}, in process (no HTTP): µs CPU per span`,
      reference: { what: refName, value: c.ours, unit: 'µs/span', range: c.oursRange },
      ours: { value: c.ref, unit: 'µs/span', range: c.refRange },
      ratio: c.ratio,
      ratioRange: c.ratioRange,
      note: "ratio is the rate's: reference µs / ours",
    });
  }
  const share = compare(
    cpu.pipeline!.map((p, i) => p - cpu['no-evidence']![i]!),
    cpu.pipeline!,
  );
  figure({
    id: `evidence-${encoding}-mcp`,
    what: `the page's evidence window, ${label}: µs CPU per span it adds to serve's pipeline`,
    target: { text: '≤ a tenth of the pipeline', bound: 0.1, dir: '<=' },
    ...compared(share, "serve's pipeline whole", 'µs/span'),
    heldBy: "the window's records and attribute values, kept for the page: allocation and collections",
    note: `${ROUNDS - 1} alternating rounds of ${SPANS} spans; this process's CPU (collector threads included)`,
  });
}
