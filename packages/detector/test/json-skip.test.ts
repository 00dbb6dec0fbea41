import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_TASK_ID,
  SPAN_REQUEST_TERMINAL,
} from '@resumewatch/semconv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeJsonRequest, OtlpDecodeError, type SpanRecord } from '../src/index.js';
import { JsonCursor } from '../src/otlp/json-cursor.js';

/*
 * The cursor's fast skip (skipFast) and the walk's passing over a span's attributes (json-walk.ts,
 * passAttributes): the fast skip accepts only what JSON.parse accepts, ends where the value ends, and
 * leaves everything else to the token-by-token skip; a span passed over is one whose attributes cannot
 * make it matter, and a contract span named after its attributes still gets them.
 */

/** skipFast over `text` followed by `]` (so that the end is not the buffer's): where it stopped, or undefined. */
function fast(text: string, watch = false, maxDepth = Infinity): number | undefined {
  const buf = Buffer.from(`${text}]`, 'utf8');
  const cur = new JsonCursor(buf, maxDepth);
  const ok = cur.skipFast(1, watch);
  if (!ok) {
    expect(cur.pos, 'pos unchanged when the fast skip declines').toBe(0);
    return undefined;
  }
  return cur.pos;
}

/** skip() (fast, then token by token) over the bytes: where it stopped, or its error. */
function skip(buf: Buffer, maxDepth = Infinity): number | string {
  const cur = new JsonCursor(buf, maxDepth);
  try {
    cur.skip(1);
    return cur.pos;
  } catch (e) {
    if (!(e instanceof OtlpDecodeError)) throw e;
    return e.message;
  }
}

const parses = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

describe("the cursor's fast skip", () => {
  it('skips what JSON.parse accepts and ends at its end', () => {
    for (const v of [
      '{}',
      '[]',
      ' { "a" : [ 1 , -0.5e+3 , true , false , null , "x\\"y\\\\\\/\\b\\f\\n\\r\\t\\u00e9" ] } ',
      '{"a":{"b":{"c":[[[]]]}},"a":2}',
      '["\u00e9\u{1f600}", "\xff"]',
      '[0,-0,1e5,1E-5,12.75,-3.0e0]',
      `[${'"x"'.repeat(1).padEnd(3)}]`,
      `{"k":"${'v'.repeat(1 << 20)}"}`,
    ]) {
      const text = v.trimEnd();
      expect(parses(text), text.slice(0, 40)).toBe(true);
      expect(fast(v), v.slice(0, 40)).toBe(Buffer.byteLength(text, 'utf8'));
    }
  });

  it('declines what JSON.parse refuses, truncated bodies and hostile bytes, and skip() still refuses them', () => {
    for (const v of [
      '[1,]',
      '{"a":1,}',
      '{"a" 1}',
      '{a:1}',
      '[01]',
      '[1.]',
      '[1e]',
      '[-]',
      '[tru]',
      '[nul]',
      '["\\x"]',
      '["\\u12g4"]',
      '["a\tb"]',
      '["\u0001"]',
      '[1 2]',
      '{"a":1]',
      '[1}',
      '["unterminated',
      '{"a":',
      '[[',
      '\ufeff[1]',
      '["\\u00',
    ]) {
      expect(fast(v), v).toBeUndefined();
      const r = skip(Buffer.from(v, 'utf8'));
      // Truncated values reach the buffer's end; anything else is a syntax error named by the slow skip.
      expect(typeof r, v).toBe('string');
    }
  });

  it('leaves nesting deeper than it keeps, or than maxDepth, to the slow skip: 100k levels cost no stack', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expect(fast(deep)).toBeUndefined();
    expect(skip(Buffer.from(deep))).toBe(deep.length);
    expect(skip(Buffer.from(deep), 64)).toMatch(/nesting deeper than 64 levels at byte 64$/);
    const thirty = `${'['.repeat(30)}${']'.repeat(30)}`;
    expect(fast(thirty)).toBe(60);
    expect(fast(`[${thirty}]`)).toBeUndefined();
    // The value opened at depth 1: maxDepth 3 allows three levels, and refuses the fourth at its bracket.
    expect(fast('[[[]]]', false, 3)).toBe(6);
    expect(fast('[[[[]]]]', false, 3)).toBeUndefined();
    expect(skip(Buffer.from('[[[[]]]]'), 3)).toMatch(/nesting deeper than 3 levels at byte 3$/);
  });

  it('with watch, declines a string that starts with `mcp.` or has a \\u escape, wherever it is', () => {
    expect(fast('[{"key":"http.route","value":{"stringValue":"/mcp."}}]', true)).toBeGreaterThan(0);
    expect(fast('[{"key":"mcp.session.id","value":{"stringValue":"s"}}]', true)).toBeUndefined();
    expect(fast('[{"key":"a","value":{"stringValue":"mcp.x"}}]', true)).toBeUndefined();
    expect(fast('[{"key":"\\u006dcp.method.name","value":{"stringValue":"x"}}]', true)).toBeUndefined();
    expect(fast('[{"key":"a\\n","value":{"stringValue":"\\"q\\""}}]', true)).toBeGreaterThan(0);
    expect(fast('[{"mcp.key":1}]', true)).toBeUndefined();
    expect(fast('[{"mcp.key":1}]', false)).toBe(15);
  });

  it('agrees with JSON.parse on generated values, pretty-printed or not, and on their byte mutations (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 6 }),
        fc.boolean(),
        fc.nat(),
        fc.integer({ min: 0, max: 255 }),
        (value, pretty, at, byte) => {
          const container = Array.isArray(value) ? value : [value];
          const text = JSON.stringify(container, null, pretty ? 2 : undefined);
          expect(fast(text)).toBe(Buffer.byteLength(text, 'utf8'));
          const bytes = Buffer.from(text, 'utf8');
          bytes[at % bytes.length] = byte;
          const mutated = Buffer.concat([bytes, Buffer.from(']')]);
          const cur = new JsonCursor(mutated, Infinity);
          const ok = cur.skipFast(1, false);
          const slow = skip(mutated);
          if (ok) {
            // What the fast skip accepts, the slow one accepts too, ending at the same byte.
            expect(slow).toBe(cur.pos);
            expect(JSON.parse(mutated.subarray(0, cur.pos).toString('utf8'))).toBeDefined();
          } else expect(cur.pos).toBe(0);
        },
      ),
      { seed: 40, numRuns: 2_000 },
    );
  });
});

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const kv = (key: string, stringValue: string) => ({ key, value: { stringValue } });
const appAttributes = [
  kv('http.request.method', 'GET'),
  kv('url.path', '/mcp.x'),
  { key: ATTR_HTTP_RESPONSE_STATUS_CODE, value: { intValue: '200' } },
];

