// A listening GET stream may carry no event for as long as its session lives (a server with nothing to
// say): the observer holds its records and its body's watch, not an SSE scanner it never used (about
// 350 bytes on Node 20). Counted by V8's own census of live scanners, not by bytes, which differ between
// Node versions; a first chunk (a comment, as sse-starlette pings) makes one.
import { queryObjects } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { SseScanner } from '../src/sse.js';
import { WireObserver } from '../src/index.js';
import type { FetchLike } from '../src/index.js';

const PING = new TextEncoder().encode(': ping\n\n');

/** A server whose listening streams stay open, silent or after one comment. */
const server =
  (ping: boolean): FetchLike =>
  async () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start: (controller) => {
          if (ping) controller.enqueue(PING.slice());
        },
      }),
      { headers: { 'content-type': 'text/event-stream' } },
    );

const liveScanners = (): number => queryObjects(SseScanner, { format: 'count' }) as number;

/** Opens `n` listening streams through `fetch`, each read until a read waits, as a client's; kept open. */
async function listen(fetch: FetchLike, n: number, ping: boolean, open: unknown[]): Promise<void> {
  for (let i = 0; i < n; i++) {
    const headers = { accept: 'text/event-stream', 'mcp-session-id': `session-${ping}-${i}` };
    const response = await fetch('http://127.0.0.1/mcp', { method: 'GET', headers });
    const reader = response.body!.getReader();
    if (ping) expect((await reader.read()).value).toHaveLength(PING.length);
    void reader.read();
    open.push(response, reader);
  }
}

describe('an open listening stream that carried no event', () => {
  it('holds no SSE scanner; its first chunk makes one', async () => {
    const n = 200;
    const open: unknown[] = [];
    const before = liveScanners();
    await listen(new WireObserver().wrap(server(false)), n, false, open);
    const silent = liveScanners();
    await listen(new WireObserver().wrap(server(true)), n, true, open);
    const pinged = liveScanners();
    expect(open).toHaveLength(4 * n);
    expect(silent - before).toBeLessThanOrEqual(0);
    expect(pinged - silent).toBeGreaterThanOrEqual(n);
  });
});
