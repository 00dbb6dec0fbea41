// Nothing stays for a session that ended: the gateway lets go of a session's observation when the wire
// shows the session is over (a DELETE, or the client's transport closed), not only at its retention.
import { startLabServer } from '@resumewatch/lab';
import type { LabServer } from '@resumewatch/lab';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startGateway } from '../src/index.js';
import type { RunningGateway } from '../src/index.js';

let lab: LabServer;
let gateway: RunningGateway;
let url: string;

beforeAll(async () => {
  lab = await startLabServer({ retryIntervalMs: 50 });
  gateway = await startGateway({ upstream: lab.url, port: 0, enforce: true, detector: false });
  url = new URL(new URL(lab.url).pathname, gateway.url).href;
});
afterAll(async () => {
  await gateway?.close();
  await lab?.close();
});

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function openSession(): Promise<Record<string, string>> {
  const init = await fetch(url, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'release', version: '1' } },
    }),
  });
  await init.text();
  const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  const done = await fetch(url, {
    method: 'POST',
    headers: { ...JSON_HEADERS, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(done.status).toBe(202);
  return headers;
}

describe('a session that ended leaves nothing in the gateway', () => {
  it('after a DELETE', async () => {
    const sessions = await Promise.all([1, 2, 3].map(() => openSession()));
    expect(gateway.stats().sessions).toBe(3);
    for (const headers of sessions) {
      const deleted = await fetch(url, { method: 'DELETE', headers });
      await deleted.text();
    }
    await vi.waitFor(() => expect(gateway.stats().sessions).toBe(0), { timeout: 5_000, interval: 20 });
  });

  it('a session whose client dropped its standalone stream stays observed until its DELETE (a proxy sees no transport close)', async () => {
    const headers = await openSession();
    const controller = new AbortController();
    const listening = await fetch(url, {
      method: 'GET',
      headers: { ...headers, accept: 'text/event-stream' },
      signal: controller.signal,
    });
    expect(listening.status).toBe(200);
    controller.abort();
    await listening.body?.cancel().catch(() => undefined);
    await vi.waitFor(() => expect(gateway.counts().open).toBe(0), { timeout: 5_000, interval: 20 });
    expect(gateway.stats().sessions).toBe(1);
    await (await fetch(url, { method: 'DELETE', headers })).text();
    await vi.waitFor(() => expect(gateway.stats().sessions).toBe(0), { timeout: 5_000, interval: 20 });
  });

  it('a session idle past --session-retention leaves without a new session coming', async () => {
    const short = await startGateway({ upstream: lab.url, port: 0, sessionRetentionMs: 300, detector: false });
    try {
      const shortUrl = new URL(new URL(lab.url).pathname, short.url).href;
      const init = await fetch(shortUrl, {
        method: 'POST',
        headers: JSON_HEADERS,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'idle', version: '1' } },
        }),
      });
      await init.text();
      expect(short.stats().sessions).toBe(1);
      await vi.waitFor(() => expect(short.stats().sessions).toBe(0), { timeout: 5_000, interval: 50 });
    } finally {
      await short.close();
    }
  });
});