/** A span as text, its fields in the order given. */
function spanText(fields: [string, unknown][]): string {
  return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
}

function body(spans: string[]): Buffer {
  return Buffer.from(`{"resourceSpans":[{"scopeSpans":[{"spans":[${spans.join(',')}]}]}]}`, 'utf8');
}

function decodeSkipping(buf: Buffer): (SpanRecord | 'skipped')[] {
  const out: (SpanRecord | 'skipped')[] = [];
  decodeJsonRequest(buf, (s) => out.push(s), { detectorAttributesOnly: true, onSkipped: () => out.push('skipped') });
  return out;
}

describe("the walk's passing over the attributes of spans that cannot matter", () => {
  const head: [string, unknown][] = [
    ['traceId', TRACE],
    ['spanId', 'b7ad6b7169203331'],
    ['startTimeUnixNano', '1700000000000000000'],
    ['endTimeUnixNano', '1700000000000000000'],
  ];

  it('skips an application span, and keeps one with an MCP key however it is spelled', () => {
    const app = spanText([...head, ['name', 'GET /x'], ['attributes', appAttributes]]);
    const escaped = app.replace(
      '"attributes":[',
      '"attributes":[{"key":"\\u006dcp.method.name","value":{"stringValue":"tools/call"}},',
    );
    const session = app.replace('"attributes":[', `"attributes":[${JSON.stringify(kv(ATTR_MCP_SESSION_ID, 's'))},`);
    const task = app.replace('"attributes":[', `"attributes":[${JSON.stringify(kv(ATTR_MCP_TASK_ID, 't'))},`);
    const out = decodeSkipping(body([app, escaped, session, task]));
    expect(out[0]).toBe('skipped');
    expect((out[1] as SpanRecord).attributes[ATTR_MCP_METHOD_NAME]).toBe('tools/call');
    expect(out[2]).not.toBe('skipped');
    expect(out[3]).not.toBe('skipped');
  });

  it('reads the attributes of a contract span named after them, the last name and attributes counting', () => {
    const terminalAttributes = [
      kv(ATTR_MCP_SESSION_ID, 's'),
      { key: ATTR_JSONRPC_REQUEST_ID, value: { intValue: '7' } },
    ];
    // Its attributes hold no MCP key by their bytes here: only its name, which comes last, keeps it.
    const late = spanText([...head, ['attributes', appAttributes], ['name', 'GET'], ['name', SPAN_REQUEST_TERMINAL]]);
    const streamOnly = [kv(ATTR_MCP_STREAM_ID.replace(/^mcp\./, 'x.'), 'q')];
    const twice = spanText([
      ...head,
      ['attributes', terminalAttributes],
      ['attributes', streamOnly],
      ['name', SPAN_REQUEST_TERMINAL],
    ]);
    const renamed = spanText([
      ...head,
      ['name', SPAN_REQUEST_TERMINAL],
      ['attributes', appAttributes],
      ['name', 'GET'],
    ]);
    const out = decodeSkipping(body([late, twice, renamed]));
    expect(out[0]).toMatchObject({
      name: SPAN_REQUEST_TERMINAL,
      attributes: { [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200 },
    });
    // The last attributes field counts: the first one's keys are gone, as JSON.parse would have it.
    expect(out[1]).toMatchObject({ name: SPAN_REQUEST_TERMINAL, attributes: {} });
    expect(out[2]).toBe('skipped');
  });

  it('passes over attributes as exporters write them, values of every kind and escapes in them, and reads an MCP key among them', () => {
    const written = [
      kv('user_agent.original', 'Mozilla/5.0 \u00e9 "quoted" \\ \n'),
      { key: 'server.port', value: { intValue: '8080' } },
      kv('control', 'a\u0001b'),
      { key: 'sampled', value: { boolValue: false } },
      { key: 'ratio', value: { doubleValue: -1.5e-3 } },
      { key: 'nothing', value: { stringValue: null } },
      kv('caf\u00e9', 'mcp.looks-like-a-key'),
    ];
    const app = spanText([...head, ['name', 'GET /x'], ['attributes', written]]);
    const mcpLast = spanText([
      ...head,
      ['name', 'GET /x'],
      ['attributes', [...written, kv(ATTR_MCP_METHOD_NAME, 'tools/call')]],
    ]);
    const out = decodeSkipping(body([app, mcpLast, spanText([...head, ['name', 'GET'], ['attributes', []]])]));
    expect(out[0]).toBe('skipped');
    expect((out[1] as SpanRecord).attributes[ATTR_MCP_METHOD_NAME]).toBe('tools/call');
    expect(out[2]).toBe('skipped');
  });

  it('skips a whole application span as exporters write it, and decides any other span as before', () => {
    const exported = (name: string, attributes: unknown[], extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        traceId: TRACE,
        spanId: 'b7ad6b7169203331',
        parentSpanId: 'a7ad6b7169203331',
        name,
        kind: 2,
        startTimeUnixNano: '1700000000000000000',
        endTimeUnixNano: '1700000000002000000',
        attributes,
        droppedAttributesCount: 0,
        events: [{ timeUnixNano: '1700000000001000000', name: 'e', attributes: [kv(ATTR_MCP_SESSION_ID, 's')] }],
        droppedEventsCount: 0,
        status: { code: 2, message: 'm' },
        links: [],
        droppedLinksCount: 0,
        flags: 1,
        ...extra,
      });
    const out = decodeSkipping(
      body([
        exported('GET /x', appAttributes),
        exported(SPAN_REQUEST_TERMINAL, [kv(ATTR_MCP_SESSION_ID, 's')]),
        exported(SPAN_REQUEST_TERMINAL, []),
        exported('GET /x', [kv(ATTR_MCP_METHOD_NAME, 'tools/call')]),
        exported('GET /x', appAttributes, { traceId: TRACE.toUpperCase() }),
        exported('GET /x', appAttributes, { spanId: 'b7ad' }),
        exported('GET /x', appAttributes, { startTimeUnixNano: '-1' }),
      ]),
    );
    expect(out[0]).toBe('skipped');
    expect(out[1]).toMatchObject({ name: SPAN_REQUEST_TERMINAL, attributes: { [ATTR_MCP_SESSION_ID]: 's' } });
    expect(out[2]).toMatchObject({ name: SPAN_REQUEST_TERMINAL });
    expect((out[3] as SpanRecord).attributes[ATTR_MCP_METHOD_NAME]).toBe('tools/call');
    // Uppercase hex is an id all the same (span() reads it): skipped; a short id and a negative time are invalid.
    expect(out[4]).toBe('skipped');
    expect(out).toHaveLength(5);
  });

  it('refuses a malformed attributes array of a span that cannot matter, as before', () => {
    const app = spanText([...head, ['name', 'GET /x'], ['attributes', appAttributes]]);
    for (const bad of [
      app.replace('"GET"}', '"GET"'),
      app.replace('"200"', '"2\u00010"'),
      app.replace('},{', '},,{'),
      app.replace('"200"', '"2\\x0"'),
      app.replace('"200"}', '01}'),
      app.replace('}}]', '}},]'),
    ])
      expect(() => decodeSkipping(body([bad]))).toThrow(/^malformed JSON/);
  });

  it('reports runs of skipped spans in their places and counts, the last of a repeated field counting', () => {
    const app = spanText([...head, ['name', 'GET /x'], ['attributes', appAttributes]]);
    const kept = (n: string) => spanText([...head, ['name', n], ['attributes', [kv(ATTR_MCP_METHOD_NAME, n)]]]);
    const order = (buf: Buffer) => {
      const out = decodeSkipping(buf).map((e) => (e === 'skipped' ? '.' : e.name));
      const result = decodeJsonRequest(buf, () => undefined, { onSkipped: () => undefined });
      return { out: out.join(' '), skipped: result.skipped ?? 0, spans: result.spans };
    };
    expect(order(body([app, app, kept('a'), app, kept('b'), kept('c'), app, app, app]))).toEqual({
      out: '. . a . b c . . .',
      skipped: 6,
      spans: 3,
    });
    // Runs on either side of a span that is no object, and of an invalid one, stay apart.
    const invalid = spanText([
      ['traceId', 'x'],
      ['name', 'GET'],
    ]);
    expect(order(body([app, '7', app, app, invalid, app]))).toEqual({ out: '. . . .', skipped: 4, spans: 0 });
    // A repeated spans, scopeSpans or resourceSpans field: the last counts, the runs of the ones before it dropped.
    const spans = (list: string[]) => `{"spans":[${list.join(',')}]}`;
    const repeated = [
      `{"resourceSpans":[{"scopeSpans":[{"spans":[${app},${app}],"spans":[${kept('a')},${app}]}]}]}`,
      `{"resourceSpans":[{"scopeSpans":[${spans([app, app])}],"scopeSpans":[${spans([app])},${spans([kept('a')])}]}]}`,
      `{"resourceSpans":[{"scopeSpans":[${spans([app, app, app])}]}],"resourceSpans":[{"scopeSpans":[${spans([app])}]}]}`,
      // The second ResourceSpans is cut back to where it began: a run before it is not counted up from within it.
      `{"resourceSpans":[{"scopeSpans":[${spans([app])}]},{"scopeSpans":[${spans([app])}],"scopeSpans":[${spans([kept('a')])}]}]}`,
    ];
    const expected = [
      { out: 'a .', skipped: 1, spans: 1 },
      { out: '. a', skipped: 1, spans: 1 },
      { out: '.', skipped: 1, spans: 0 },
      { out: '. a', skipped: 1, spans: 1 },
    ];
    for (const [i, text] of repeated.entries()) {
      const buf = Buffer.from(text, 'utf8');
      expect(order(buf)).toEqual(expected[i]);
      // As JSON.parse reads it: the last of each repeated field.
      const parsed = JSON.parse(text) as { resourceSpans: { scopeSpans: { spans: unknown[] }[] }[] };
      const total = parsed.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)).length;
      expect(expected[i]!.skipped + expected[i]!.spans).toBe(total);
    }
  });
});
