// The bounds and the limits of the repeated refusals, against a scripted server on loopback: it answers
// each request with the status and body the request asks for (x-status, x-body), and counts what it got.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { guardedFetch } from '../src/index.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0)) await thing.close();
});

async function scripted(): Promise<{ url: string; received: () => number }> {
  let received = 0;
  const http = createServer((req, res) => {
    received++;
    req.resume();
    res.writeHead(Number(req.headers['x-status'] ?? 200), { 'content-type': 'application/json' });
    res.end(String(req.headers['x-body'] ?? '').repeat(Number(req.headers['x-repeat'] ?? 1)));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  open.push({
    close: () => {
      http.closeAllConnections();
      return new Promise<void>((resolve) => http.close(() => resolve()));
    },
  });
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, received: () => received };
}

const SESSION_GONE = JSON.stringify({
  jsonrpc: '2.0',
  error: { code: -32000, message: 'Bad Request: No valid session ID provided' },
  id: null,
});

function post(session: string, status: number, body: string, extra: Record<string, string> = {}): RequestInit {
  return {
    method: 'POST',
    headers: { 'mcp-session-id': session, 'x-status': String(status), 'x-body': body, ...extra },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  };
}

describe('repeated refusals: what is repeated, and for how long', () => {
  it('a 400 that says nothing of the session is not repeated', async () => {
    const server = await scripted();
    const fetch = guardedFetch();
    for (let i = 0; i < 3; i++)
      await (await fetch(server.url, post('s1', 400, '{"error":"Bad Request: Accept"}'))).text();
    expect(server.received()).toBe(3);
    expect(fetch.listener.stats().refusedSessions).toBe(0);
  });

  it('a 400 saying the session is unknown is repeated, with its body', async () => {
    const server = await scripted();
    const fetch = guardedFetch();
    await (await fetch(server.url, post('s1', 400, SESSION_GONE))).text();
    const again = await fetch(server.url, post('s1', 200, 'not sent'));
    expect(again.status).toBe(400);
    expect(await again.text()).toBe(SESSION_GONE);
    expect(server.received()).toBe(1);
    // Another session on the same endpoint is not concerned.
    await (await fetch(server.url, post('s2', 200, '{}'))).text();
    expect(server.received()).toBe(2);
  });

  it('a 400 to a resume is its cursor’s business: not repeated', async () => {
    const server = await scripted();
    const fetch = guardedFetch();
    const resume = (): RequestInit => ({
      method: 'GET',
      headers: { 'mcp-session-id': 's1', 'last-event-id': 'e1', 'x-status': '400', 'x-body': SESSION_GONE },
    });
    await (await fetch(server.url, resume())).text();
    await (await fetch(server.url, resume())).text();
    expect(server.received()).toBe(2);
  });

  it('a refusal longer than 8 KiB is not repeated: its requests go on', async () => {
    const server = await scripted();
    const fetch = guardedFetch();
    await (await fetch(server.url, post('s1', 404, 'x', { 'x-repeat': String(9 * 1024) }))).text();
    await (await fetch(server.url, post('s1', 404, 'x'))).text();
    expect(server.received()).toBe(2);
  });

  it('a refusal is repeated for refusalRetentionMs, then the server is asked again', async () => {
    const server = await scripted();
    let now = 1_000;
    const fetch = guardedFetch({ now: () => now, refusalRetentionMs: 60_000 });
    await (await fetch(server.url, post('s1', 404, '{}'))).text();
    await (await fetch(server.url, post('s1', 200, '{}'))).text();
    expect(server.received()).toBe(1);
    now += 60_000;
    expect((await fetch(server.url, post('s1', 200, '{}'))).status).toBe(200);
    expect(server.received()).toBe(2);
  });

  it('at most maxRequests refused sessions are kept; the oldest is dropped and counted', async () => {
    const server = await scripted();
    const fetch = guardedFetch({ maxRequests: 2 });
    for (const s of ['a', 'b', 'c']) await (await fetch(server.url, post(s, 404, '{}'))).text();
    expect(fetch.listener.stats()).toMatchObject({ refusedSessions: 2, evictions: 1 });
    await (await fetch(server.url, post('c', 200, '{}'))).text();
    expect(server.received()).toBe(3);
    await (await fetch(server.url, post('a', 200, '{}'))).text();
    expect(server.received()).toBe(4);
  });
});
