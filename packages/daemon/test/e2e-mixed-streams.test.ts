// A mixed stream (an application's exporter sending everything: its HTTP, database and framework spans
// beside its MCP spans) gives the same findings, page evidence, metrics and counts whether the decoders
// skip the spans that cannot matter (onSkipped) or hand every span to the detector. Every lab scenario's
// spans, recorded through the real instrumentation and OTLP/JSON exporter, are mixed 1 in 10 with an
// application's spans (test/helpers/app-spans.ts) and fed to serve's pipeline through both decoders, in
// OTLP/JSON and OTLP/protobuf, with and without the skipping.
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { LAB_SERVER_SCENARIO_NAMES, V2_SERVER_SCENARIO_NAMES } from '@resumewatch/lab';
import { decodeJsonRequest, decodeProtobufRequest, type Finding, type SpanRecord } from '@resumewatch/detector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configWith } from '../src/doors/writing-pipeline.js';
import { Pipeline } from '../src/doors/pipeline.js';
import { mixedRequests } from '../../detector/test/helpers/app-spans.js';
import { protobufOfJsonRequest } from '../bench/bodies.js';
import { recordLabScenario, recordModernScenario, type OtlpBatch } from './helpers/otlp-recording.js';

const TIMEOUT = 90_000;

interface Recorded {
  name: string;
  /** Every span of the scenario, with all its attributes, in the order the exporter sent them. */
  spans: SpanRecord[];
}

let recorded: Recorded[];

const spansOf = (batches: OtlpBatch[]): SpanRecord[] => {
  const out: SpanRecord[] = [];
  for (const b of batches) decodeJsonRequest(b.body, (s) => void out.push(s));
  return out;
};

beforeAll(async () => {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  // Each scenario once, all at once, each on its own server (server-restart's deadline short, as in the
  // lab's own tests).
  recorded = await Promise.all([
    ...LAB_SERVER_SCENARIO_NAMES.map(async (name) => {
      const options = name === 'server-restart' ? { requestTimeoutMs: 2_000 } : {};
      return { name, spans: spansOf(await recordLabScenario(name, `mix.${name}`, options)) };
    }),
    ...V2_SERVER_SCENARIO_NAMES.map(async (name) => ({
      name,
      spans: spansOf(await recordModernScenario(name, `mix.${name}`)),
    })),
  ]);
}, TIMEOUT);
afterAll(() => propagation.disable());

/** The detector's clock: fixed, so that the detection lag and every timed metric are the same in both runs. */
const CLOCK = Date.UTC(2030, 0, 1);

/** A finding as the comparison sees it: every field, keys in one order. */
const canonical = (f: Finding): string =>
  JSON.stringify(Object.fromEntries(Object.entries(f).sort(([a], [b]) => (a < b ? -1 : 1))));

interface Outcome {
  findings: string[];
  /** Each finding's timeline on the page (its events, bytes and drops), in the findings' order. */
  timelines: string[];
  evidence: string;
  stats: string;
  metrics: string;
  skipped: number;
  invalid: number;
}

/** Feeds the bodies to a serve pipeline through one decoder, skipping or not; what it found and kept. */
async function feed(bodies: (string | Buffer)[], protobuf: boolean, skip: boolean): Promise<Outcome> {
  const config = configWith({ maxRequests: 10_000 });
  const findings: Finding[] = [];
  const pipeline = new Pipeline({ config, clock: () => CLOCK, onFinding: (f) => void findings.push(f) });
  const onSkipped = skip ? pipeline.skipped : undefined;
  let skipped = 0;
  let invalid = 0;
  for (const body of bodies) {
    const result = pipeline.ingest((sink) =>
      protobuf
        ? decodeProtobufRequest(body as Buffer, sink, { detectorAttributesOnly: true, onSkipped })
        : decodeJsonRequest(body, sink, { detectorAttributesOnly: true, maxDepth: config.maxJsonDepth, onSkipped }),
    );
    skipped += result.skipped ?? 0;
    invalid += result.invalid;
  }
  // Past every window: open storms end, re-issues settle, and their findings join the rest.
  pipeline.detector.advance(CLOCK + 1);
  pipeline.detector.flush();
  return {
    findings: findings.map(canonical),
    timelines: findings.map((f) => {
      const t = pipeline.evidence.timeline(f);
      return JSON.stringify(t ? { events: t.events, bytes: t.bytes, dropped: t.dropped } : null);
    }),
    evidence: JSON.stringify(pipeline.evidence.stats()),
    stats: JSON.stringify(pipeline.detector.stats()),
    metrics: await pipeline.metrics.prometheus.metrics(),
    skipped,
    invalid,
  };
}

describe('a mixed stream: the same findings and evidence with the spans that cannot matter skipped', () => {
  it('records every lab scenario', () => {
    expect(recorded.map((r) => r.name).sort()).toEqual(
      [...LAB_SERVER_SCENARIO_NAMES, ...V2_SERVER_SCENARIO_NAMES].sort(),
    );
    for (const r of recorded) expect(r.spans.length, r.name).toBeGreaterThan(0);
  });

  for (const name of [...LAB_SERVER_SCENARIO_NAMES, ...V2_SERVER_SCENARIO_NAMES]) {
    it(`${name}: OTLP/JSON and OTLP/protobuf, skipping on and off`, async () => {
      const { spans } = recorded.find((r) => r.name === name)!;
      // 64 spans a body: the scenario's spans spread over several export requests, as a batch processor sends them.
      const json = mixedRequests(spans, { perBody: 64, seed: spans.length });
      const app = spans.length * 9;
      const jsonBodies = json.map((r) => JSON.stringify(r));
      const pbBodies = mixedRequests(spans, { perBody: 64, seed: spans.length, intValue: Number }).map(
        protobufOfJsonRequest,
      );
      const plain = await feed(jsonBodies, false, false);
      // The scenario was detected as it is (a finding where it has one), through the mix.
      const alone = await feed(
        [JSON.stringify({ resourceSpans: json.flatMap((r) => (r as { resourceSpans: unknown[] }).resourceSpans) })],
        false,
        false,
      );
      expect(plain.findings).toEqual(alone.findings);
      for (const [protobuf, bodies] of [
        [false, jsonBodies],
        [true, pbBodies],
      ] as const) {
        const all = protobuf ? await feed(bodies, true, false) : plain;
        const skipping = await feed(bodies, protobuf, true);
        expect(all.skipped).toBe(0);
        // Every application span was skipped, no MCP span was.
        expect(skipping.skipped).toBe(app);
        expect(skipping.invalid).toBe(0);
        expect(skipping.findings).toEqual(all.findings);
        expect(skipping.timelines).toEqual(all.timelines);
        expect(skipping.evidence).toEqual(all.evidence);
        expect(skipping.stats).toEqual(all.stats);
        expect(skipping.metrics).toEqual(all.metrics);
        // The two encodings of the same spans: the same findings (times apart: each decoder has its own
        // rounding of nanoseconds to milliseconds).
        expect(all.findings.length).toBe(plain.findings.length);
      }
    });
  }
});
