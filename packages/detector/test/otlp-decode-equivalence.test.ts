import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { OTLPTraceExporter as HttpExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_SERVICE_NAME,
  GuardAction,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
  StreamKind,
  mcpRequestSpanName,
} from '@resumewatch/semconv';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { otlpBodies, workload } from './helpers/workload.js';
import {
  Detector,
  OtlpDecodeError,
  camelCaseOtlpFieldNames,
  decodeJsonRequest,
  decodeProtobufRequest,
  type DecodeResult,
  type Finding,
  type SpanRecord,
} from '../src/index.js';
import { DETECTOR_ATTRIBUTE_KEYS, isContractSpan, isRequestSpanKey } from '../src/otlp/detector-keys.js';
import { checkJsonDepth } from '../src/otlp/json-depth.js';
import { referenceDecodeJsonRequest } from './helpers/otlp-json-reference.js';
import { emit, otlpJson } from './helpers/otlp.js';
import { byteMutation, mutated } from './helpers/byte-mutations.js';
import { encodeRequest } from './helpers/protobuf-encode.js';
import { reattach, resume, seedScenario, terminal } from './helpers/spans.js';

/*
 * The decoders the receivers use now (the OTLP/JSON scanner; protobuf converting only the detector's
 * attributes) against the decoding they replaced (JSON.parse of the whole body, camelCaseOtlpFieldNames,
 * then the walk over the objects: test/helpers/otlp-json-reference.ts; protobuf converting every
 * attribute), on the same bodies: the same records (the detector's attributes of them, for the slim
 * decoders), the same counts and errors, and the same findings from a Detector fed each.
 */

interface Run {
  records: SpanRecord[];
  result?: Pick<DecodeResult, 'spans' | 'invalid' | 'firstError'>;
  error?: string;
}

function run(decode: (sink: (s: SpanRecord) => void) => DecodeResult): Run {
  const records: SpanRecord[] = [];
  try {
    const r = decode((s) => records.push({ ...s, attributes: { ...s.attributes } }));
    return { records, result: { spans: r.spans, invalid: r.invalid, firstError: r.firstError } };
  } catch (e) {
    if (!(e instanceof OtlpDecodeError)) throw e;
    return { records, error: e.message };
  }
}

/** The JSON decoding the receivers did before: depth check, JSON.parse, snake_case renamed (as analyze did), the walk. */
function referenceJson(body: Buffer, slim: boolean, maxDepth: number | undefined): Run {
  return run((sink) => {
    if (maxDepth !== undefined) checkJsonDepth(body, maxDepth);
    let doc: unknown;
    try {
      doc = JSON.parse(body.toString('utf8'));
    } catch (e) {
      throw new OtlpDecodeError(`malformed JSON: ${(e as Error).message}`);
    }
    // (A string given to the reference decoder would be parsed again: the text of the receiver's body was parsed once.)
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
      throw new OtlpDecodeError('malformed OTLP/JSON: the body is not a JSON object');
    camelCaseOtlpFieldNames(doc);
    return referenceDecodeJsonRequest(doc, sink, { detectorAttributesOnly: slim });
  });
}

/** What the detector reads of a record: every field, and the attributes of DETECTOR_ATTRIBUTE_KEYS. */
function detectorView(s: SpanRecord): SpanRecord {
  const attributes: Record<string, unknown> = {};
  for (const key of Object.keys(s.attributes)) {
    if (DETECTOR_ATTRIBUTE_KEYS.includes(key) && (isContractSpan(s.name) || isRequestSpanKey(key)))
      attributes[key] = s.attributes[key];
  }
  return { ...s, attributes: attributes as SpanRecord['attributes'] };
}

function expectSameRun(now: Run, before: Run, exactMessages: boolean): void {
  expect(now.error === undefined, `now: ${now.error}; before: ${before.error}`).toBe(before.error === undefined);
  if (before.error !== undefined) {
    // A syntax error is worded by the scanner, not by V8; every other error is the same sentence.
    if (exactMessages && !before.error.startsWith('malformed JSON:')) expect(now.error).toBe(before.error);
    else expect(now.error!.split(':')[0]).toBe(before.error.split(':')[0]);
  } else expect(now.result).toEqual(before.result);
  expect(now.records).toStrictEqual(before.records);
}

