import { GuardProof } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { CursorRing } from '../src/cursor-ring.js';
import { WireObserver } from '../src/index.js';
import type { WireRequest } from '../src/index.js';
import { SCRIPTED_SESSION, progress, result, scriptedServerPerFile, sse } from './helpers/scripted-server.js';

// Issue 37: where a client's cursor is placed, and what session state a stranger can make the observer
// keep. A proxy (confirmDelivery) takes a cursor as the client's proof that it read that far.

const scripted = scriptedServerPerFile();
const { call, get } = scripted;

/** An observer as the gateway runs it (the client's proof finishes a request), and the requests it described. */
function proxyObserver(): { observer: WireObserver; requests: WireRequest[] } {
  const observer = new WireObserver({ confirmDelivery: true, releaseOnTransportClose: false });
  const requests: WireRequest[] = [];
  observer.addListener({ onRequest: (request) => void requests.push(request) });
  return { observer, requests };
}

describe('a cursor is placed at the earliest event that bears it (defect 3: repeated event ids)', () => {
  it('a cursor a server gave the progress and the result proves only the progress', async () => {
    const { observer } = proxyObserver();
    const fetch = observer.wrap();
    // The request id used as the event id: the client read the progress and was cut before the result.
    await call(fetch, 3, [sse({ id: 'r3', data: progress(1) }), sse({ id: 'r3', data: result(3, 'three') })]);
    await get(fetch, [sse({ id: 'r3', data: result(3, 'three') })], 'r3');
    expect(observer.getRequest(SCRIPTED_SESSION, 3)?.finished).toBe(false);
    // An id after the result's event proves it.
    await call(fetch, 4, [sse({ id: 't1', data: result(4, 'four') }), sse({ id: 't2', data: progress(2) })]);
    await get(fetch, [], 't2');
    expect(observer.getRequest(SCRIPTED_SESSION, 4)?.proof).toBe(GuardProof.CURSOR);
  });
});

describe('a cursor is matched by its text, not its hash alone (defect 4: a hash collision)', () => {
  it('`evt-288934` is placed on the stream that delivered it, not on the stream of `evt-678010`', async () => {
    const { observer, requests } = proxyObserver();
    const fetch = observer.wrap();
    await call(fetch, 1, [sse({ id: 'evt-288934', data: progress(1) }), sse({ id: 'evt-1', data: result(1, 'one') })]);
    await call(fetch, 2, [sse({ id: 'evt-2', data: progress(1) }), sse({ id: 'evt-678010', data: result(2, 'two') })]);
    await get(fetch, [sse({ id: 'evt-1', data: result(1, 'one') })], 'evt-288934');
    const resume = requests.at(-1)!.resume!;
    expect(resume.from?.requests.map((r) => r.id)).toEqual(['1']);
    expect(observer.getRequest(SCRIPTED_SESSION, 1)?.finished).toBe(false);
    expect(observer.getRequest(SCRIPTED_SESSION, 2)?.finished).toBe(false);
  });
});

describe('ids are bounded by bytes (suspicion: cursors of up to 16 KB kept for an hour)', () => {
  it('a 15 KB Last-Event-ID is sent as it came, and kept as a stand-in of bounded length, never placed', async () => {
    const { observer, requests } = proxyObserver();
    const fetch = observer.wrap();
    // An id over 256 bytes is not kept: a cursor naming it places nothing and proves nothing.
    const long = 'c'.repeat(1000);
    await call(fetch, 5, [sse({ id: long, data: result(5, 'five') })]);
    await get(fetch, [], long);
    expect(requests.at(-1)!.resume!.from).toBeUndefined();
    expect(observer.getRequest(SCRIPTED_SESSION, 5)?.finished).toBe(false);
    // Node's header limit (16 KiB) is the only other bound on a cursor.
    const cursor = 'c'.repeat(15 * 1024);
    await get(fetch, [], cursor);
    expect(scripted.server.seen.at(-1)!.lastEventId).toBe(cursor);
    const resume = requests.at(-1)!.resume!;
    expect(resume.lastEventId.length).toBeLessThan(200);
    expect(resume.from).toBeUndefined();
    // What the session keeps of the resume's stream for an hour: the stand-in, not the cursor.
    const kept = observer.getSession(SCRIPTED_SESSION)!.streams.at(-1)!;
    expect(kept.deliveredEventId!.length).toBeLessThan(200);
    expect(observer.stats().unkeptIds).toBe(2);
  });

  it('a 15 KB session id makes no session record; the request keeps a stand-in of it', async () => {
    const { observer, requests } = proxyObserver();
    const fetch = observer.wrap();
    const sessionId = 's'.repeat(15 * 1024);
    scripted.server.script.push({ status: 404, chunks: [] });
    await (
      await fetch(scripted.server.url, {
        method: 'POST',
        headers: { 'mcp-session-id': sessionId, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: {} }),
      })
    ).text();
    expect(observer.getSession(sessionId)).toBeUndefined();
    expect(requests.at(-1)!.sessionId!.length).toBeLessThan(200);
    expect(observer.stats()).toMatchObject({ sessions: 0, unacceptedSessions: 0, unkeptIds: 1 });
  });
});

