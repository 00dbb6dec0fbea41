// The scanner decodes each chunk in place, whatever kind of view it is: a Node Buffer (a proxy's), a
// plain Uint8Array (a fetch's), or a view into the middle of a larger buffer. Whatever the chunking,
// the events and their bytes are those of the whole input read at once.
import { describe, expect, it } from 'vitest';
import { SseParser } from '../src/sse.js';
import type { SseEvent } from '../src/sse.js';

const encoder = new TextEncoder();

const summary = (e: SseEvent) => ({
  id: e.id,
  event: e.event,
  data: e.data,
  retry: e.retry,
  hasData: e.hasData,
  dataLength: e.dataLength,
});

type Kind = 'buffer' | 'plain' | 'inner view';

/**
 * `bytes[from, to)` as a chunk of the given kind. An inner view sits in a larger buffer between bytes
 * that would read as a line end and a field (`\ndata: x\n\n`), so that reading outside the view shows.
 */
function chunkOf(bytes: Uint8Array, from: number, to: number, kind: Kind): Uint8Array {
  const part = bytes.subarray(from, to);
  if (kind === 'buffer') return Buffer.from(part);
  if (kind === 'plain') return Uint8Array.from(part);
  const junk = encoder.encode('\ndata: x\n\n');
  const outer = new Uint8Array(junk.length + part.length + junk.length);
  outer.set(junk, 0);
  outer.set(part, junk.length);
  outer.set(junk, junk.length + part.length);
  return outer.subarray(junk.length, junk.length + part.length);
}

/** The events, their raw bytes and the rest, the input cut at `cuts` into chunks of `kind`. */
function scan(bytes: Uint8Array, cuts: readonly number[], kind: Kind) {
  const events: SseEvent[] = [];
  const parser = new SseParser((event) => events.push(event));
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    parser.push(chunkOf(bytes, from, cut, kind));
    from = cut;
  }
  const rest = parser.end();
  return { events: events.map(summary), bytes: Buffer.concat([...events.map((e) => e.raw), rest]) };
}

const KINDS: Kind[] = ['buffer', 'plain', 'inner view'];

/** Ids and event types long enough to be copied from the chunk (13 characters and more), and short ones. */
const INPUT =
  '\uFEFFid: a-long-event-id-0001\r\nevent: a-long-event-type\r\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\r\n\r\n' +
  ': comment\nid: 2\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n' +
  'id: é-ü-漢字-id-non-ascii\rdata: é ü 漢字\r\r' +
  'event: a-long-event-type\ndata: a\ndata: b\nretry: 250\n\n' +
  'id: 4\r\ndata: {"id\\u0022:7}\r\n\r\ndata: unterminated';