/** The new JSON path against the old one, full and detector-only, and the findings of a Detector fed each. */
function compareJson(body: Buffer, maxDepth?: number): void {
  const full = run((sink) => decodeJsonRequest(body, sink, { maxDepth }));
  expectSameRun(full, referenceJson(body, false, maxDepth), true);
  const slim = run((sink) => decodeJsonRequest(body, sink, { detectorAttributesOnly: true, maxDepth }));
  const before = referenceJson(body, true, maxDepth);
  expectSameRun(slim, { ...before, records: before.records.map(detectorView) }, true);
  expect(detect([slim.records])).toEqual(detect([before.records]));
  expectSkippedOnlyWhatCannotMatter(
    (sink, onSkipped) => decodeJsonRequest(body, sink, { detectorAttributesOnly: true, maxDepth, onSkipped }),
    slim,
  );
}

function compareProtobuf(body: Uint8Array): void {
  const before = run((sink) => decodeProtobufRequest(body, sink));
  const slim = run((sink) => decodeProtobufRequest(body, sink, { detectorAttributesOnly: true }));
  expectSameRun(slim, { ...before, records: before.records.map(detectorView) }, true);
  expect(detect([slim.records])).toEqual(detect([before.records]));
  expectSkippedOnlyWhatCannotMatter(
    (sink, onSkipped) => decodeProtobufRequest(body, sink, { detectorAttributesOnly: true, onSkipped }),
    slim,
  );
}

/** A record that cannot matter to the detector or the page's evidence: what the decoders may skip. */
const cannotMatter = (s: SpanRecord): boolean =>
  !isContractSpan(s.name) &&
  s.attributes[ATTR_MCP_METHOD_NAME] === undefined &&
  s.attributes[ATTR_MCP_SESSION_ID] === undefined;

/**
 * The same decoder with onSkipped: the same error or counts (its skipped spans counted apart), and in
 * each span's place either the same record or a skip, never of a record that could matter.
 */
function expectSkippedOnlyWhatCannotMatter(
  decode: (sink: (s: SpanRecord) => void, onSkipped: () => void) => DecodeResult,
  slim: Run,
): void {
  const seq: (SpanRecord | 'skipped')[] = [];
  let result: DecodeResult | undefined;
  let error: string | undefined;
  try {
    result = decode(
      (s) => seq.push({ ...s, attributes: { ...s.attributes } }),
      () => seq.push('skipped'),
    );
  } catch (e) {
    if (!(e instanceof OtlpDecodeError)) throw e;
    error = e.message;
  }
  expect(error).toBe(slim.error);
  if (result) {
    expect(result.spans + (result.skipped ?? 0)).toBe(slim.result!.spans);
    expect([result.invalid, result.firstError]).toEqual([slim.result!.invalid, slim.result!.firstError]);
    expect(result.skipped ?? 0).toBe(seq.filter((x) => x === 'skipped').length);
  }
  expect(seq).toHaveLength(slim.records.length);
  seq.forEach((x, i) => {
    if (x === 'skipped') expect(cannotMatter(slim.records[i]!), `span ${i} skipped`).toBe(true);
    else expect(x).toStrictEqual(slim.records[i]);
  });
}

/** Every ingest result and finding of a Detector fed the records, then flushed. */
function detect(batches: SpanRecord[][]): { results: string[]; findings: Finding[] } {
  const findings: Finding[] = [];
  const d = new Detector({ onFinding: (f) => findings.push(f), clock: () => 0 });
  const results: string[] = [];
  for (const batch of batches) for (const s of batch) results.push(d.ingest(s));
  d.flush();
  return { results, findings };
}

function snakeCase(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeCase);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snakeCase(v)]),
  );
}

const req = (n: number) => ({ session: `sess-${n}`, request: n, service: `svc-${n % 3}` });