describe('made-up session ids never push out accepted sessions (suspicion: fake session ids)', () => {
  it('10,000 session ids the server refused leave the accepted session, and its cursor still proves', async () => {
    const { observer } = proxyObserver();
    const fetch = observer.wrap();
    await call(fetch, 1, [sse({ id: 'a1', data: progress(1) }), sse({ id: 'a2', data: result(1, 'one') })]);
    const accepted = observer.getSession(SCRIPTED_SESSION);
    // A stranger names 10,000 sessions; the server answers each 404 (through the proxy door, as the gateway drives it).
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} });
    for (let i = 0; i < 10_000; i++) {
      const request = observer.proxyRequest(scripted.server.url, {
        method: 'POST',
        headers: { 'mcp-session-id': `fake-${i}`, 'content-type': 'application/json' },
        body,
      });
      observer.proxyResponse(request, 404, { 'content-type': 'text/plain' }, true);
    }
    expect(observer.getSession(SCRIPTED_SESSION)).toBe(accepted);
    await get(fetch, [], 'a2');
    expect(observer.getRequest(SCRIPTED_SESSION, 1)?.proof).toBe(GuardProof.CURSOR);
    expect(accepted?.accepted).toBe(true);
    expect(observer.stats()).toMatchObject({ sessions: 1, unacceptedSessions: 1_000, unacceptedEvictions: 9_000 });
  });

  it('a session named by a client joins the accepted ones on its first 2xx', async () => {
    const { observer } = proxyObserver();
    const request = observer.proxyRequest(scripted.server.url, {
      method: 'POST',
      headers: { 'mcp-session-id': 'known-elsewhere', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    expect(observer.stats()).toMatchObject({ sessions: 0, unacceptedSessions: 1 });
    observer.proxyResponse(request, 202, {}, false);
    expect(observer.stats()).toMatchObject({ sessions: 1, unacceptedSessions: 0 });
    expect(observer.getSession('known-elsewhere')?.accepted).toBe(true);
  });
});

describe('the ids the cursor ring keeps, as the scanner hands them over', () => {
  it('every delivered id is placed at its position whatever the chunking (short, long, non-ASCII ids)', () => {
    const ids = ['a1', 'evt-288934', `${'long-'.repeat(8)}id`, 'évènement-7', 'evt-678010', 'a1'];
    const text = ids.map((id, i) => `id: ${id}\ndata: {"jsonrpc":"2.0","method":"n","params":{"i":${i}}}\n\n`).join('');
    const bytes = Buffer.from(text);
    for (const filtering of [false, true])
      for (let size = 1; size <= 9; size++) {
        const observer = new WireObserver({ confirmDelivery: true });
        if (filtering) observer.addListener({ onEvent: () => true }, { filters: true });
        const sessionId = `s-${size}`;
        const request = observer.proxyRequest('http://127.0.0.1/mcp', { headers: { 'mcp-session-id': sessionId } });
        const body = observer.proxyResponse(request, 200, { 'content-type': 'text/event-stream' }, true)!;
        const sink = { enqueue: () => undefined };
        for (let at = 0; at < bytes.length; at += size) body.chunk(bytes.subarray(at, at + size), sink);
        body.end(sink);
        const ring = observer.getSession(sessionId)!.cursors as CursorRing;
        const where = `chunks of ${size}${filtering ? ', filtering' : ''}`;
        expect(
          ids.map((id) => ring.positionOn(id, body.stream)),
          where,
        ).toEqual([1, 2, 3, 4, 5, 1]);
      }
  });
});
