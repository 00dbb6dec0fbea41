import { ATTR_JSONRPC_REQUEST_ID, ATTR_MCP_METHOD_NAME, SPAN_REQUEST_TERMINAL } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { decodeProtobufRequest, OtlpDecodeError } from '../src/index.js';
import { varintBytes } from './helpers/protobuf-encode.js';

/*
 * The protobuf decoder's KeyValue as exporters write it (keyValueAsWritten in src/otlp/protobuf.ts: key,
 * then one scalar value filling the rest, one-byte tags and lengths) is read in one step by the detector's
 * walk (detectorAttributesOnly). Every KeyValue near that layout, valid or hostile, must give what the
 * full walk (keyValue, every attribute) gives: the same value for the key, or the same error at the same byte.
 */

const bytesOf = (s: string): number[] => [...Buffer.from(s, 'latin1')];
const ld = (no: number, body: number[]): number[] => [(no << 3) | 2, ...varintBytes(BigInt(body.length)), ...body];
/** A length-delimited field whose length is given, whatever the bytes that follow. */
const ldLen = (no: number, len: number, body: number[]): number[] => [
  (no << 3) | 2,
  ...varintBytes(BigInt(len)),
  ...body,
];

/** A request of one span (a contract span when `contract`, else an application span) with the KeyValue's bytes as its attribute. */
function request(kv: number[], contract: boolean): Uint8Array {
  const span = [
    ...ld(
      1,
      Array.from({ length: 16 }, (_, i) => i + 1),
    ),
    ...ld(
      2,
      Array.from({ length: 8 }, (_, i) => i + 1),
    ),
    ...ld(5, bytesOf(contract ? SPAN_REQUEST_TERMINAL : 'GET /x')),
    0x39,
    ...new Array<number>(8).fill(1),
    0x41,
    ...new Array<number>(8).fill(2),
    ...ld(9, kv),
  ];
  return Uint8Array.from(ld(1, ld(2, ld(2, span))));
}

type Outcome = { error: string } | { spans: number; skipped: number; value: unknown; has: boolean };

function outcome(body: Uint8Array, key: string, slim: boolean, skip: boolean): Outcome {
  let value: unknown;
  let has = false;
  let spans = 0;
  let skipped = 0;
  try {
    decodeProtobufRequest(
      body,
      (s) => {
        spans++;
        has = key in s.attributes;
        value = s.attributes[key];
      },
      { detectorAttributesOnly: slim, onSkipped: skip ? () => skipped++ : undefined },
    );
  } catch (e) {
    expect(e).toBeInstanceOf(OtlpDecodeError);
    return { error: (e as Error).message };
  }
  return { spans, skipped, value, has };
}

const KEY = ATTR_JSONRPC_REQUEST_ID;
const key = ld(1, bytesOf(KEY));
const tenBytes = varintBytes(-7n);

