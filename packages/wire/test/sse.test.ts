import { describe, expect, it } from 'vitest';
import { SseParser } from '../src/sse.js';
import type { SseEvent } from '../src/sse.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function parseInChunks(bytes: Uint8Array, cuts: number[]): { events: SseEvent[]; raw: Uint8Array[]; rest: Uint8Array } {
  const events: SseEvent[] = [];
  const parser = new SseParser((event) => events.push(event));
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    parser.push(bytes.slice(from, cut));
    from = cut;
  }
  const rest = parser.end();
  return { events, raw: events.map((e) => e.raw), rest };
}

function concat(parts: Uint8Array[]): Uint8Array {
  return Uint8Array.from(parts.flatMap((p) => [...p]));
}

/** Deterministic PRNG so a failing chunking can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const summary = (e: SseEvent) => ({ id: e.id, event: e.event, data: e.data, retry: e.retry, hasData: e.hasData });

describe('SseParser', () => {
  it('parses the fields of the SSE format', () => {
    const text = ': comment\nid: 7\nevent: message\ndata: {"a":1}\ndata:second\nretry: 1500\n\nid:8\ndata\n\n';
    const { events } = parseInChunks(encoder.encode(text), []);
    expect(events.map(summary)).toEqual([
      { id: '7', event: 'message', data: '{"a":1}\nsecond', retry: 1500, hasData: true },
      { id: '8', event: '', data: '', retry: undefined, hasData: true },
    ]);
  });

  it('accepts CRLF, CR and LF line ends and a leading BOM', () => {
    const text = '\uFEFFid: 1\r\ndata: a\r\n\r\nid: 2\rdata: b\r\rid: 3\ndata: c\n\n';
    const { events } = parseInChunks(encoder.encode(text), []);
    expect(events.map((e) => [e.id, e.data])).toEqual([
      ['1', 'a'],
      ['2', 'b'],
      ['3', 'c'],
    ]);
  });

  it('reports an event with an id and no data (a priming event), and ignores bad retry values', () => {
    const { events } = parseInChunks(encoder.encode('id: p-0\nretry: soon\n\n'), []);
    expect(events.map(summary)).toEqual([{ id: 'p-0', event: '', data: '', retry: undefined, hasData: false }]);
  });

  it('returns an unterminated last event from end() instead of dispatching it', () => {
    const bytes = encoder.encode('data: done\n\ndata: partial');
    const { events, rest } = parseInChunks(bytes, [3]);
    expect(events.map((e) => e.data)).toEqual(['done']);
    expect(decoder.decode(rest)).toBe('data: partial');
  });

  it('gives the same events and exactly the input bytes for any chunking', () => {
    const text =
      '\uFEFF: hello\r\nid: 1\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\r\n\r\n' +
      'id: 2\rdata: é ü 漢字\r\rretry: 10\n\n:keepalive\n\nid: 3\ndata: a\ndata: b\n\n' +
      'event: x\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\r\n\r\ndata: tail';
    const bytes = encoder.encode(text);
    const reference = parseInChunks(bytes, []);
    expect(reference.events).toHaveLength(5);
    const next = random(42);
    for (let round = 0; round < 300; round++) {
      const cuts = new Set<number>();
      const count = Math.floor(next() * 12);
      for (let i = 0; i < count; i++) cuts.add(1 + Math.floor(next() * (bytes.length - 1)));
      const chunked = parseInChunks(
        bytes,
        [...cuts].sort((a, b) => a - b),
      );
      expect(chunked.events.map(summary)).toEqual(reference.events.map(summary));
      expect(concat([...chunked.raw, chunked.rest])).toEqual(bytes);
    }
  });

  it('splits at every byte boundary, including between CR and LF', () => {
    const bytes = encoder.encode('id: 1\r\ndata: x\r\n\r\nid: 2\r\ndata: y\r\n\r\n');
    const everyByte = Array.from({ length: bytes.length - 1 }, (_, i) => i + 1);
    const { events, raw, rest } = parseInChunks(bytes, everyByte);
    expect(events.map((e) => [e.id, e.data])).toEqual([
      ['1', 'x'],
      ['2', 'y'],
    ]);
    expect(concat([...raw, rest])).toEqual(bytes);
  });
});
