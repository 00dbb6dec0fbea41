// The scanner makes no id text for an event nobody is told of (a progress notification): the observer
// keeps the id's hash for the cursors and makes the text of the chunk's last such id only. What a stream
// shows after each chunk must be what it would show had every id been set as it came.
import { describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';

const URL_ = 'http://127.0.0.1:1/mcp';
/** Event-store ids as the SDK's server writes them: long enough to be read from the bytes, not sliced. */
const id = (n: number) => `_GET_stream-0123456789abcdef0123456789abcdef_${n}`;
const progress = (n: number) =>
  `id: ${id(n)}\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":${n}}}\n\n`;

describe('the ids of events told to no listener', () => {
  it('leave the stream at the last id of each chunk, across an event split between chunks, with every cursor placed', () => {
    const observer = new WireObserver();
    let told = 0;
    observer.addListener({ eventsWanted: 'deciding', onEvent: () => void told++ });
    const request = observer.proxyRequest(URL_, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': 's1' },
      body: Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'slow' } })),
    });
    const body = observer.proxyResponse(request, 200, { 'content-type': 'text/event-stream' }, true)!;
    const stream = body.stream;
    const sink = { enqueue: () => undefined };
    const fourth = progress(4);
    const cut = fourth.indexOf('data:') + 10;
    body.chunk(Buffer.from(progress(1) + progress(2) + progress(3) + fourth.slice(0, cut)), sink);
    expect([stream.lastEventId, stream.deliveredEventId, stream.deliveredEvents]).toEqual([id(3), id(3), 3]);
    body.chunk(Buffer.from(fourth.slice(cut) + progress(5)), sink);
    expect([stream.lastEventId, stream.deliveredEventId, stream.deliveredEvents]).toEqual([id(5), id(5), 5]);
    // A chunk of an event without an id leaves the last id as it was.
    body.chunk(Buffer.from('data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'), sink);
    expect([stream.lastEventId, stream.deliveredEventId, stream.deliveredEvents]).toEqual([id(5), id(5), 6]);
    // The terminal is told, with its own id already the stream's (the progress before it set first).
    const seen: (string | undefined)[] = [];
    observer.addListener({
      eventsWanted: 'deciding',
      onEvent: (e) => void seen.push(e.stream.lastEventId),
    });
    body.chunk(Buffer.from(progress(6) + `id: ${id(7)}\ndata: {"jsonrpc":"2.0","id":5,"result":{}}\n\n`), sink);
    body.end(sink);
    expect(seen).toEqual([id(7)]);
    expect([stream.lastEventId, stream.deliveredEventId, stream.deliveredEvents]).toEqual([id(7), id(7), 8]);
    expect(told).toBe(1);
    const cursors = observer.getSession('s1')!.cursors;
    for (const n of [1, 2, 3, 4, 5, 6, 7]) expect(cursors.get(id(n)), id(n)).toBe(stream);
  });

  it('keep the id of an event carried into a read whose later events have none', () => {
    const observer = new WireObserver();
    const request = observer.proxyRequest(URL_, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': 's2' },
      body: Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'slow' } })),
    });
    const body = observer.proxyResponse(request, 200, { 'content-type': 'text/event-stream' }, true)!;
    const stream = body.stream;
    const sink = { enqueue: () => undefined };
    // Its id line comes after its first field, and the read is cut between them: the id is in the next read.
    const second = `event: message\n${progress(2)}`;
    const cut = second.indexOf('id:');
    // Plain Uint8Arrays, as a fetch's reads: the carried event is gathered apart from the read's rest.
    body.chunk(new Uint8Array(Buffer.from(progress(1) + second.slice(0, cut))), sink);
    expect([stream.lastEventId, stream.deliveredEvents]).toEqual([id(1), 1]);
    // The carried event ends early in the read; after it, a keep-alive and an event without an id.
    const rest = ': keep-alive\n\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n';
    body.chunk(new Uint8Array(Buffer.from(second.slice(cut) + rest)), sink);
    expect([stream.lastEventId, stream.deliveredEventId, stream.deliveredEvents]).toEqual([id(2), id(2), 3]);
    expect(observer.getSession('s2')!.cursors.get(id(2))).toBe(stream);
  });
});