/** Spans of every contract kind: the seed failure, server defects, guard actions, listening resumes. */
function scenarioSpans(): SpanRecord[] {
  const out = [...seedScenario(req(1), 3), ...seedScenario(req(2), 1)];
  out.push(
    terminal(req(3), 1_700_000_100_000, 'X'),
    terminal(req(3), 1_700_000_100_010, 'Y', false, { foreign: true, server: 'srv:1', firstStream: 'X' }),
  );
  out.push(
    terminal(req(4), 1_700_000_200_000, 'X'),
    terminal(req(4), 1_700_000_200_010, 'Z', true, { conflict: true, guard: GuardAction.DUPLICATE_TERMINAL_DROPPED }),
  );
  out.push(
    reattach(req(5), 1_700_000_300_000, 'L1', 'L0', 404),
    resume(req(5), 1_700_000_300_001, 'L1', 'L0', {
      streamKind: StreamKind.LISTENING,
      outcome: ResumeOutcome.CURSOR_REJECTED,
      status: 404,
      noRequest: true,
    }),
  );
  out.push(
    resume(req(6), 1_700_000_400_000, 'Q', 'P', {
      observed: false,
      outcome: ResumeOutcome.EMPTY_REPLAY,
      replayed: 0,
      status: 200,
    }),
  );
  return out;
}

/**
 * The fast-check properties below: a fixed seed and count of runs bound their work; the timeout only
 * guards a hang, on a machine whose cores the other test files share (about 10 s alone, several times
 * that beside them).
 */
const PROPERTY_RUNS = { timeout: 120_000 };

