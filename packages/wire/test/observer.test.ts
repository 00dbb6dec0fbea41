import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import type { StreamEnd, WireEvent, WireListener, WireRequest, WireResponse } from '../src/index.js';
import { startSseServer } from './helpers/sse-server.js';
import type { SseServer } from './helpers/sse-server.js';
import { initialize, post } from './helpers/requests.js';

let server: SseServer;
beforeAll(async () => {
  server = await startSseServer();
});
afterAll(async () => {
  await server.close();
});

function recorder() {
  const requests: WireRequest[] = [];
  const responses: WireResponse[] = [];
  const events: WireEvent[] = [];
  const ends: { streamId: string; how: StreamEnd }[] = [];
  const listener: WireListener = {
    onRequest: (r) => void requests.push(r),
    onResponse: (_q, r) => void responses.push(r),
    onEvent: (e) => void events.push(e),
    onStreamEnd: (_q, s, how) => void ends.push({ streamId: s.id, how }),
  };
  return { requests, responses, events, ends, listener };
}

describe('WireObserver', () => {
  it('follows a request from POST to its terminal event, and recognises the replay after it', async () => {
    const observer = new WireObserver();
    const seen = recorder();
    observer.addListener(seen.listener);
    const fetch = observer.wrap();

    const sessionId = await initialize(fetch, server.url);
    expect(observer.getSession(sessionId)?.initializedHere).toBe(true);
    expect(observer.getSession(sessionId)?.protocolVersion).toBe('2025-06-18');

    const call = await fetch(
      server.url,
      post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'stream_progress' } }, sessionId),
    );
    const text = await call.text();
    expect(text).toBe(server.written.get('POST 1'));

    const terminals = seen.events.flatMap((e) => e.terminals);
    expect(
      terminals.map((t) => [t.request.id, t.request.method, t.request.target, t.outcome, t.duplicate, t.delivery]),
    ).toEqual([
      ['0', 'initialize', undefined, 'result', false, 'live'],
      ['1', 'tools/call', 'stream_progress', 'result', false, 'live'],
    ]);
    const callStream = seen.responses[1]!.stream!;
    expect(callStream.lastEventId).toBe('s1-2');
    expect(callStream.ended).toBe('clean');
    expect(seen.requests[1]!.reattach).toBeUndefined();

    // The stale cursor of a finished request: the client "resumes" and gets the result again.
    const replay = await fetch(server.url, { headers: { 'mcp-session-id': sessionId, 'last-event-id': 's1-1' } });
    expect(await replay.text()).toContain('"result"');
    // s1-1 is not where the client stopped reading, yet it is an id the client was given on that stream.
    const resumeRequest = seen.requests[2]!;
    expect(resumeRequest.resume?.from?.id).toBe(callStream.id);
    expect(resumeRequest.resume?.terminalObserved).toBe(true);
    expect(resumeRequest.reattach?.trigger).toBe('stream_closed');
    expect(observer.getRequest(sessionId, 1)?.terminalCount).toBe(2);

    const replayStream = seen.responses[2]!.stream!;
    const stale = await fetch(server.url, { headers: { 'mcp-session-id': sessionId, 'last-event-id': 's1-2' } });
    await stale.text();
    const staleRequest = seen.requests[3]!;
    expect(staleRequest.resume?.from?.id).toBe(replayStream.id);
    expect(staleRequest.resume?.requests.map((r) => r.id)).toEqual(['1']);
    expect(staleRequest.resume?.terminalObserved).toBe(true);
    expect(staleRequest.reattach?.trigger).toBe('stream_closed');
    expect(staleRequest.reattach?.previous?.id).toBe(replayStream.id);
  });

  it('places a cursor it never delivered nowhere, and still finds the replayed response by its id', async () => {
    const observer = new WireObserver();
    const seen = recorder();
    observer.addListener(seen.listener);
    const fetch = observer.wrap();
    const sessionId = await initialize(fetch, server.url);
    await (
      await fetch(server.url, post({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: {} }, sessionId))
    ).text();
    // Another process's id for this session: the server replays it, the observer cannot place it.
    const foreign = await initialize(globalThis.fetch, server.url);
    await (
      await globalThis.fetch(server.url, post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: {} }, foreign))
    ).text();
    await (await fetch(server.url, { headers: { 'mcp-session-id': sessionId, 'last-event-id': 's7-1' } })).text();
    const resume = seen.requests.at(-1)!.resume!;
    expect(resume.from).toBeUndefined();
    expect(resume.terminalObserved).toBe(false);
  });

  it('forgets the oldest cursors beyond its per-session cap', async () => {
    const observer = new WireObserver({ cursorsPerSession: 3 });
    const fetch = observer.wrap();
    const sessionId = await initialize(fetch, server.url);
    for (const id of [30, 31]) {
      await (await fetch(server.url, post({ jsonrpc: '2.0', id, method: 'tools/call', params: {} }, sessionId))).text();
    }
    const cursors = observer.getSession(sessionId)!.cursors;
    expect(cursors.size).toBe(3);
    expect(['s30-1', 's30-2', 's31-1', 's31-2', 's32-1'].map((id) => cursors.get(id)?.requests[0]?.id)).toEqual([
      undefined,
      '30',
      '31',
      '31',
      undefined,
    ]);
  });

  it('marks a terminal replayed on a resumed stream as a duplicate replay', async () => {
    const observer = new WireObserver();
    const seen = recorder();
    observer.addListener(seen.listener);
    const fetch = observer.wrap();
    const sessionId = await initialize(fetch, server.url);

    const call = await fetch(
      server.url,
      post({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'x' } }, sessionId),
    );
    await call.text();
    const resumed = await fetch(server.url, { headers: { 'mcp-session-id': sessionId, 'last-event-id': 's5-1' } });
    // s5-1 was not the last id of the stream, so this cursor is not recognised as the stream's tail;
    // the request is still found by the response id in the replayed events.
    await resumed.text();
    const replayed = seen.events.flatMap((e) => e.terminals).filter((t) => t.request.id === '5');
    expect(replayed.map((t) => [t.duplicate, t.delivery])).toEqual([
      [false, 'live'],
      [true, 'replay'],
    ]);
    expect(observer.getRequest(sessionId, 5)?.terminalCount).toBe(2);
  });

  it('removes an event a filtering listener refuses, forwarding every other byte unchanged (a comment before it too)', async () => {
    const observer = new WireObserver();
    observer.addListener({ onEvent: (e) => e.terminals.length === 0 }, { filters: true });
    const fetch = observer.wrap();
    const sessionId = await initialize(fetch, server.url);
    const call = await fetch(server.url, post({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: {} }, sessionId));
    const text = await call.text();
    const original = server.written.get('POST 9')!;
    const resultEvent = original.slice(original.indexOf(': keepalive\n\n') + ': keepalive\n\n'.length);
    expect(text).toBe(original.slice(0, original.length - resultEvent.length));
  });

  it('tells a clean end, a network error and a client abort apart', async () => {
    const observer = new WireObserver();
    const seen = recorder();
    observer.addListener(seen.listener);
    const fetch = observer.wrap();
    const sessionId = await initialize(fetch, server.url);

    server.cutNextStream = true;
    const cut = await fetch(server.url, post({ jsonrpc: '2.0', id: 20, method: 'tools/call', params: {} }, sessionId));
    await expect(cut.text()).rejects.toThrow();

    const aborted = await fetch(
      server.url,
      post({ jsonrpc: '2.0', id: 21, method: 'tools/call', params: {} }, sessionId),
    );
    await aborted.body!.cancel();

    const clean = await fetch(
      server.url,
      post({ jsonrpc: '2.0', id: 22, method: 'tools/call', params: {} }, sessionId),
    );
    await clean.text();

    expect(seen.ends.map((e) => e.how)).toEqual(['clean', 'error', 'abort', 'clean']);
    const afterCut = await fetch(server.url, { headers: { 'mcp-session-id': sessionId, 'last-event-id': 's20-1' } });
    await afterCut.text();
    const resume = seen.requests.at(-1)!;
    expect(resume.resume?.terminalObserved).toBe(false);
    expect(resume.reattach?.trigger).toBe('stream_error');
  });

  it('calls a session id this process never initialised a new transport', async () => {
    const observer = new WireObserver();
    const seen = recorder();
    observer.addListener(seen.listener);
    const fetch = observer.wrap();
    const response = await fetch(
      server.url,
      post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} }, 'from-elsewhere'),
    );
    await response.text();
    await (
      await fetch(server.url, post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: {} }, 'from-elsewhere'))
    ).text();
    expect(seen.requests.map((r) => r.reattach?.trigger)).toEqual(['new_transport', undefined]);
  });

  it('refuses a request locally when a listener throws, sending nothing', async () => {
    const observer = new WireObserver();
    const refused: unknown[] = [];
    observer.addListener({
      onRequest: (r) => {
        if (r.httpMethod === 'DELETE') throw new Error('no');
      },
      onRefused: (_r, e) => void refused.push(e),
    });
    let sent = 0;
    const fetch = observer.wrap((input, init) => {
      sent++;
      return globalThis.fetch(input, init);
    });
    await expect(fetch(server.url, { method: 'DELETE' })).rejects.toThrow('no');
    expect(sent).toBe(0);
    expect(refused).toHaveLength(1);
  });

  it('keeps its request state within the cap', async () => {
    const observer = new WireObserver({ maxRequests: 10 });
    const fetch = observer.wrap();
    const sessionId = await initialize(fetch, server.url);
    // Bodies left unread: the calls stay in flight, so only the cap bounds them.
    const open: Response[] = [];
    for (let id = 100; id < 130; id++) {
      open.push(await fetch(server.url, post({ jsonrpc: '2.0', id, method: 'tools/call', params: {} }, sessionId)));
    }
    // initialize (finished, released) and 30 calls in flight: the 20 oldest pushed out by the cap.
    expect(observer.stats()).toEqual({
      sessions: 1,
      requests: 10,
      evictions: 20,
      releasedSessions: 0,
      releasedRequests: 1,
      // Bodies nobody reads hold nothing.
      heldBytes: 0,
      unparsedJsonBodies: 0,
      oversizedEvents: 0,
      unacceptedSessions: 0,
      unacceptedEvictions: 0,
      unkeptIds: 0,
      unreadEncodedBodies: 0,
    });
    for (const response of open) await response.body?.cancel();
  });
  it('sends each request within every listener scope (sendWithin), the first listener outermost', async () => {
    const observer = new WireObserver();
    const order: string[] = [];
    const scope = (name: string): WireListener => ({
      sendWithin: (request, send) => {
        order.push(`${name} in ${request.httpMethod}`);
        const sent = send();
        order.push(`${name} out`);
        return sent;
      },
    });
    observer.addListener(scope('a'));
    observer.addListener(scope('b'));
    const fetch = observer.wrap((input, init) => {
      order.push('fetch');
      return globalThis.fetch(input, init);
    });
    await initialize(fetch, server.url);
    expect(order).toEqual(['a in POST', 'b in POST', 'fetch', 'b out', 'a out']);
  });
});
