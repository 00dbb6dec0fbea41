// What the observer keeps of a JSON-answered request once it is released and its stream has left its
// session's recent streams: the digest of its terminal, whether it finished and by what proof, kept to
// the requests' retention so that a late terminal of it is still judged. Measured on the heap after full
// GCs; the server is a fetch answering in process (real Response bodies).
import { describe, expect, it } from 'vitest';
import { heldBytes as held } from '../../detector/test/helpers/heap.js';
import { WireObserver } from '../src/index.js';
import type { FetchLike } from '../src/index.js';

const SESSION = '00000001-0000-4000-8000-000000000000';
const RESULT = JSON.stringify({ content: [{ type: 'text', text: 'The weather in Lisbon is 21 °C.' }] });

const server: FetchLike = async (_input, init) => {
  const message = JSON.parse(String(init?.body)) as { id?: number; method: string };
  if (message.id === undefined) return new Response(null, { status: 202 });
  const result = message.method === 'initialize' ? '{"protocolVersion":"2025-06-18","capabilities":{}}' : RESULT;
  return new Response(`{"jsonrpc":"2.0","id":${message.id},"result":${result}}`, {
    headers: { 'content-type': 'application/json', 'mcp-session-id': SESSION },
  });
};

describe('what a released JSON request keeps', () => {
  it('is under 350 bytes a request: its key, the map entries, one number for digest, finish and proof', async () => {
    const observer = new WireObserver();
    const fetch = observer.wrap(server);
    let id = 0;
    const post = async (message: object) =>
      (
        await fetch('http://127.0.0.1/mcp', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'mcp-session-id': SESSION,
            'mcp-protocol-version': '2025-06-18',
          },
          body: JSON.stringify({ jsonrpc: '2.0', ...message }),
        })
      ).text();
    const calls = async (n: number) => {
      for (let i = 0; i < n; i++)
        await post({ id: ++id, method: 'tools/call', params: { name: 'json', arguments: {} } });
    };
    await post({ id: ++id, method: 'initialize', params: {} });
    // Past the session's 32 recent streams, and the code compiled: what follows is kept per request.
    await calls(200);
    const before = held();
    const N = 4_000;
    await calls(N);
    const perRequest = (held() - before) / N;
    // Each is kept, and judges a late terminal: still known as finished, read by the application.
    expect(observer.stats().releasedRequests).toBe(id);
    const kept = observer.getRequest(SESSION, 1000)!;
    expect(kept).toMatchObject({ released: true, terminalCount: 1, finished: true, proof: 'application_read' });
    // About 285 now: the key (a string of three parts, 88 bytes), the map's and its session index's
    // entries, the slot's number and expiry. It was about 485: an entry object and its boxed expiry, the
    // digest's object and boxed digest, and the body's cell in the held-bytes budget with its hold,
    // never unregistered (kept until a full collection and the cleanup after it).
    expect(perRequest).toBeLessThan(350);
  });
});
