// One observer for many clients (a proxy): requests without a session kept apart per exchange, and no
// session released on a guessed transport close.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import type { TerminalObservation } from '../src/index.js';
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

function watched(options: ConstructorParameters<typeof WireObserver>[0]) {
  const observer = new WireObserver(options);
  const terminals: TerminalObservation[] = [];
  const released: string[] = [];
  observer.addListener({
    onEvent: (e) => void terminals.push(...e.terminals),
    onSessionReleased: (id) => void released.push(id),
  });
  return { observer, terminals, released, fetch: observer.wrap() };
}

describe('WireObserver for many clients', () => {
  it("sessionlessApart: one client's session-less request id never names another client's request", async () => {
    for (const apart of [false, true]) {
      const observer = new WireObserver({ sessionlessApart: apart });
      const cancels: number[] = [];
      observer.addListener({ onRequest: (r) => void cancels.push(r.cancels.length) });
      const fetch = observer.wrap();
      // Client A's call, with no session (2026-07-28), answered in full.
      const call = await fetch(
        server.url,
        post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'stream_progress' } }),
      );
      await call.text();
      // Client B gives up its own request 1.
      const cancel = await fetch(
        server.url,
        post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }),
      );
      await cancel.text();
      // Keyed by id alone, B's cancellation names A's request.
      expect(cancels).toEqual([0, apart ? 0 : 1]);
    }
  });

  it('sessionlessApart: a finished session-less request leaves nothing behind; requests of a session stay keyed by it', async () => {
    const { fetch, observer } = watched({ sessionlessApart: true });
    const sessionId = await initialize(fetch, server.url);
    expect(observer.stats().requests).toBe(0);
    expect(observer.getRequest(undefined, 0)).toBeUndefined();
    const call = await fetch(
      server.url,
      post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'stream_progress' } }, sessionId),
    );
    await call.text();
    expect(observer.getRequest(sessionId, 1)?.terminalCount).toBe(1);
  });

  it('releaseOnTransportClose: false keeps a session whose standalone stream was aborted until its DELETE', async () => {
    for (const release of [true, false]) {
      const { fetch, released, observer } = watched({ releaseOnTransportClose: release });
      const sessionId = await initialize(fetch, server.url);
      const controller = new AbortController();
      const listening = await fetch(server.url, {
        method: 'GET',
        headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId },
        signal: controller.signal,
      });
      controller.abort();
      await listening.text().catch(() => undefined);
      expect(released).toEqual(release ? [sessionId] : []);
      expect(observer.getSession(sessionId) === undefined).toBe(release);
    }
  });
});