/** KeyValues in and around the layout exporters write: [what it is, its bytes]. */
const cases: [string, number[]][] = [
  ['a string value', [...key, ...ld(2, ld(1, bytesOf('7')))]],
  ['an empty string value', [...key, ...ld(2, ld(1, []))]],
  ['an int value', [...key, ...ld(2, [0x18, 7])]],
  ['a 10-byte int value', [...key, ...ld(2, [0x18, ...tenBytes])]],
  ['an 11-byte int value', [...key, ...ld(2, [0x18, ...tenBytes.slice(0, 9), 0xff, 0x01])]],
  ['a truncated int value', [...key, ...ld(2, [0x18, 0x80])]],
  ['an int tag alone', [...key, ...ld(2, [0x18])]],
  ['an int value ending early, then a byte', [...key, ...ld(2, [0x18, 0x07, 0x07])]],
  ['a bool value', [...key, ...ld(2, [0x10, 1])]],
  ['a double value', [...key, ...ld(2, [0x21, ...new Array<number>(8).fill(0x40)])]],
  ['a truncated double value', [...key, ...ld(2, [0x21, ...new Array<number>(7).fill(0x40)])]],
  ['an empty value', [...key, ...ld(2, [])]],
  ['a string value running past its AnyValue', [...key, ...ld(2, ldLen(1, 5, bytesOf('7')))]],
  ['a string length alone', [...key, ...ld(2, [0x0a])]],
  ['a string value short of its AnyValue', [...key, ...ld(2, [...ld(1, bytesOf('7')), 0x18])]],
  ['a string value, then an int value', [...key, ...ld(2, [...ld(1, bytesOf('7')), 0x18, 9])]],
  ['an int value, then a string value', [...key, ...ld(2, [0x18, 9, ...ld(1, bytesOf('7'))])]],
  ['an array value', [...key, ...ld(2, ld(5, []))]],
  ['a value running past the KeyValue', [...key, ...ldLen(2, 9, [0x18, 7])]],
  ['a value short of the KeyValue', [...key, ...ld(2, [0x18, 7]), 0x18]],
  ['a value, then another field', [...key, ...ld(2, [0x18, 7]), ...ld(3, [1])]],
  ['the value first', [...ld(2, [0x18, 7]), ...key]],
  ['two keys, the detector key last', [...ld(1, bytesOf('x')), ...key, ...ld(2, [0x18, 7])]],
  ['two keys, the detector key first', [...key, ...ld(1, bytesOf('x')), ...ld(2, [0x18, 7])]],
  ['two values, the last counting', [...key, ...ld(2, [0x18, 7]), ...ld(2, [0x18, 8])]],
  ['a key escaped by its case', [...ld(1, bytesOf(KEY.toUpperCase())), ...ld(2, [0x18, 7])]],
  ['a key of 128 bytes', [...ld(1, bytesOf('k'.repeat(128))), ...ld(2, [0x18, 7])]],
  ['a value of 128 bytes', [...key, ...ld(2, ld(1, bytesOf('v'.repeat(125))))]],
  ['a key length past the KeyValue', [...ldLen(1, 40, bytesOf(KEY))]],
  ['a key tag alone', [0x0a]],
  ['a key, then a value tag alone', [...key, 0x12]],
  ['a key of non-UTF-8 bytes', [...ld(1, [0xff, 0xfe, 0x80]), ...ld(2, [0x18, 7])]],
  ['an MCP key off the contract', [...ld(1, bytesOf(ATTR_MCP_METHOD_NAME)), ...ld(2, ld(1, bytesOf('tools/call')))]],
];

describe("the protobuf decoder's KeyValue as exporters write it", () => {
  it('gives what the full walk gives for every KeyValue near the layout, valid or hostile', () => {
    for (const [what, kv] of cases) {
      for (const contract of [true, false]) {
        const body = request(kv, contract);
        const full = outcome(body, contract ? KEY : ATTR_MCP_METHOD_NAME, false, false);
        for (const skip of [false, true]) {
          const slim = outcome(body, contract ? KEY : ATTR_MCP_METHOD_NAME, true, skip);
          if ('error' in full) expect(slim, what).toEqual(full);
          else if (!skip || 'error' in slim || slim.spans === 1) expect(slim, what).toEqual(full);
          // Skipped: a valid application span without an MCP key, which the full walk hands on.
          else expect([what, slim]).toEqual([what, { spans: 0, skipped: 1, value: undefined, has: false }]);
        }
      }
    }
  });

  it('reads the values of the layout and refuses its hostile varints (the cases above are not all declined)', () => {
    const at = (what: string) => request(cases.find(([w]) => w === what)![1], true);
    expect(outcome(at('an int value'), KEY, true, true)).toMatchObject({ spans: 1, value: 7 });
    expect(outcome(at('a 10-byte int value'), KEY, true, true)).toMatchObject({ spans: 1, value: -7 });
    expect(outcome(at('a string value'), KEY, true, true)).toMatchObject({ spans: 1, value: '7' });
    expect(outcome(at('a double value'), KEY, true, true)).toMatchObject({
      spans: 1,
      value: Buffer.alloc(8, 0x40).readDoubleLE(0),
    });
    expect(outcome(at('an 11-byte int value'), KEY, true, true)).toEqual({
      error: expect.stringMatching(/^malformed protobuf: varint longer than 10 bytes/) as unknown,
    });
    expect(outcome(at('a truncated int value'), KEY, true, true)).toEqual({
      error: expect.stringMatching(/^malformed protobuf: truncated varint/) as unknown,
    });
  });
});
