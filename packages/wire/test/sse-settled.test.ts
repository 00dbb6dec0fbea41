// With a filtering listener an SSE event reaches the client only once it is complete (so that it can be
// removed), but bytes that carry no event, a `: ping` keep-alive above all, pass as soon as their line
// ends: sse-starlette (the Python SDK's server) pings every 15 s so that load balancers and read timeouts
// do not cut an idle stream, and a ping held until the next event would not keep it alive.
import { describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import type { PushedBody } from '../src/index.js';
import { SseParser } from '../src/sse.js';

const URL_ = 'http://127.0.0.1:1/mcp';
const progress = (n: number) =>
  `id: p${n}\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":${n}}}\n\n`;
const result = 'id: r1\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n';

/** A proxy's `tools/call` (id 1) through a filtering observer that removes the events with id `drop…`. */
function filteredCall(): PushedBody {
  const observer = new WireObserver();
  observer.addListener({ onEvent: (e) => !e.eventId?.startsWith('drop') }, { filters: true });
  const request = observer.proxyRequest(URL_, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-session-id': 's1' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow' } }),
  });
  return observer.proxyResponse(request, 200, { 'content-type': 'text/event-stream' }, true)!;
}

class Received {
  text = '';
  enqueue(chunk: Uint8Array): void {
    this.text += Buffer.from(chunk).toString('latin1');
  }
}

function events(text: string): { id: string | undefined; data: string }[] {
  const out: { id: string | undefined; data: string }[] = [];
  const parser = new SseParser((e) => out.push({ id: e.id, data: e.data }));
  parser.push(Buffer.from(text, 'latin1'));
  parser.end();
  return out;
}

/** Whether a line may be a field of an event (what must stay held while its event is in progress). */
const isField = (line: string) => /^(\xef\xbb\xbf)?(data|id|event|retry)(:|$)/.test(line);

describe('bytes that carry no event, with a filtering listener', () => {
  it('a `: ping` block passes at once, alone or after events, while the event in progress is held', () => {
    const body = filteredCall();
    const received = new Received();
    body.chunk(Buffer.from(': ping\n\n'), received);
    expect(received.text).toBe(': ping\n\n');
    // sse-starlette's form, CRLF, and an unknown field with an empty line: nothing of an event yet.
    body.chunk(Buffer.from(': ping - 2026-12-04 00:00:00\r\n\r\nfoo: bar\n\n'), received);
    expect(received.text).toBe(': ping\n\n: ping - 2026-12-04 00:00:00\r\n\r\nfoo: bar\n\n');
    // An event, a ping, and the start of the next event: the event and the ping go, the rest is held.
    const next = progress(2);
    body.chunk(Buffer.from(`${progress(1)}: ping\n\n${next.slice(0, 20)}`), received);
    expect(received.text.endsWith(`${progress(1)}: ping\n\n`)).toBe(true);
    // A ping line in progress is held until its line ends; then it goes with what completes.
    body.chunk(Buffer.from(`${next.slice(20)}: pi`), received);
    expect(received.text.endsWith(`: ping\n\n${next}`)).toBe(true);
    body.chunk(Buffer.from('ng\n'), received);
    expect(received.text.endsWith(`${next}: ping\n`)).toBe(true);
    body.chunk(Buffer.from(`\n${result}`), received);
    body.end(received);
    expect(events(received.text).map((e) => e.id)).toEqual(['p1', 'p2', 'r1']);
  });

  it('a ping after the first field of an event is the event’s, held with it and removed with it', () => {
    const body = filteredCall();
    const received = new Received();
    body.chunk(Buffer.from(': before\nid: drop-1\n: inside\n'), received);
    expect(received.text).toBe(': before\n');
    body.chunk(
      Buffer.from(`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n: after\n\n`),
      received,
    );
    expect(received.text).toBe(': before\n: after\n\n');
  });

  it('an event ended by a lone CR at a chunk’s end: the LF that completes its CRLF passes, though the event after it is removed', () => {
    // eventsource-parser (the SDK's) waits for a possible LF after a final CR: without it the event is never read.
    const body = filteredCall();
    const received = new Received();
    const first = progress(1).replace(/\n\n$/, '\n\r');
    body.chunk(Buffer.from(first), received);
    expect(received.text).toBe(first);
    body.chunk(Buffer.from(`\n${progress(2).replace('id: p2', 'id: drop-2')}`), received);
    body.end(received);
    expect(received.text).toBe(`${first}\n`);
  });

  it('for any chunking, holds exactly the event in progress: what is unsent begins at a field line or a line in progress', () => {
    const input =
      ': ping\n\n' +
      progress(1) +
      ':\r\n\r\nfoo: 1\r\n' +
      progress(2).replaceAll('\n', '\r') +
      '\n: ping\n\n\n' +
      progress(3).replace('id: p3', 'id: drop-3') +
      '\xef\xbb\xbfdata: not a field mid-stream\n\n: ping\r\n' +
      progress(4).replaceAll('\n', '\r\n') +
      ': ping\n\n' +
      result;
    const bytes = Buffer.from(input, 'latin1');
    let seed = 7;
    const rand = () => (seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32;
    for (let round = 0; round < 300; round++) {
      const body = filteredCall();
      const received = new Received();
      let fed = 0;
      while (fed < bytes.length) {
        const size = round < 40 ? 1 + (round % 4) : 1 + Math.floor(rand() * 60);
        const chunk = bytes.subarray(fed, Math.min(bytes.length, fed + size));
        body.chunk(chunk, received);
        fed += chunk.length;
        const expectedSent = input.slice(0, fed).replace(progress(3).replace('id: p3', 'id: drop-3'), '');
        const removed = input.slice(0, fed).length - expectedSent.length;
        // What the client has is the input (less the removed event) up to some point...
        expect(expectedSent.startsWith(received.text), `round ${round} at ${fed}`).toBe(true);
        // ...and what is held begins with the line in progress or a field of the event in progress.
        const held = input.slice(received.text.length + removed, fed);
        const firstLine = /^[^\r\n]*(\r\n|\r|\n)/.exec(held);
        if (firstLine)
          expect(isField(firstLine[0].trimEnd()), `round ${round} at ${fed}: ${JSON.stringify(held)}`).toBe(true);
      }
      body.end(received);
      expect(events(received.text).map((e) => e.id)).toEqual(['p1', 'p2', 'p4', 'r1']);
      expect(received.text.match(/: ping/g)).toHaveLength(4);
    }
  });
});
