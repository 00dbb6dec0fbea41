import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Detector, decodeProtobufRequest, type Finding, type SpanRecord } from '../src/index.js';
import { hexWord } from '../src/core/ids.js';
import { readHex } from '../src/otlp/strings.js';
import { encodeRequest } from './helpers/protobuf-encode.js';
import { seedScenario, terminal } from './helpers/spans.js';
import { workload } from './helpers/workload.js';

/*
 * The OTLP/protobuf decoder hands its sink each span id's two words (SpanSink), and Detector.ingest takes them in
 * place of parsing the id's hex digits: they must be the words of the record's spanId, and a detector fed
 * them must decide exactly as one that parses the text. The id's text itself is made in JavaScript
 * (strings.ts, hex8): it must be what Buffer's hexSlice gives.
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

describe('span id words from the OTLP/protobuf decoder', () => {
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
    }
  });

  it('are the words of generated span ids, in protobuf (fast-check)', () => {
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
        expect(detect(pb, true)).toEqual(detect(pb, false));
      }),
      { numRuns: 200, seed: 46 },
    );
  });
});

describe('span id text from the OTLP/protobuf decoder', () => {
  it('is what hexSlice gives, for every byte at every place of an 8-byte id, and for ids of other lengths', () => {
    const buf = Buffer.alloc(256 + 16);
    for (let i = 0; i < buf.length; i++) buf[i] = i & 255;
    for (let at = 0; at + 8 <= buf.length; at++) expect(readHex(buf, at, at + 8)).toBe(buf.hexSlice(at, at + 8));
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 40 }), (bytes) => {
        const b = Buffer.from(bytes);
        for (const n of [8, 16, bytes.length]) if (n <= b.length) expect(readHex(b, 0, n)).toBe(b.hexSlice(0, n));
      }),
      { numRuns: 500, seed: 46 },
    );
  });
});

describe('span ids given as text', () => {
  /** The results of a terminal of one request at each given span id, fed in order to one detector. */
  const results = (ids: string[]) => {
    const detector = new Detector({ clock: () => 0 });
    return ids.map((spanId, i) =>
      detector.ingest({
        ...terminal({ session: 's', request: 1, service: 'svc' }, 1_700_000_000_000 + i, 'X'),
        spanId,
      }),
    );
  };

  it('are read as they always were: 16 code units, upper case as lower, a non-hex code unit as 0', () => {
    // Wrong lengths are invalid.
    expect(results(['', '0123456789abcde', '0123456789abcdef0', '0123456789abcdef'.repeat(4)])).toEqual(
      Array(4).fill('invalid'),
    );
    // Upper case is the same id as lower case.
    expect(results(['0123456789abcdef', '0123456789ABCDEF', '0123456789AbCdEf'])).toEqual([
      'accepted',
      'duplicate',
      'duplicate',
    ]);
    // All zeros, and ids of no hex digit at all, are one id; a non-hex code unit reads as the digit 0.
    expect(results(['0000000000000000', 'zzzzzzzzzzzzzzzz', '----------------', '\u0660'.repeat(16)])).toEqual([
      'accepted',
      'duplicate',
      'duplicate',
      'duplicate',
    ]);
    expect(results(['1000000000000001', '1g00000000000001', '1000000000000011'])).toEqual([
      'accepted',
      'duplicate',
      'accepted',
    ]);
  });
});
