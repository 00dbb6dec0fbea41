import { describe, expect, it, vi } from 'vitest';
import { WireObserver } from '../src/index.js';
import type { FetchLike, WireRequest } from '../src/index.js';
import { sseServerPerFile } from './helpers/sse-server.js';
import { initialize, post } from './helpers/requests.js';

const sse = sseServerPerFile();

/** The test server has no DELETE: answered here with a real 200 response. */
const withDelete: FetchLike = (input, init) =>
  init?.method === 'DELETE' ? Promise.resolve(new Response(null, { status: 200 })) : globalThis.fetch(input, init);

function observed(options = {}) {
  const observer = new WireObserver(options);
  const released: string[] = [];
  const requests: WireRequest[] = [];
  observer.addListener({ onSessionReleased: (id) => void released.push(id), onRequest: (r) => void requests.push(r) });
  return { observer, released, requests, fetch: observer.wrap(withDelete) };
}

/** Nothing held to parse bodies once they ended, and nothing passed unparsed. */
const noBodies = {
  heldBytes: 0,
  unparsedJsonBodies: 0,
  oversizedEvents: 0,
  unacceptedSessions: 0,
  unacceptedEvictions: 0,
  unkeptIds: 0,
  unreadEncodedBodies: 0,
};
const empty = { sessions: 0, requests: 0, evictions: 0, ...noBodies };

describe('release of wire state', () => {
  it('a finished request leaves the request map when its stream ends after the terminal; its cursors still place', async () => {
    const { observer, fetch, requests } = observed();
    const sessionId = await initialize(fetch, sse.server.url);
    await (
      await fetch(
        sse.server.url,
        post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x' } }, sessionId),
      )
    ).text();
    expect(observer.stats()).toEqual({
      sessions: 1,
      requests: 0,
      evictions: 0,
      releasedSessions: 0,
      releasedRequests: 2,
      ...noBodies,
    });
    // Still known through its stream: terminal count, no payload needed for the decision.
    expect(observer.getRequest(sessionId, 7)?.terminalCount).toBe(1);
    // A cursor from the middle of the finished stream is placed on it, the request terminal.
    await (await fetch(sse.server.url, { headers: { 'mcp-session-id': sessionId, 'last-event-id': 's7-1' } })).text();
    const resume = requests.at(-1)!.resume!;
    expect(resume.requests.map((r) => r.id)).toEqual(['7']);
    expect(resume.terminalObserved).toBe(true);
  });

  it('a request in flight stays until its stream ends', async () => {
    const { observer, fetch } = observed();
    const sessionId = await initialize(fetch, sse.server.url);
    const call = await fetch(
      sse.server.url,
      post({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: {} }, sessionId),
    );
    expect(observer.stats().requests).toBe(1);
    await call.text();
    expect(observer.stats().requests).toBe(0);
  });

  it('a DELETE of the session releases the session and its requests, in flight or not', async () => {
    const { observer, fetch, released } = observed();
    const sessionId = await initialize(fetch, sse.server.url);
    await (
      await fetch(sse.server.url, post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} }, sessionId))
    ).text();
    const unread = await fetch(
      sse.server.url,
      post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: {} }, sessionId),
    );
    expect(observer.stats()).toMatchObject({ sessions: 1, requests: 1 });
    const deleted = await fetch(sse.server.url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId } });
    expect(deleted.status).toBe(200);
    expect(observer.stats()).toEqual({ ...empty, releasedSessions: 1, releasedRequests: 3 });
    expect(observer.getSession(sessionId)).toBeUndefined();
    expect(observer.getRequest(sessionId, 1)).toBeUndefined();
    expect(released).toEqual([sessionId]);
    await unread.body?.cancel();
    // The body that ends after the release changes nothing.
    expect(observer.stats()).toEqual({ ...empty, releasedSessions: 1, releasedRequests: 3 });
  });

  it('a closed transport (standalone stream aborted, nothing in flight) releases the session', async () => {
    sse.server.resumeMode = 'empty-open';
    const { observer, fetch, released } = observed();
    const sessionId = await initialize(fetch, sse.server.url);
    const transport = new AbortController();
    const standalone = await fetch(sse.server.url, {
      headers: { 'mcp-session-id': sessionId, accept: 'text/event-stream' },
      signal: transport.signal,
    });
    const call = await fetch(sse.server.url, {
      ...post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: {} }, sessionId),
      signal: transport.signal,
    });
    const reading = standalone.text().catch(() => 'aborted');
    expect(observer.stats()).toMatchObject({ sessions: 1, requests: 1 });
    transport.abort();
    // The call's body is read only after the abort, as a transport's pending reads end at close.
    expect(await call.text().catch(() => 'aborted')).toBe('aborted');
    expect(await reading).toBe('aborted');
    await vi.waitFor(() => expect(observer.stats().sessions).toBe(0), { timeout: 5_000 });
    expect(observer.stats()).toEqual({ ...empty, releasedSessions: 1, releasedRequests: 2 });
    expect(released).toEqual([sessionId]);
  });

  it('an aborted request stream alone is not a closed transport: the client may resume it', async () => {
    const { observer, fetch, requests } = observed();
    const sessionId = await initialize(fetch, sse.server.url);
    // The server holds the stream 30 ms after its progress event, then cuts it: the client drops it first.
    sse.server.cutNextStream = true;
    const dropped = new AbortController();
    const call = await fetch(sse.server.url, {
      ...post({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: {} }, sessionId),
      signal: dropped.signal,
    });
    const reader = call.body!.getReader();
    await reader.read();
    dropped.abort();
    await reader.read().catch(() => undefined);
    expect(observer.stats()).toEqual({
      sessions: 1,
      requests: 1,
      evictions: 0,
      releasedSessions: 0,
      releasedRequests: 1,
      ...noBodies,
    });
    await (await fetch(sse.server.url, { headers: { 'mcp-session-id': sessionId, 'last-event-id': 's4-1' } })).text();
    expect(requests.at(-1)!.resume!.requests.map((r) => r.id)).toEqual(['4']);
  });
});
