// A listening GET stream may carry no event for as long as its session lives (a server with nothing to
// say): what the observer holds for it, measured on the heap after full GCs, is its records and its
// body's watch, not a scanner it never used.
import { describe, expect, it } from 'vitest';
import { heldBytes as held } from '../../detector/test/helpers/heap.js';
import { WireObserver } from '../src/index.js';
import type { FetchLike } from '../src/index.js';

/** A server whose listening streams stay open and silent. */
const server: FetchLike = async () =>
  new Response(new ReadableStream<Uint8Array>({ start: () => undefined }), {
    headers: { 'content-type': 'text/event-stream' },
  });

/** Heap per open listening stream of `n` (after 50 opened first), each with a read waiting, as a client's. */
async function perStream(fetch: FetchLike, n: number): Promise<number> {
  const open: unknown[] = [];
  const listen = async (i: number) => {
    const headers = { accept: 'text/event-stream', 'mcp-session-id': `session-${i}` };
    const response = await fetch('http://127.0.0.1/mcp', { method: 'GET', headers });
    const reader = response.body!.getReader();
    void reader.read();
    open.push(response, reader);
  };
  for (let i = 0; i < 50; i++) await listen(i);
  const before = held();
  for (let i = 50; i < 50 + n; i++) await listen(i);
  const bytes = (held() - before) / n;
  expect(open).toHaveLength(2 * (50 + n));
  return bytes;
}

describe('an open listening stream that carried no event', () => {
  it('holds no SSE scanner: the observer’s part is under 1,400 bytes (about 1,570 with one made at once)', async () => {
    const n = 2000;
    const bare = await perStream(server, n);
    const observer = new WireObserver();
    const observed = await perStream(observer.wrap(server), n);
    // About 1,200 bytes: the stream's record, the tap and the body's watch (the scanner was about 350).
    expect(observed - bare).toBeLessThan(1400);
  });
});
