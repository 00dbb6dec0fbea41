// What the wire holds of a body is bounded by bytes: an SSE event is gathered in time linear in its
// bytes, one larger than maxHeldEventBytes passes as it arrives (unparsed, even when filtering), and
// JSON bodies and carried events share one budget (maxHeldBytes).
import { describe, expect, it, vi } from 'vitest';
import { SseParser, SseScanner } from '../src/sse.js';
import type { SseEvent, SseSink } from '../src/sse.js';
import { WireObserver } from '../src/index.js';
import type { PushedBody, WireRequest } from '../src/index.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const URL_ = 'http://127.0.0.1:1/mcp';

/** Splits bytes into chunks of `size`. */
function chunksOf(bytes: Uint8Array, size: number): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
  return chunks;
}

/** A result event whose data is one JSON line of about `size` bytes. */
function bigResult(id: number, size: number, eventId: string, idLineFirst = true): string {
  const data = JSON.stringify({ jsonrpc: '2.0', id, result: { text: 'r'.repeat(size) } });
  return idLineFirst ? `id: ${eventId}\ndata: ${data}\n\n` : `data: ${data}\nid: ${eventId}\n\n`;
}

describe('SseScanner gathering a long event', () => {
  it('copies and reads one 16 MiB event fed in 64 KiB chunks a few times its size, not its size times its chunks', () => {
    const input = Buffer.from(bigResult(1, 16 * MiB, 'e1'));
    const events: SseEvent[] = [];
    const parser = new SseParser((event) => events.push(event));
    // The work: bytes written into typed arrays, and bytes read into the scanner's latin1 text.
    let copied = 0;
    let read = 0;
    const set = vi.spyOn(Uint8Array.prototype, 'set');
    const toString = vi.spyOn(Buffer.prototype, 'toString');
    try {
      for (const chunk of chunksOf(input, 64 * KiB)) parser.push(chunk);
      for (const [source] of set.mock.calls) copied += (source as ArrayLike<number>).length;
      for (const [, start = 0, end = 0] of toString.mock.calls) read += (end as number) - (start as number);
    } finally {
      set.mockRestore();
      toString.mockRestore();
    }
    expect(events).toHaveLength(1);
    expect(Buffer.from(events[0]!.raw).equals(input)).toBe(true);
    // Each byte is written once where it arrives, and moved when its buffer doubles: under 3 times in all.
    expect(copied).toBeLessThan(4 * input.length);
    expect(read).toBeLessThan(2 * input.length);
    expect(parser.end()).toHaveLength(0);
  });
});

/** A sink that lets the scanner hold at most `limit` bytes, and records what it reports. */
class BoundedSink implements SseSink {
  readonly events: { id: string | undefined; oversized: boolean; dataLength: number; data: string }[] = [];
  most = 0;
  constructor(private readonly limit: number) {}
  event(scan: SseScanner): void {
    this.events.push({
      id: scan.id,
      oversized: scan.oversized,
      dataLength: scan.dataLength,
      data: scan.oversized ? '' : scan.decodeData(),
    });
  }
  held(bytes: number): boolean {
    if (bytes > this.limit) return false;
    this.most = Math.max(this.most, bytes);
    return true;
  }
}

