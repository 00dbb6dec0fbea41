import { describe, expect, it } from 'vitest';
import { utf8Text } from '../src/utf8-text.js';

// A JSON body's text: read in place when it came in one chunk, and always what Buffer.concat and
// toString('utf8') give (a BOM kept, a bad sequence U+FFFD, a character split across chunks whole).

const reference = (chunks: Uint8Array[]): string => Buffer.concat(chunks).toString('utf8');

describe('utf8Text', () => {
  const texts = [
    '{"jsonrpc":"2.0","id":1,"result":{}}',
    '\uFEFF{"jsonrpc":"2.0","id":"\\u0069d","result":"°C ✓ 😀"}',
    '',
  ];
  const bytes = [
    ...texts.map((text) => Buffer.from(text)),
    Buffer.from([0x7b, 0xff, 0xfe, 0xc3, 0x7d]), // not UTF-8
    Buffer.from([0xf0, 0x9f, 0x98]), // a character cut short
    Buffer.from([0xed, 0xa0, 0x80]), // a lone surrogate's encoding
  ];

  it('gives what Buffer.concat and toString give, for a Buffer, a Uint8Array and a view within a larger buffer', () => {
    for (const body of bytes) {
      const expected = body.toString('utf8');
      expect(utf8Text([body])).toBe(expected);
      expect(utf8Text([new Uint8Array(body)])).toBe(expected);
      const larger = new Uint8Array(body.length + 10).fill(0x41);
      larger.set(body, 5);
      expect(utf8Text([larger.subarray(5, 5 + body.length)])).toBe(expected);
      expect(utf8Text([Buffer.from(larger.buffer, 5, body.length)])).toBe(expected);
    }
    expect(texts.map((text) => utf8Text([Buffer.from(text)]))).toEqual(texts);
  });

  it('joins several chunks first, a character split between two read whole', () => {
    const body = Buffer.from('\uFEFF{"text":"😀 °C"}');
    for (let cut = 0; cut <= body.length; cut++) {
      const chunks = [body.subarray(0, cut), new Uint8Array(body.subarray(cut))];
      expect(utf8Text(chunks)).toBe(reference(chunks));
      expect(utf8Text(chunks)).toBe(body.toString('utf8'));
    }
    expect(utf8Text([])).toBe('');
  });
});
