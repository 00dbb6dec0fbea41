import { describe, expect, it } from 'vitest';
import { SseParser, SseScanner } from '../src/sse.js';
import type { SseEvent } from '../src/sse.js';

const encoder = new TextEncoder();

function parse(chunks: string[] | Uint8Array[]): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = new SseParser((event) => events.push(event));
  for (const chunk of chunks) parser.push(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
  parser.end();
  return events;
}

/** What the scanner notes for the observer's JSON-RPC pre-filter, per event (internal fields, read during the call). */
interface Scanned {
  mayHoldId: boolean;
  mayHoldMethod: boolean;
  dataLength: number;
  data: string;
}

function scan(chunks: string[]): Scanned[] {
  const seen: Scanned[] = [];
  const scanner = new SseScanner({
    event: (s) =>
      void seen.push({
        mayHoldId: s.mayHoldId,
        mayHoldMethod: s.mayHoldMethod,
        dataLength: s.dataLength,
        data: s.decodeData(),
      }),
  });
  for (const chunk of chunks) scanner.push(encoder.encode(chunk));
  scanner.end();
  return seen;
}

describe("SseScanner's JSON-RPC pre-filter (internal to the wire observer)", () => {
  it('tells data that may hold a JSON "id" member from data that cannot', () => {
    const events = scan([
      'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n',
      'data: {"jsonrpc":"2.0","id":7,"result":{}}\n\n',
      'data: {"jsonrpc":"2.0",\ndata: "id":7,"result":{}}\n\n',
      'data: {"\\u0069d":7,"result":{}}\n\n',
      'data: {"paid":"x","identity":"y"}\n\n',
      'id: 3\ndata: \n\n',
      // A request: once its "id" is seen, its method key is not looked up (the observer parses it).
      'data: {"jsonrpc":"2.0","id":8,"method":"sampling/createMessage"}\n\n',
      'data: {"jsonrpc":"2.0","method":"notifications/message",\ndata: "id":9}\n\n',
    ]);
    expect(events.map((e) => e.mayHoldId)).toEqual([false, true, true, true, false, false, true, true]);
    expect(events.map((e) => e.mayHoldMethod)).toEqual([true, false, false, false, false, false, false, true]);
    expect(events.map((e) => e.dataLength)).toEqual(
      events.map((e) => encoder.encode(e.data.replaceAll('\n', '')).length),
    );
    expect(events[5]!.dataLength).toBe(0);
  });

  it('finds "id" members wherever the chunks split them', () => {
    const text = 'data: {"x":1}\n\ndata: {"id":1,"result":{}}\n\ndata: {"method":"m"}\n\n';
    for (let cut = 1; cut < text.length; cut++) {
      const events = scan([text.slice(0, cut), text.slice(cut)]);
      expect(
        events.map((e) => e.mayHoldId),
        `cut at ${cut}`,
      ).toEqual([false, true, false]);
      expect(
        events.map((e) => e.mayHoldMethod),
        `cut at ${cut}`,
      ).toEqual([false, false, true]);
    }
  });

  it('tells a "method" key followed by a colon, wherever the chunks split the data', () => {
    const datas = [
      '{"method":"notifications/progress","params":{}}',
      '{"method" \t :"m"}',
      '{"jsonrpc":"2.0","method":"notifications/progress"}',
      '{"jsonrpc":"2.0", "method":"m"}',
      '{"jsonrpc":"1.0","method":"m"}',
      '{"jsonrpc":"2.0","methods":"m"}',
      '{"method":1}',
      '{"method"}',
      '{"method" x:1,"y":2}',
      '{"methodx":1}',
      '{"jsonrpc":"2.0","params":{},"method":"m"}',
      '{"method"',
      '{"method',
      '{ "method":"m"}',
      '{"\\u006dethod":"m"}',
      '{"params":{"a":"method"},"x":1}',
    ];
    // The reference: a `"method"` key followed by optional spaces or tabs and a colon, anywhere.
    const expected = datas.map((data) => /"method"[ \t]*:/.test(data));
    expect(expected).toEqual([
      true,
      true,
      true,
      true,
      true,
      false,
      true,
      false,
      false,
      false,
      true,
      false,
      false,
      true,
      false,
      false,
    ]);
    const text = datas.map((data) => `event: message\r\ndata: ${data}\r\n\r\n`).join('');
    expect(scan([text]).map((e) => e.mayHoldMethod)).toEqual(expected);
    for (let cut = 1; cut < text.length; cut++)
      expect(
        scan([text.slice(0, cut), text.slice(cut)]).map((e) => e.mayHoldMethod),
        `cut at ${cut}`,
      ).toEqual(expected);
  });

  it('stays off the public event: SseParser reports plain event-stream fields', () => {
    const [event] = parse(['id: 1\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n']);
    expect(Object.keys(event!).filter((key) => key.startsWith('mayHold'))).toEqual([]);
  });
});

describe('SseParser decodes lazily', () => {
  it('decodes UTF-8 data and ids, also split inside a character', () => {
    const bytes = encoder.encode('id: é-1\nevent: méssage\ndata: {"text":"žluťoučký 🐎"}\n\n');
    for (let cut = 1; cut < bytes.length; cut++) {
      const [event] = parse([bytes.slice(0, cut), bytes.slice(cut)]);
      expect([event!.id, event!.event, event!.data], `cut at ${cut}`).toEqual([
        'é-1',
        'méssage',
        '{"text":"žluťoučký 🐎"}',
      ]);
    }
  });

  it('keeps parsing a line longer than many chunks', () => {
    const long = 'x'.repeat(50_000);
    const text = `data: ${long}\n\n`;
    const chunks: string[] = [];
    for (let i = 0; i < text.length; i += 1000) chunks.push(text.slice(i, i + 1000));
    const [event] = parse(chunks);
    expect(event!.data).toBe(long);
    expect(event!.dataLength).toBe(long.length);
  });
});
