// The two loops the field reports, stopped in process: a session the server refused (the clients keep its
// Mcp-Session-Id and every call fails until a restart), and a GET listening stream re-opened against a
// server that answers 405. The guard repeats the server's own answer, never one of its own. Real SDK 1.x
// and v2 clients against SDK 1.x servers and server-everything, over loopback.
import { connectSdkSession } from '@resumewatch/lab';
import type { SdkClientKind, SdkSession } from '@resumewatch/lab';
import { startEverythingServer } from '@resumewatch/lab/everything-server';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { guardedFetch } from '../src/index.js';
import type { RepeatedRefusal } from '../src/index.js';
import { startSessionServer } from './helpers/session-server.js';
import type { SessionServer } from './helpers/session-server.js';
import { WAIT } from './helpers/wait.js';

type Fetch = typeof globalThis.fetch;

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close().catch(() => undefined);
});

async function server(mode: 'stateful' | 'stateless'): Promise<SessionServer> {
  const started = await startSessionServer(mode);
  open.push(started);
  return started;
}

async function session(kind: SdkClientKind, url: string, fetch: Fetch, name: string): Promise<SdkSession> {
  const connected = await connectSdkSession(kind, url, fetch, name);
  open.push(connected);
  return connected;
}

/** Waits until the client's listening stream (a GET, opened after `initialized`) reached the server. */
async function listening(srv: SessionServer, sessionId: string): Promise<void> {
  await vi.waitFor(
    () => expect(srv.received.some((r) => r.httpMethod === 'GET' && r.sessionId === sessionId)).toBe(true),
    WAIT,
  );
}

/** A call's outcome as the application sees it: the result's text, or the error's message. */
async function outcome(s: SdkSession): Promise<string> {
  return s.callTool('echo', {}).then(
    (r) => r.content?.[0]?.text ?? '',
    (e: Error) => e.message,
  );
}

const CALLS = 6;

describe('a session the server refused', () => {
  it.each(['sdk', 'sdk-v2'] as const)(
    '%s client: the server sees one refused request, not one per call; a fresh connect works at once',
    async (kind) => {
      const srv = await server('stateful');
      const dead: RepeatedRefusal[] = [];
      const fetch = guardedFetch({ onDeadSession: (r) => void dead.push(r) });
      const first = await session(kind, srv.url, fetch, 'first');
      expect(await outcome(first)).toBe('echoed');
      const old = first.sessionId()!;
      await listening(srv, old);
      const before = srv.received.length;
      srv.forget(old);

      const seen: string[] = [];
      for (let i = 0; i < CALLS; i++) seen.push(await outcome(first));

      // Every call failed with the server's first (and only) refusal, its body repeated byte for byte.
      expect(seen.every((m) => m.includes('Session not found (refusal 1)'))).toBe(true);
      const onOld = srv.received.slice(before).filter((r) => r.sessionId === old);
      expect(onOld).toHaveLength(1);
      expect(srv.refusals).toBe(1);
      expect(dead).toHaveLength(CALLS - 1);
      expect(dead.map((r) => r.repeats)).toEqual([1, 2, 3, 4, 5]);
      expect(dead.every((r) => r.status === 404 && r.sessionId === old && r.httpMethod === 'POST')).toBe(true);
      expect(fetch.listener.stats()).toMatchObject({ refusedSessions: 1, deadSessionAnswers: CALLS - 1 });

      // The application initializes anew: let through, and the old session's refusal ends with its answer.
      const second = await session(kind, srv.url, fetch, 'second');
      expect(await outcome(second)).toBe('echoed');
      expect(second.sessionId()).not.toBe(old);
      expect(srv.refusals).toBe(1);
      expect(fetch.listener.stats()).toMatchObject({ refusedSessions: 0, deadSessionAnswers: CALLS - 1 });
    },
  );

  it('without the guard, each call on the dead session reaches the server (the loop the guard stops)', async () => {
    const srv = await server('stateful');
    const first = await session('sdk', srv.url, globalThis.fetch, 'unguarded');
    await listening(srv, first.sessionId()!);
    srv.forget(first.sessionId()!);
    const seen: string[] = [];
    for (let i = 0; i < CALLS; i++) seen.push(await outcome(first));
    expect(srv.refusals).toBe(CALLS);
    expect(seen.at(-1)).toContain(`(refusal ${CALLS})`);
  });

  it('sessionRefusals: false lets every request through', async () => {
    const srv = await server('stateful');
    const fetch = guardedFetch({ sessionRefusals: false });
    const first = await session('sdk', srv.url, fetch, 'off');
    await listening(srv, first.sessionId()!);
    srv.forget(first.sessionId()!);
    for (let i = 0; i < 3; i++) await outcome(first);
    expect(srv.refusals).toBe(3);
  });
});

