import { SPAN_REQUEST_TERMINAL } from '@resumewatch/semconv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Detector, decodeJsonRequest, decodeProtobufRequest, type Finding, type SpanRecord } from '../src/index.js';
import { hexWord } from '../src/core/ids.js';
import { otlpJson } from './helpers/otlp.js';
import { encodeRequest } from './helpers/protobuf-encode.js';
import { seedScenario, terminal } from './helpers/spans.js';
import { workload } from './helpers/workload.js';

/*
 * The OTLP decoders hand their sink each span id's two words (SpanSink), and Detector.ingest takes them in
 * place of parsing the id's hex digits: they must be the words of the record's spanId whatever the id's
 * spelling on the wire, and a detector fed them must decide exactly as one that parses the text.
 */

interface Decoded {
  records: SpanRecord[];
  words: [number, number][];
}

type Decode = (sink: (s: SpanRecord, words: Uint32Array) => void) => unknown;

function decoded(decode: Decode): Decoded {
  const out: Decoded = { records: [], words: [] };
  decode((s, words) => {
    out.records.push(s);
    out.words.push([words[0]!, words[1]!]);
  });
  return out;
}

function expectWordsOfIds(d: Decoded): void {
  expect(d.words).toEqual(d.records.map((s) => [hexWord(s.spanId, 0), hexWord(s.spanId, 8)]));
}

/** Every ingest result and finding, fed with the decoder's words or without them. */
function detect(d: Decoded, withWords: boolean): { results: string[]; findings: Finding[] } {
  const findings: Finding[] = [];
  const detector = new Detector({ onFinding: (f) => findings.push(f), clock: () => 0, maxRequests: 64 });
  const scratch = new Uint32Array(2);
  const results = d.records.map((s, i) => {
    if (!withWords) return detector.ingest(s);
    scratch[0] = d.words[i]![0];
    scratch[1] = d.words[i]![1];
    return detector.ingest(s, scratch);
  });
  detector.flush();
  return { results, findings };
}

/** Spans with their terminals delivered again (duplicates by span id) and evictions (a small table). */
function spans(): SpanRecord[] {
  const out = workload(200, 'w', 3);
  const req = (n: number) => ({ session: `s-${n}`, request: n, service: 'svc' });
  out.push(...seedScenario(req(1), 3), terminal(req(2), 1_700_000_100_000, 'X'));
  // Delivered again: the same span ids, which the duplicate check must recognise by the words.
  out.push(...out.slice(0, 150));
  return out;
}

describe('span id words from the OTLP decoders', () => {
  it('are the words of each record`s spanId, and the detector fed them decides as one that parses the ids', () => {
    const list = spans();
    // Bodies of 40 spans (the test encoder spreads arrays into arguments).
    const bodies: Uint8Array[] = [];
    for (let i = 0; i < list.length; i += 40) bodies.push(encodeRequest(list.slice(i, i + 40)));
    for (const slim of [false, true]) {
      const pb = decoded((sink) => {
        for (const body of bodies) decodeProtobufRequest(body, sink, { detectorAttributesOnly: slim });
      });
      expect(pb.records).toHaveLength(list.length);
      expectWordsOfIds(pb);
      const withWords = detect(pb, true);
      expect(withWords).toEqual(detect(pb, false));
      expect(withWords.results).toContain('duplicate');
      expect(withWords.findings.length).toBeGreaterThan(10);
      const json = decoded((sink) =>
        decodeJsonRequest(Buffer.from(JSON.stringify(otlpJson(list))), sink, { detectorAttributesOnly: slim }),
      );
      expectWordsOfIds(json);
      expect(detect(json, true)).toEqual(detect(json, false));
    }
  });

  it('are right for every spelling of a JSON span id: upper case, base64, escaped digits, with skipped and invalid spans between', () => {
    const id = 'b7ad6b7169203331';
    const span = (spanId: string, name = SPAN_REQUEST_TERMINAL) =>
      `{"traceId":"af7651916cd43dd8448eb211c80319ca","spanId":"${spanId}","name":"${name}","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000000000001"}`;
    const spelled = [
      id,
      id.toUpperCase(),
      Buffer.from(id, 'hex').toString('base64'),
      '\\u0062' + id.slice(1),
      'ffffffff00000000',
      '0000000080000000',
    ];
    const body = `{"resourceSpans":[{"scopeSpans":[{"spans":[${[
      ...spelled.map((s) => span(s)),
      span('not hex at all!!'),
      span('0123', 'GET'),
      span('0123456789abcdef', 'GET'),
      span('fedcba9876543210'),
    ].join(',')}]}]}]}`;
    for (const onSkipped of [undefined, () => {}]) {
      const d = decoded((sink) =>
        decodeJsonRequest(Buffer.from(body), sink, { detectorAttributesOnly: true, onSkipped }),
      );
      expect(d.records.map((s) => s.spanId)).toEqual([
        id,
        id,
        id,
        id,
        'ffffffff00000000',
        '0000000080000000',
        ...(onSkipped ? [] : ['0123456789abcdef']),
        'fedcba9876543210',
      ]);
      expectWordsOfIds(d);
    }
  });

  it('are the words of generated span ids, in protobuf and JSON (fast-check)', () => {
    const hexId = fc.uint8Array({ minLength: 8, maxLength: 8 }).map((b) => Buffer.from(b).toString('hex'));
    fc.assert(
      fc.property(fc.array(hexId, { minLength: 1, maxLength: 20 }), (ids) => {
        const list = ids.map((spanId, i) => ({
          ...terminal({ session: 's', request: i, service: 'svc' }, 1_700_000_000_000 + i, 'X'),
          spanId,
        }));
        const pb = decoded((sink) =>
          decodeProtobufRequest(encodeRequest(list), sink, { detectorAttributesOnly: true }),
        );
        expect(pb.records.map((s) => s.spanId)).toEqual(ids);
        expectWordsOfIds(pb);
        const json = decoded((sink) => decodeJsonRequest(Buffer.from(JSON.stringify(otlpJson(list))), sink));
        expectWordsOfIds(json);
        expect(detect(pb, true)).toEqual(detect(pb, false));
      }),
      { numRuns: 200, seed: 46 },
    );
  });
});
