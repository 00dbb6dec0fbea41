// The scanner tells an event's closing blank line by its first byte, without a search for the line's end
// (LF-only streams, the usual case). A blank line must still end an event wherever it stands: first in a
// chunk, after a line carried from the last chunk, after a comment, in a run of blank lines, after a
// BOM, and a line that only begins like one (an LF later) must not be taken for one.
import { describe, expect, it } from 'vitest';
import { SseParser } from '../src/sse.js';
import type { SseEvent } from '../src/sse.js';

const encoder = new TextEncoder();

function parse(bytes: Uint8Array, cuts: number[]): { events: SseEvent[]; rest: Uint8Array } {
  const events: SseEvent[] = [];
  const parser = new SseParser((event) => events.push(event));
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    parser.push(bytes.subarray(from, cut));
    from = cut;
  }
  return { events, rest: parser.end() };
}

const summary = (e: SseEvent) => [e.id, e.event, e.data, e.hasData];
const joined = (events: SseEvent[], rest: Uint8Array) =>
  Buffer.concat([...events.map((e) => e.raw), rest]).toString('latin1');

const STREAM =
  '\uFEFF\n\nid: 1\nevent: message\ndata: {"a":1}\n\n\n\n: ping\n\nid:2\ndata\n\ndata: x\ndata:\n\nid: 3\nevent:\ndata: \u00e9\n\nid: 4\n\u0000\nid:5\ndata: end';
const EXPECTED = [
  ['1', 'message', '{"a":1}', true],
  ['2', '', '', true],
  // No id of its own: the last event id stays the reader's, as the spec says; the event has none.
  [undefined, '', 'x\n', true],
  ['3', '', '\u00e9', true],
];

describe('SseScanner, blank lines of LF-only streams', () => {
  it('ends each event at its blank line, read whole', () => {
    const bytes = encoder.encode(STREAM);
    const { events, rest } = parse(bytes, []);
    expect(events.map(summary)).toEqual(EXPECTED);
    // The unterminated last event (id 4's line ends, then the NUL line and id:5 never close) is given back.
    expect(joined(events, rest)).toBe(Buffer.from(bytes).toString('latin1'));
  });

  it('ends each event at its blank line wherever two cuts split the stream', () => {
    const bytes = encoder.encode(STREAM);
    for (let a = 1; a < bytes.length; a++)
      for (let b = a; b < bytes.length; b += 3) {
        const { events, rest } = parse(bytes, a === b ? [a] : [a, b]);
        expect(events.map(summary), `cuts ${a}, ${b}`).toEqual(EXPECTED);
        expect(joined(events, rest)).toBe(Buffer.from(bytes).toString('latin1'));
      }
  });

  it('takes no line for blank that only begins at a chunk’s end, and reads a chunk of LFs alone', () => {
    const events: SseEvent[] = [];
    const parser = new SseParser((event) => events.push(event));
    parser.push(encoder.encode('id: 9\ndata: a'));
    parser.push(encoder.encode('b\n'));
    expect(events).toHaveLength(0);
    parser.push(encoder.encode('\n\n\n'));
    parser.push(encoder.encode('\n'));
    expect(events.map(summary)).toEqual([['9', '', 'ab', true]]);
    parser.push(encoder.encode('data: c\n'));
    parser.push(encoder.encode('\n'));
    expect(events.map(summary)).toEqual([
      ['9', '', 'ab', true],
      [undefined, '', 'c', true],
    ]);
  });
});