describe('a listening stream the server does not offer (405)', () => {
  it.each(['sdk', 'sdk-v2'] as const)(
    '%s client against a stateless server: the server sees one GET; later re-opens get its 405 in process',
    async (kind) => {
      const srv = await server('stateless');
      const refused: RepeatedRefusal[] = [];
      const fetch = guardedFetch({ onListeningRefused: (r) => void refused.push(r) });
      const CONNECTS = 4;
      for (let i = 0; i < CONNECTS; i++) {
        const s = await session(kind, srv.url, fetch, `stateless-${i}`);
        // The SDK opens its listening stream after `initialized`: wait for this connect's GET to be answered.
        await vi.waitFor(
          () => expect(srv.received.filter((r) => r.httpMethod === 'GET').length + refused.length).toBe(i + 1),
          WAIT,
        );
        expect(await outcome(s)).toBe('echoed');
      }
      expect(srv.received.filter((r) => r.httpMethod === 'GET')).toHaveLength(1);
      expect(refused).toHaveLength(CONNECTS - 1);
      expect(refused.every((r) => r.status === 405 && r.httpMethod === 'GET' && r.sessionId === undefined)).toBe(true);
      expect(fetch.listener.stats()).toMatchObject({
        refusedListeningStreams: 1,
        listeningRefusalAnswers: CONNECTS - 1,
      });
    },
  );

  it('a local 405 carries the server’s own status, headers and body', async () => {
    const srv = await server('stateless');
    const fetch = guardedFetch();
    const get = () => fetch(srv.url, { method: 'GET', headers: { accept: 'text/event-stream' } });
    const first = await get();
    const firstBody = await first.text();
    const again = await get();
    expect(again.status).toBe(405);
    expect(again.headers.get('x-refusal')).toBe('1');
    expect(await again.text()).toBe(firstBody);
    expect(srv.received).toHaveLength(1);
  });
});

describe('server-everything, which answers 400 for an unknown session', () => {
  it('sdk client: after the first 400 "No valid session ID provided", no request on that session leaves', async () => {
    const everything = await startEverythingServer();
    open.push({ close: () => everything.stop() });
    const left: string[] = [];
    const counting: Fetch = (input, init) => {
      left.push(new Headers(init?.headers).get('mcp-session-id') ?? '');
      return globalThis.fetch(input, init);
    };
    const dead: RepeatedRefusal[] = [];
    const fetch = guardedFetch(counting, { onDeadSession: (r) => void dead.push(r) });
    const first = await session('sdk', everything.url, fetch, 'everything');
    const old = first.sessionId()!;
    // The session ends on the server (as a restart or an expiry would), not by this client.
    const deleted = await globalThis.fetch(everything.url, { method: 'DELETE', headers: { 'mcp-session-id': old } });
    expect(deleted.ok).toBe(true);
    const refusal = await outcome(first);
    expect(refusal).toContain('No valid session ID provided');
    await vi.waitFor(() => expect(fetch.listener.stats().refusedSessions).toBe(1), WAIT);
    const sentOnOld = left.filter((id) => id === old).length;
    for (let i = 0; i < CALLS; i++) expect(await outcome(first)).toContain('No valid session ID provided');
    expect(left.filter((id) => id === old)).toHaveLength(sentOnOld);
    expect(dead.filter((r) => r.httpMethod === 'POST' && r.status === 400)).toHaveLength(CALLS);

    const second = await session('sdk', everything.url, fetch, 'everything-again');
    expect((await second.callTool('echo', { message: 'hi' })).content?.[0]?.text).toContain('hi');
  });
});
