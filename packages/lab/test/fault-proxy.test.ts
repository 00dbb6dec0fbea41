import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
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

  it('keepUpstream: a cut reaches the client only; the upstream response is read to its end, and says how far it got', async () => {
    // Upstream: two events, then (once the client is cut) a third and the end, as a server whose work goes on.
    let goOn!: () => void;
    const cutSeen = new Promise<void>((resolve) => (goOn = resolve));
    let upstreamWhole: boolean | undefined;
    const upstream = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\ndata: {}\n\nid: 2\ndata: {}\n\n');
      res.once('close', () => (upstreamWhole = res.writableFinished));
      void cutSeen.then(() => res.end('id: 3\ndata: {"last":true}\n\n'));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const proxy = await startFaultProxy({
      target: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`,
      keepUpstream: true,
    });
    try {
      proxy.armCut({ afterEvents: 1 });
      const response = await fetch(proxy.url);
      await expect(response.text()).rejects.toThrow();
      expect(proxy.cuts).toMatchObject([{ eventsForwarded: 1, bytesForwarded: 'id: 1\ndata: {}\n\n'.length }]);
      await vi.waitFor(() => expect(proxy.abandoned).toHaveLength(1), { timeout: 20_000 });
      expect(proxy.abandoned[0]).toMatchObject({ method: 'GET', path: '/mcp', eventsForwarded: 1, upstreamEvents: 2 });
      goOn();
      // The upstream's response went on to its end, written whole: the server never saw the cut.
      await expect(proxy.abandoned[0]!.upstreamEnded).resolves.toBe(true);
      expect(proxy.abandoned[0]!.upstreamEvents).toBe(3);
      await vi.waitFor(() => expect(upstreamWhole).toBe(true), { timeout: 20_000 });
    } finally {
      await proxy.close();
      await new Promise<void>((resolve) => upstream.close(() => resolve()));
    }
  });

  it('keepUpstream: a client that leaves by itself leaves the upstream response to run to its end', async () => {
    let goOn!: () => void;
    const clientGone = new Promise<void>((resolve) => (goOn = resolve));
    const upstream = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\ndata: {}\n\n');
      void clientGone.then(() => res.end('id: 2\ndata: {}\n\n'));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const proxy = await startFaultProxy({
      target: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`,
      keepUpstream: true,
    });
    try {
      const abort = new AbortController();
      const response = await fetch(proxy.url, { signal: abort.signal });
      const reader = response.body!.getReader();
      await reader.read();
      abort.abort();
      await vi.waitFor(() => expect(proxy.abandoned).toHaveLength(1), { timeout: 20_000 });
      expect(proxy.cuts).toEqual([]);
      goOn();
      await expect(proxy.abandoned[0]!.upstreamEnded).resolves.toBe(true);
      expect(proxy.abandoned[0]).toMatchObject({ eventsForwarded: 1, upstreamEvents: 2 });
    } finally {
      await proxy.close();
      await new Promise<void>((resolve) => upstream.close(() => resolve()));
    }
  });
});