describe('OTLP/JSON: the scanner against JSON.parse and the walk it replaced', () => {
  it('gives the same records, counts and findings on the benchmark workload and the scenarios, compact, pretty-printed and in snake_case', () => {
    const bodies = otlpBodies(workload(600, 'eq', 3), 256).map((b) => Buffer.from(b));
    const doc = otlpJson(scenarioSpans(), 'scenario');
    bodies.push(
      Buffer.from(JSON.stringify(doc)),
      Buffer.from(JSON.stringify(doc, null, 2)),
      Buffer.from(JSON.stringify(snakeCase(doc))),
    );
    for (const b of bodies) compareJson(b, 64);
    const now = detect(
      bodies.map(
        (b) => run((sink) => decodeJsonRequest(b, sink, { detectorAttributesOnly: true, maxDepth: 64 })).records,
      ),
    );
    const before = detect(bodies.map((b) => referenceJson(b, true, 64).records));
    expect(now).toEqual(before);
    expect(now.findings.length).toBeGreaterThan(100);
  });

  it('refuses and reads hostile bodies as before: syntax, shapes, depth, megabyte ids, escapes', () => {
    const span = (extra: Record<string, unknown> = {}) => ({
      traceId: 'AF7651916CD43DD8448EB211C80319CA',
      spanId: 'b7ad6b7169203331',
      name: SPAN_REQUEST_TERMINAL,
      startTimeUnixNano: '1700000000000000000',
      endTimeUnixNano: 1.7e18,
      ...extra,
    });
    const bodies = [
      '',
      ' ',
      '\ufeff{}',
      '{}',
      '[]',
      '5',
      '"x"',
      'null',
      '{"resourceSpans":5}',
      '{"resourceSpans":null}',
      '{"resourceSpans":[5,{}]}',
      '{"resourceSpans":[{"resource":null,"scopeSpans":5}]}',
      '{"resourceSpans":[{"scopeSpans":[{"spans":[]}],"resource":[]}]}',
      '{"resourceSpans":[{"scopeSpans":[{"spans":{}}]}]}',
      '{"resourceSpans":[{"scopeSpans":[5]}]}',
      '{"resourceSpans":[{"scopeSpans":[{"spans":[1,null,[],{}]}]}]}',
      '{"resourceSpans":[]}x',
      '{"resourceSpans":[],}',
      '{"resourceSpans":[1,]}',
      '{"resourceSpans" [1]}',
      "{'resourceSpans':[]}",
      '{"a":"\u0001"}',
      '{"a":"\\x"}',
      '{"a":"\\u12"}',
      '{"a":01}',
      '{"a":-}',
      '{"a":1.}',
      '{"a":1e}',
      '{"a":tru}',
      '{"a":[[[[[[[[[[[[1]]]]]]]]]]]]}',
      '{"a":"[[[[[[[[[[[[[[[[[[[[[[["}',
      '['.repeat(100_000),
      '{"a":x' + '['.repeat(100),
      JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  span(),
                  span({ spanId: 'short' }),
                  span({ startTimeUnixNano: '-5' }),
                  span({ traceId: 'r/dlGRbNQ92ESOshHIAxnA==' }),
                ],
              },
            ],
          },
        ],
      }),
      JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  span({
                    attributes: [
                      { key: ATTR_MCP_SESSION_ID, value: { stringValue: 's'.repeat(1 << 20) } },
                      { key: ATTR_JSONRPC_REQUEST_ID, value: { intValue: '7' } },
                    ],
                  }),
                ],
              },
            ],
          },
        ],
      }),
      // Escapes in keys and values, a key spelled two ways, duplicate keys (the last counts).
      '{"resource\\u0053pans":[{"scope_spans":[{"spans":[{"trace_id":"af7651916cd43dd8448eb211c80319ca","traceId":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331","name":"mcp.request.termin\\u0061l","name":"' +
        SPAN_REQUEST_TERMINAL +
        '","start_time_unix_nano":"1","start_timeUnixNano":"2","end_time_unix_nano":"\\u0031700000000000000000","attributes":[{"key":"mcp.session.id","value":{"string_value":"\\ud83d\\ude00é","stringValue":5}},{"key":"jsonrpc.request.id","value":{"intValue":"0x10"}},{"key":"jsonrpc.request.id","value":{"intValue":null}},{"key":"mcp.stream.id","value":{"doubleValue":"1e400","double_value":1}},{"value":{"boolValue":true},"key":"mcp.terminal.duplicate"}]}]}]}]}',
    ];
    for (const text of bodies) for (const depth of [undefined, 64, 5]) compareJson(Buffer.from(text), depth);
    // Deep nesting is refused by the scanner with the depth check's own sentence and offset.
    expect(run((sink) => decodeJsonRequest(Buffer.from('['.repeat(100_000)), sink, { maxDepth: 64 })).error).toBe(
      'malformed OTLP/JSON: nesting deeper than 64 levels at byte 64',
    );
    // Invalid UTF-8 inside strings is replaced, as Buffer#toString does, and a syntax error names its byte.
    compareJson(
      Buffer.concat([
        Buffer.from(
          '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"a',
        ),
        Buffer.from([0xff, 0xc3]),
        Buffer.from('","startTimeUnixNano":"1","endTimeUnixNano":"1"}]}]}]}'),
      ]),
    );
    expect(run((sink) => decodeJsonRequest(Buffer.from('{"a":1,}'), sink)).error).toBe(
      "malformed JSON: expected a string key, found '}' at byte 7",
    );
  });

  it('every depth limit across an OTLP body is refused at the same byte as before (fast-check)', () => {
    const body = Buffer.from(JSON.stringify(otlpJson(scenarioSpans().slice(0, 3), 'd')));
    for (let depth = 1; depth <= 12; depth++) compareJson(body, depth);
  });

  it(
    'reads generated documents of every shape as before: types, duplicates, both spellings, escapes, whitespace (fast-check)',
    PROPERTY_RUNS,
    () => {
      fc.assert(
        fc.property(documentArb, fc.boolean(), (doc, pretty) => {
          compareJson(Buffer.from(serialize(doc, pretty)), 64);
        }),
        { numRuns: 600, seed: 14 },
      );
    },
  );

  it(
    'refuses mutated documents as before, and reads the ones that stay JSON as before (fast-check)',
    PROPERTY_RUNS,
    () => {
      fc.assert(
        fc.property(
          documentArb,
          fc.array(
            fc.record({
              at: fc.nat(),
              byte: fc.constantFrom(...'{}[]",:\\ 0x-e'.split('').map((c) => c.charCodeAt(0)), 0, 0xff),
              kind: fc.constantFrom('set', 'insert', 'delete', 'cut'),
            }),
            { minLength: 1, maxLength: 3 },
          ),
          (doc, mutations) => {
            const b = [...Buffer.from(serialize(doc, false))];
            for (const m of mutations) {
              const at = b.length === 0 ? 0 : m.at % b.length;
              if (m.kind === 'set') b[at] = m.byte;
              else if (m.kind === 'insert') b.splice(at, 0, m.byte);
              else if (m.kind === 'delete') b.splice(at, 1);
              else b.length = at;
            }
            compareJson(Buffer.from(b), 8);
          },
        ),
        { numRuns: 1500, seed: 15 },
      );
    },
  );
});

