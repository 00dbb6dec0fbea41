import { describe, expect, it } from 'vitest';
import { decodeProtobufRequest, type Finding, type SpanRecord } from '@resumewatch/detector';
import { Pipeline } from '../src/doors/pipeline.js';
import { configWith } from '../src/doors/writing-pipeline.js';
import { encodeRequest } from '../../detector/test/helpers/protobuf-encode.js';
import { seedScenario, terminal } from '../../detector/test/helpers/spans.js';
import { workload } from '../../detector/test/helpers/workload.js';

/*
 * serve's pipeline hands the page's evidence the span id's two words the OTLP/protobuf decoder read
 * (SpanSink), in place of parsing the id's hex digits again: every timeline drawn from spans fed so must be
 * the one drawn from the same records fed without them (as OTLP/JSON and analyze feed them), ids above
 * 2^31 in either word included.
 */

function spans(): SpanRecord[] {
  const out = workload(300, 'w', 3);
  const req = (n: number) => ({ session: `s-${n}`, request: n, service: 'svc' });
  out.push(...seedScenario(req(1), 3), terminal(req(2), 1_700_000_100_000, 'X'));
  // Ids with the top bit of each word set: words of 2^31 and more.
  out.forEach((s, i) => {
    if (i % 3 === 0) s.spanId = `f${s.spanId.slice(1, 8)}8${s.spanId.slice(9)}`;
  });
  return out;
}

function pipelineOf(): { pipeline: Pipeline; findings: Finding[] } {
  const findings: Finding[] = [];
  const config = configWith({ evidenceWindowBytes: 64 * 1024 });
  const pipeline = new Pipeline({ config, clock: () => 0, onFinding: (f) => findings.push(f) });
  return { pipeline, findings };
}

describe("the evidence's span ids from the protobuf decoder's words", () => {
  it('draw every timeline as the hex ids of the same records do', () => {
    const bodies: Uint8Array[] = [];
    const all = spans();
    for (let i = 0; i < all.length; i += 64) bodies.push(encodeRequest(all.slice(i, i + 64)));
    // Fed as serve feeds OTLP/protobuf: each record with its id's words.
    const words = pipelineOf();
    for (const body of bodies) expect(words.pipeline.ingestProtobuf(body, {}).invalid).toBe(0);
    // The same records, as the decoder makes them, fed without their words.
    const plain = pipelineOf();
    for (const body of bodies) plain.pipeline.ingest((sink) => decodeProtobufRequest(body, (s) => sink(s)));
    expect(words.findings.length).toBeGreaterThan(20);
    expect(plain.findings).toEqual(words.findings);
    const drawn = (p: Pipeline, fs: Finding[]) => fs.map((f) => p.evidence.timeline(f));
    const expected = drawn(plain.pipeline, plain.findings);
    expect(expected.filter((t) => t !== undefined && t.events.length > 0).length).toBeGreaterThan(20);
    expect(drawn(words.pipeline, words.findings)).toEqual(expected);
    expect(words.pipeline.evidence.stats()).toEqual(plain.pipeline.evidence.stats());
  });
});
