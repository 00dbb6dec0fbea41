import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import type { WireRequest } from '../src/index.js';
import { startSseServer } from './helpers/sse-server.js';
import type { SseServer } from './helpers/sse-server.js';

let server: SseServer;
beforeAll(async () => {
  server = await startSseServer();
});
afterAll(async () => {
  await server.close();
});

const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('the cursor a client holds', () => {
  it('attributes a resume to the stream whose events the client was given, removed events excluded', async () => {
    const observer = new WireObserver();
    const requests: WireRequest[] = [];
    observer.addListener(
      { onRequest: (r) => void requests.push(r), onEvent: (e) => !e.terminals.some((t) => t.duplicate) },
      { filters: true },
    );
    const fetch = observer.wrap();
    const init = await fetch(server.url, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize' }),
    });
    await init.text();
    const sessionId = init.headers.get('mcp-session-id')!;
    const call = await fetch(server.url, {
      method: 'POST',
      headers: { ...json, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x' } }),
    });
    await call.text();

    // A cursor from the middle of the stream is still placed, on the stream that delivered it. The
    // replayed result is a duplicate and is removed, so the client still holds s7-1 and sends it again.
    const first = await fetch(server.url, { headers: { 'mcp-session-id': sessionId, 'last-event-id': 's7-1' } });
    expect(await first.text()).toBe('');
    const firstResume = requests.at(-1)!.resume!;
    expect(firstResume.from?.isResume).toBe(false);
    expect(firstResume.terminalObserved).toBe(true);

    const again = await fetch(server.url, { headers: { 'mcp-session-id': sessionId, 'last-event-id': 's7-1' } });
    await again.text();
    const secondResume = requests.at(-1)!.resume!;
    expect(secondResume.from?.isResume).toBe(true);
    expect(secondResume.from?.deliveredEventId).toBe('s7-1');
    expect(secondResume.from?.lastEventId).toBe('s7-2');
    expect(secondResume.requests.map((r) => r.id)).toEqual(['7']);
    expect(secondResume.terminalObserved).toBe(true);
  });
});