describe('SseScanner on hostile chunkings', () => {
  const bytes = encoder.encode(INPUT);
  const reference = scan(bytes, [], 'buffer');

  it('reads the reference input as the spec says', () => {
    expect(reference.events.map((e) => [e.id, e.event, e.data])).toEqual([
      ['a-long-event-id-0001', 'a-long-event-type', '{"jsonrpc":"2.0","id":1,"result":{}}'],
      ['2', '', '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}'],
      ['é-ü-漢字-id-non-ascii', '', 'é ü 漢字'],
      [undefined, 'a-long-event-type', 'a\nb'],
      ['4', '', '{"id\\u0022:7}'],
    ]);
    expect(reference.events[3]!.retry).toBe(250);
    expect(reference.bytes).toEqual(Buffer.from(bytes));
  });

  for (const kind of KINDS) {
    it(`gives the same events split at every byte, chunks of ${kind}`, () => {
      const everyByte = Array.from({ length: bytes.length - 1 }, (_, i) => i + 1);
      expect(scan(bytes, everyByte, kind)).toEqual(reference);
    });

    it(`gives the same events cut once at every place, chunks of ${kind}`, () => {
      for (let cut = 1; cut < bytes.length; cut++) expect(scan(bytes, [cut], kind)).toEqual(reference);
    });
  }

  it('skips a BOM split across chunks, and keeps one that is not the stream’s first bytes', () => {
    const input = encoder.encode('\uFEFFdata: a\n\n\uFEFFdata: b\n\ndata: c\n\n');
    for (const kind of KINDS)
      for (const cuts of [[1], [2], [1, 2], [3]]) {
        const { events } = scan(input, cuts, kind);
        // The second BOM is part of a line's name: that line is no field, as a browser reads it.
        expect(events.map((e) => e.data)).toEqual(['a', 'c']);
      }
  });

  it('reads a huge event (4 MiB of data, a 200-byte id) whatever the chunks', () => {
    const data = JSON.stringify({ jsonrpc: '2.0', id: 9, result: { text: 'x'.repeat(4 * 1024 * 1024) } });
    const id = 'i'.repeat(200);
    const input = encoder.encode(`id: 1\ndata: {}\n\nid: ${id}\r\ndata: ${data}\r\n\r\nid: 3\ndata: {}\n\n`);
    for (const kind of KINDS)
      for (const size of [65_536, 16_384 + 7]) {
        const cuts: number[] = [];
        for (let at = size; at < input.length; at += size) cuts.push(at);
        const { events, bytes: raw } = scan(input, cuts, kind);
        expect(events.map((e) => [e.id, e.dataLength])).toEqual([
          ['1', 2],
          [id, data.length],
          ['3', 2],
        ]);
        expect(events[1]!.data).toBe(data);
        expect(raw.equals(Buffer.from(input))).toBe(true);
      }
  });

  it('decodes bytes that are not UTF-8 in ids and data the same in every chunking', () => {
    const input = Uint8Array.from([
      ...encoder.encode('id: ab'),
      0xff,
      0xfe,
      ...encoder.encode('-long-enough-id\r\ndata: '),
      0xc3,
      0x28,
      0x80,
      ...encoder.encode('\r\n\r\n'),
    ]);
    const whole = scan(input, [], 'buffer');
    expect(whole.events).toHaveLength(1);
    expect(whole.events[0]!.id).toBe('ab\uFFFD\uFFFD-long-enough-id');
    expect(whole.events[0]!.data).toBe('\uFFFD(\uFFFD');
    for (const kind of KINDS)
      for (let cut = 1; cut < input.length; cut++) expect(scan(input, [cut], kind)).toEqual(whole);
  });
});

/**
 * Servers write several events in one chunk, and reads coalesce under load: most reads then end inside
 * an event, carried into the next read with that read's other events.
 */
describe('SseScanner on reads of several events, the last cut', () => {
  const progress = (n: number) =>
    `id: ${n % 3 === 0 ? `a-long-event-id-${n}` : n}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":${n}}}\n\n`;
  // LF-only events, then the line ends and blank lines a split point must not be mistaken at: an LF
  // after a CRLF (a blank line), a CRLF after an LF, lone CRs, a comment-only block, a field-less event.
  const tail =
    'id: x1\r\ndata: a\r\n\ndata: b\n\r\n: only a comment\n\nfoo: bar\n\nid: x2\rdata: c\r\rdata: d\n\n' +
    'data: e\ndata: f\n\n: ping\n: ping\nid: x3\ndata: g\n\n';
  const input = encoder.encode(Array.from({ length: 20 }, (_, n) => progress(n)).join('') + tail + progress(20));
  const reference = scan(input, [], 'buffer');
  // About 3,000 chunkings: each compared by its JSON text first (a deep toEqual of each took most of the
  // suite's time), and by toEqual, which names the difference, only when the texts differ.
  const referenceText = JSON.stringify(reference);

  it('reads the reference input', () => {
    expect(reference.events).toHaveLength(27);
    expect(reference.events.slice(20).map((e) => [e.id, e.data])).toEqual([
      ['x1', 'a'],
      [undefined, 'b'],
      ['x2', 'c'],
      [undefined, 'd'],
      [undefined, 'e\nf'],
      ['x3', 'g'],
      ['20', '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":20}}'],
    ]);
  });

  for (const kind of KINDS)
    it(`gives the same events in reads of any size at any offset, chunks of ${kind}`, () => {
      for (const size of [7, 64, 150, 151, 333, 1000, 2049])
        for (let offset = 1; offset <= Math.min(size, 160); offset++) {
          const cuts: number[] = [];
          for (let at = offset; at < input.length; at += size) cuts.push(at);
          const got = scan(input, cuts, kind);
          if (JSON.stringify(got) !== referenceText) expect(got, `${size} from ${offset}`).toEqual(reference);
        }
    });
});