describe('OTLP/protobuf: converting only the detector attributes against converting every attribute', () => {
  const spanArb: fc.Arbitrary<SpanRecord> = fc.record({
    traceId: fc.constantFrom('0af7651916cd43dd8448eb211c80319c', 'abcdef0123456789abcdef0123456789'),
    spanId: fc.bigInt({ min: 1n, max: (1n << 64n) - 1n }).map((n) => n.toString(16).padStart(16, '0')),
    name: fc.constantFrom(SPAN_REQUEST_TERMINAL, SPAN_STREAM_RESUME, SPAN_SESSION_REATTACH, 'other'),
    kind: fc.constantFrom(0, 1, 2, 3) as fc.Arbitrary<SpanRecord['kind']>,
    startTimeUnixMs: fc.integer({ min: 0, max: 2_000_000_000_000 }),
    endTimeUnixMs: fc.integer({ min: 0, max: 2_000_000_000_000 }),
    attributes: fc.record(
      {
        [ATTR_MCP_SESSION_ID]: fc.constantFrom('s1', 's2', 'é'),
        [ATTR_JSONRPC_REQUEST_ID]: fc.oneof(fc.constantFrom('a', 'b'), fc.integer({ min: 0, max: 3 })),
        [ATTR_MCP_STREAM_ID]: fc.constantFrom('A', 'B', 'C'),
        [ATTR_MCP_TERMINAL_DUPLICATE]: fc.boolean(),
        [ATTR_MCP_TERMINAL_FOREIGN]: fc.boolean(),
        [ATTR_MCP_METHOD_NAME]: fc.constant('tools/call'),
        [ATTR_MCP_STREAM_KIND]: fc.constantFrom(StreamKind.LISTENING, 'request'),
        other: fc.oneof(fc.string(), fc.double({ noNaN: true })),
      },
      { requiredKeys: [ATTR_MCP_SESSION_ID] },
    ) as fc.Arbitrary<SpanRecord['attributes']>,
    service: fc.constantFrom('a', 'b'),
  });
  const requestArb = fc.array(spanArb, { maxLength: 8 }).map((spans) => encodeRequest(spans));

  it(
    'gives the same records, errors and findings on generated messages, intact and mutated (fast-check)',
    PROPERTY_RUNS,
    () => {
      fc.assert(
        fc.property(requestArb, fc.array(byteMutation, { maxLength: 3 }), (bytes, mutations) => {
          compareProtobuf(Buffer.from(mutated(bytes, mutations)));
        }),
        { numRuns: 1500, seed: 16 },
      );
    },
  );
});

describe('bodies of the real OTLP exporters (JSON and protobuf over HTTP)', () => {
  const bodies: { type: string; body: Buffer }[] = [];
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((rq, rs) => {
      const chunks: Buffer[] = [];
      rq.on('data', (c: Buffer) => chunks.push(c));
      rq.on('end', () => {
        const raw = Buffer.concat(chunks);
        bodies.push({
          type: rq.headers['content-type'] ?? '',
          body: rq.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw,
        });
        rs.writeHead(200, { 'content-type': rq.headers['content-type'] ?? 'application/json' }).end(
          rq.headers['content-type']?.includes('protobuf') ? Buffer.alloc(0) : '{}',
        );
      });
    }).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('give the same records and findings through the old and the new decoders', async () => {
    const spans = [...scenarioSpans(), ...workload(50, 'x', 5)].map((s) => ({
      ...s,
      attributes: { ...s.attributes, [ATTR_SERVICE_NAME]: undefined },
    }));
    // One provider exporting each span through both exporters: the same spans (ids included) in both encodings.
    const url = `http://127.0.0.1:${port}/v1/traces`;
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'real' }),
      spanProcessors: [
        new BatchSpanProcessor(new HttpExporter({ url }), { maxExportBatchSize: 64, scheduledDelayMillis: 50 }),
        new BatchSpanProcessor(new ProtoExporter({ url }), { maxExportBatchSize: 64, scheduledDelayMillis: 50 }),
      ],
    });
    emit(
      provider,
      spans.map((s) => ({
        ...s,
        attributes: Object.fromEntries(
          Object.entries(s.attributes).filter(([, v]) => v !== undefined),
        ) as SpanRecord['attributes'],
      })),
    );
    await provider.forceFlush();
    await provider.shutdown();
    const json = bodies.filter((b) => b.type.includes('json'));
    const proto = bodies.filter((b) => b.type.includes('protobuf'));
    expect(json.length).toBeGreaterThan(0);
    expect(proto.length).toBeGreaterThan(0);
    for (const { body } of json) compareJson(body, 64);
    for (const { body } of proto) compareProtobuf(body);
    // The two encodings of the same spans give the same findings through the new decoders (times to the
    // millisecond: protobuf's fixed64 nanoseconds divided by 1e6 may fall a few ulps below the JSON decoder's exact split).
    const ms = (d: ReturnType<typeof detect>) => ({
      ...d,
      findings: d.findings.map((f) => ({
        ...f,
        first_time_unix_ms: Math.round(f.first_time_unix_ms),
        last_time_unix_ms: Math.round(f.last_time_unix_ms),
      })),
    });
    const fromJson = detect(
      json.map(({ body }) => run((sink) => decodeJsonRequest(body, sink, { detectorAttributesOnly: true })).records),
    );
    const fromProto = detect(
      proto.map(
        ({ body }) => run((sink) => decodeProtobufRequest(body, sink, { detectorAttributesOnly: true })).records,
      ),
    );
    expect(ms(fromJson)).toEqual(ms(fromProto));
    expect(fromJson.findings.length).toBeGreaterThan(5);
  });
});