describe('SseScanner with a bound on what it holds', () => {
  const cases: [string, string][] = [
    // A data line longer than the longest line an oversized event keeps (skipped unread).
    ['one long data line, id after it', `data: ${'x'.repeat(5000)}\nid: abc\n\ndata: {"x":1}\n\n`],
    // Short lines: the event is over the bound, each line is not.
    ['many short data lines', `id: abc\n${'data: yyyyyyyy\n'.repeat(200)}\ndata: {"x":1}\n\n`],
    ['CRLF line ends', `data: ${'x'.repeat(5000)}\r\nid: abc\r\n\r\ndata: {"x":1}\r\n\r\n`],
    ['CR line ends', `data: ${'x'.repeat(5000)}\rid: abc\r\rdata: {"x":1}\r\r`],
  ];
  for (const [name, text] of cases) {
    it(`lets an oversized event go and still reads its id, whatever the chunks (${name})`, () => {
      const bytes = Buffer.from(text);
      const dataLength = text.startsWith('id') ? 200 * 'yyyyyyyy'.length : 5000;
      // Chunks smaller than the bound: an event that arrives whole in one chunk is parsed whatever its size.
      for (const size of [1, 2, 3, 7, 64, 500, 999]) {
        const sink = new BoundedSink(1000);
        const scanner = new SseScanner(sink);
        for (const chunk of chunksOf(bytes, size)) scanner.push(chunk);
        scanner.end();
        expect(sink.events, `chunks of ${size}`).toEqual([
          { id: 'abc', oversized: true, dataLength, data: '' },
          { id: undefined, oversized: false, dataLength: 7, data: '{"x":1}' },
        ]);
        expect(sink.most).toBeLessThanOrEqual(1000);
      }
    });
  }
});

/** A proxy's exchange through the observer's door: a POST of `tools/call` id `id`, its SSE body pushed by hand. */
function proxyCall(observer: WireObserver, id: number): { request: WireRequest; body: PushedBody } {
  const request = observer.proxyRequest(URL_, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-session-id': 's1' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'big' } }),
  });
  const body = observer.proxyResponse(request, 200, { 'content-type': 'text/event-stream' }, true)!;
  return { request, body };
}

/** What a proxy's client receives. */
class Received {
  readonly chunks: Uint8Array[] = [];
  length = 0;
  enqueue(chunk: Uint8Array): void {
    // Copied: a view of the observer's buffer is valid as long as the client needs it, a copy proves the bytes.
    this.chunks.push(Uint8Array.from(chunk));
    this.length += chunk.length;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString();
  }
}

describe('an SSE event larger than maxHeldEventBytes', () => {
  for (const filtering of [true, false]) {
    it(`passes as it arrives, unparsed and never held whole${filtering ? ', even when a listener filters' : ''}`, () => {
      const observer = new WireObserver({ maxHeldEventBytes: MiB });
      if (filtering) observer.addListener({ onEvent: (event) => event.eventId !== 'drop' }, { filters: true });
      const { body } = proxyCall(observer, 1);
      const drop = 'id: drop\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n';
      const after = 'id: e3\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n';
      // The big event's id line comes after its data: it is read in bounded memory all the same.
      const big = bigResult(1, 16 * MiB, 'e2', false);
      const input = Buffer.from(`id: e1\ndata: {}\n\n${big}${drop}${after}`);
      const received = new Received();
      let fed = 0;
      let most = 0;
      for (const chunk of chunksOf(input, 64 * KiB)) {
        body.chunk(chunk, received);
        fed += chunk.length;
        most = Math.max(most, observer.stats().heldBytes);
        // Once over the bound, the event is given out as it comes: the client has every byte fed so far.
        if (fed > 2 * MiB && fed < 16 * MiB) expect(received.length).toBe(fed);
      }
      body.end(received);
      expect(most).toBeLessThanOrEqual(MiB);
      // Byte for byte, but for the event the listener removed (it is filtered as before).
      expect(received.text()).toBe(input.toString().replace(filtering ? drop : '', ''));
      expect(observer.stats()).toMatchObject({ oversizedEvents: 1, heldBytes: 0 });
      const stream = body.stream;
      expect(stream.lastEventId).toBe('e3');
      // Its terminal was not seen: the next one is the request's first.
      const record = observer.getRequest('s1', 1)!;
      expect([record.terminalCount, record.firstTerminalEventId]).toEqual([1, 'e3']);
    });
  }

  it('is the client’s cursor when it carried an id (a resume from it is placed on its stream)', () => {
    const observer = new WireObserver({ maxHeldEventBytes: MiB });
    observer.addListener({ onEvent: () => true }, { filters: true });
    const { body } = proxyCall(observer, 2);
    const received = new Received();
    for (const chunk of chunksOf(Buffer.from(bigResult(2, 3 * MiB, 'big-1')), 64 * KiB)) body.chunk(chunk, received);
    body.end(received);
    expect(body.stream.deliveredEventId).toBe('big-1');
    const resume = observer.proxyRequest(URL_, { headers: { 'mcp-session-id': 's1', 'last-event-id': 'big-1' } });
    expect(resume.resume!.from).toBe(body.stream);
  });
});

