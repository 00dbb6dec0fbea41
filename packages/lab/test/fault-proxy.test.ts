import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startFaultProxy } from '../src/index.js';

describe('fault proxy', () => {
  it('drops the client when the upstream connection drops mid-response, without an armed cut (a restart)', async () => {
    // Upstream writes one event, then its connection dies, as a lab server restart ends it.
    const upstream = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\ndata: {}\n\n', () => setTimeout(() => res.socket?.destroy(), 20));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const proxy = await startFaultProxy({ target: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp` });
    try {
      const response = await fetch(proxy.url);
      expect(response.status).toBe(200);
      // Before the fix the proxy kept the client's response open forever: this read never ended.
      await expect(response.text()).rejects.toThrow();
      expect(proxy.cuts).toEqual([]);
    } finally {
      await proxy.close();
      await new Promise<void>((resolve) => upstream.close(() => resolve()));
    }
  });
});