// ---------------------------------------------------------------------------------------------------
// Generated OTLP/JSON documents: every field may be missing, repeated, of the wrong type, spelled in
// lowerCamelCase, snake_case or a mix, or written with escapes; the text is serialized by hand so that
// duplicate keys and escaped keys exist.
// ---------------------------------------------------------------------------------------------------

type Node = { raw: string } | { arr: Node[] } | { obj: [string, Node][] };

function serialize(n: Node, pretty: boolean): string {
  const sep = pretty ? ', \n ' : ',';
  const colon = pretty ? ' : ' : ':';
  if ('raw' in n) return n.raw;
  if ('arr' in n) return `[${n.arr.map((c) => serialize(c, pretty)).join(sep)}]`;
  return `{${n.obj.map(([k, v]) => `${k}${colon}${serialize(v, pretty)}`).join(sep)}}`;
}

const raw = (v: unknown): Node => ({ raw: JSON.stringify(v) });
/** A string written with every character escaped as \uXXXX. */
const escaped = (s: string): string =>
  `"${[...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`;

/** The spellings of a field name: JSON name, proto name, a mix, an escaped one, and one that is no spelling of it. */
function spelling(camel: string): fc.Arbitrary<string> {
  const snake = camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  const mixed = camel.replace(/[A-Z]/, (c) => `_${c.toLowerCase()}`);
  return fc.constantFrom(
    JSON.stringify(camel),
    JSON.stringify(camel),
    JSON.stringify(camel),
    JSON.stringify(snake),
    JSON.stringify(mixed),
    escaped(camel),
    escaped(snake),
    JSON.stringify(`${camel}_`),
    JSON.stringify(camel.toUpperCase()),
  );
}

const junk: fc.Arbitrary<Node> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1.5e3, '', 'x').map(raw),
  fc.constant<Node>({ arr: [] }),
  fc.constant<Node>({ obj: [] }),
  fc.constant<Node>({ arr: [{ obj: [['"k"', raw(1)]] }] }),
);

function objectOf(fields: [string, fc.Arbitrary<Node>][], maxLength = 8): fc.Arbitrary<Node> {
  const member = fc.oneof(
    ...fields.map(([name, value]) =>
      fc.tuple(spelling(name), fc.oneof({ weight: 4, arbitrary: value }, { weight: 1, arbitrary: junk })),
    ),
  );
  return fc.array(member, { maxLength }).map((obj) => ({ obj }));
}

const hexId = (bytes: number) =>
  fc.oneof(
    fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => raw(Buffer.from(b).toString('hex'))),
    fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => raw(Buffer.from(b).toString('hex').toUpperCase())),
    fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => raw(Buffer.from(b).toString('base64'))),
    fc
      .uint8Array({ minLength: bytes, maxLength: bytes })
      .map((b) => ({ raw: escaped(Buffer.from(b).toString('hex')) })),
    fc.constantFrom('', 'zz', '0'.repeat(bytes * 2 - 1)).map(raw),
  );