describe('the held-bytes budget (maxHeldBytes)', () => {
  const result = (id: number, size: number) =>
    Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, result: { text: 'j'.repeat(size) } }));

  function jsonCall(observer: WireObserver, id: number): PushedBody {
    const request = observer.proxyRequest(URL_, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': 's1' },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'j' } }),
    });
    return observer.proxyResponse(request, 200, { 'content-type': 'application/json' }, true)!;
  }

  it('is shared by the JSON bodies and SSE events held at once: what would pass it passes unparsed, counted', () => {
    const observer = new WireObserver({ maxHeldBytes: MiB });
    const sink = new Received();
    const first = jsonCall(observer, 1);
    const second = jsonCall(observer, 2);
    const sse = proxyCall(observer, 3).body;
    const one = result(1, 700 * KiB);
    const two = result(2, 700 * KiB);
    first.chunk(one.subarray(0, 600 * KiB), sink);
    second.chunk(two.subarray(0, 300 * KiB), sink);
    // The SSE event carried over its chunk would take the total past the budget: it passes unparsed.
    sse.chunk(Buffer.from(`id: s-1\ndata: ${'s'.repeat(200 * KiB)}`), sink);
    expect(observer.stats()).toMatchObject({ heldBytes: 900 * KiB, oversizedEvents: 1 });
    // The second body would too: it lets go of what it held, and passes on unparsed.
    second.chunk(two.subarray(300 * KiB), sink);
    expect(observer.stats()).toMatchObject({ heldBytes: 600 * KiB, unparsedJsonBodies: 1 });
    first.chunk(one.subarray(600 * KiB), sink);
    first.end(sink);
    second.end(sink);
    sse.chunk(Buffer.from('\n\n'), sink);
    sse.end(sink);
    expect(observer.stats()).toMatchObject({ heldBytes: 0, unparsedJsonBodies: 1, oversizedEvents: 1 });
    expect(observer.getRequest('s1', 1)!.terminalCount).toBe(1);
    expect(observer.getRequest('s1', 2)!.terminalCount).toBe(0);
    expect(observer.getRequest('s1', 3)!.terminalCount).toBe(0);
  });

  it('gets back what a body held when it fails, and counts a JSON body over maxJsonBodyBytes', () => {
    const observer = new WireObserver({ maxJsonBodyBytes: 100 * KiB });
    const sink = new Received();
    const failing = jsonCall(observer, 1);
    failing.chunk(result(1, 50 * KiB).subarray(0, 40 * KiB), sink);
    const sse = proxyCall(observer, 2).body;
    sse.chunk(Buffer.from('data: {"jsonrpc":"2.0",'), sink);
    expect(observer.stats().heldBytes).toBeGreaterThan(40 * KiB);
    failing.fail(new Error('upstream broke'));
    sse.fail(Object.assign(new Error('client left'), { name: 'AbortError' }));
    expect(observer.stats().heldBytes).toBe(0);

    const large = jsonCall(observer, 3);
    large.chunk(result(3, 200 * KiB), sink);
    large.end(sink);
    expect(observer.stats()).toMatchObject({ heldBytes: 0, unparsedJsonBodies: 1 });
    expect(observer.getRequest('s1', 3)!.terminalCount).toBe(0);
  });
});