const nanos = fc.oneof(
  fc.bigInt({ min: 0n, max: 1n << 64n }).map((n) => raw(n.toString())),
  fc.bigInt({ min: 0n, max: 1n << 64n }).map((n) => ({ raw: escaped(n.toString()) })),
  fc.constantFrom('-5', ' 5000000', '12.5e6', '1e18', 'abc', '0', '999999').map(raw),
  fc.double({ min: -1, max: 2e18, noNaN: true }).map(raw),
);
const scalarString = fc.oneof(
  fc
    .constantFrom(
      's1',
      's2',
      'tools/call',
      StreamKind.LISTENING,
      ResumeOutcome.EMPTY_REPLAY,
      GuardAction.RESUME_REFUSED,
    )
    .map(raw),
  fc.string({ maxLength: 6 }).map(raw),
  fc.constantFrom('s1', 'é').map((s) => ({ raw: escaped(s) })),
);
const anyValueArb = objectOf(
  [
    ['stringValue', scalarString],
    ['boolValue', fc.boolean().map(raw)],
    [
      'intValue',
      fc.oneof(
        fc.integer({ min: -5, max: 500 }).map(raw),
        fc.constantFrom('7', '0x10', '', ' 12 ', '1e400', 'x', '123456789012345678').map(raw),
      ),
    ],
    ['doubleValue', fc.oneof(fc.double({ noNaN: true }).map(raw), fc.constantFrom('1.5', 'NaN', 'x').map(raw))],
    ['arrayValue', fc.constant<Node>({ obj: [['"values"', { arr: [] }]] })],
  ],
  4,
);
const attributeKey = fc.oneof(
  fc.constantFrom(...DETECTOR_ATTRIBUTE_KEYS, ATTR_SERVICE_NAME, 'other.key', '').map(raw),
  fc.constantFrom(ATTR_MCP_SESSION_ID, ATTR_JSONRPC_REQUEST_ID).map((k) => ({ raw: escaped(k) })),
);
const keyValueArb = objectOf(
  [
    ['key', attributeKey],
    ['value', anyValueArb],
  ],
  3,
);
const attributesArb = fc
  .array(fc.oneof({ weight: 6, arbitrary: keyValueArb }, { weight: 1, arbitrary: junk }), { maxLength: 6 })
  .map((arr) => ({ arr }));
const spanArb = objectOf(
  [
    ['traceId', hexId(16)],
    ['spanId', hexId(8)],
    ['parentSpanId', fc.oneof(hexId(8), fc.constant(raw('')))],
    [
      'name',
      fc.oneof(
        fc
          .constantFrom(
            SPAN_REQUEST_TERMINAL,
            SPAN_STREAM_RESUME,
            SPAN_SESSION_REATTACH,
            mcpRequestSpanName('tools/call', 'x'),
            'other',
          )
          .map(raw),
        fc.constant({ raw: escaped(SPAN_STREAM_RESUME) }),
      ),
    ],
    [
      'kind',
      fc.oneof(
        fc.integer({ min: -1, max: 7 }).map(raw),
        fc.constantFrom('SPAN_KIND_CLIENT', 'SPAN_KIND_SERVER', 'nope').map(raw),
      ),
    ],
    ['startTimeUnixNano', nanos],
    ['endTimeUnixNano', nanos],
    ['attributes', attributesArb],
    ['status', fc.constant<Node>({ obj: [['"code"', raw(1)]] })],
  ],
  12,
);
const scopeSpansArb = objectOf([
  [
    'spans',
    fc
      .array(fc.oneof({ weight: 8, arbitrary: spanArb }, { weight: 1, arbitrary: junk }), { maxLength: 4 })
      .map((arr) => ({ arr })),
  ],
  ['scope', fc.constant<Node>({ obj: [['"name"', raw('x')]] })],
]);
const resourceArb = objectOf([['attributes', attributesArb]], 3);
const resourceSpansArb = objectOf([
  ['resource', resourceArb],
  [
    'scopeSpans',
    fc
      .array(fc.oneof({ weight: 8, arbitrary: scopeSpansArb }, { weight: 1, arbitrary: junk }), { maxLength: 3 })
      .map((arr) => ({ arr })),
  ],
]);
const documentArb: fc.Arbitrary<Node> = fc.oneof(
  {
    weight: 12,
    arbitrary: objectOf(
      [
        [
          'resourceSpans',
          fc
            .array(fc.oneof({ weight: 8, arbitrary: resourceSpansArb }, { weight: 1, arbitrary: junk }), {
              maxLength: 3,
            })
            .map((arr) => ({ arr })),
        ],
      ],
      3,
    ),
  },
  { weight: 1, arbitrary: junk },
);
