import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { begin, open } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';

const rig = rigPerTest();

const CHUNK = 64 * 1024;
/** What the upstream offers in all: far more than the socket buffers between it and a client that reads nothing. */
const TOTAL = 64 * 1024 * 1024;
/**
 * What may be in flight between the upstream and a client that reads nothing: the kernel buffers of two
 * loopback connections (autotuned by Linux: 9 to 11 MiB measured here) and a few chunks in the gateway.
 * A gateway that buffered the body would let the upstream write all of TOTAL.
 */
const IN_FLIGHT_BOUND = 32 * 1024 * 1024;

/** Chunk `i` of the upstream's body: numbered and filled by position, so a lost or reordered chunk shows. */
function chunkAt(i: number): Buffer {
  const chunk = Buffer.alloc(CHUNK, i % 251);
  chunk.writeUInt32BE(i, 0);
  return chunk;
}

const drained = (res: ServerResponse, ms: number): Promise<boolean> =>
  Promise.race([
    new Promise<boolean>((resolve) => res.once('drain', () => resolve(true))),
    delay(ms).then(() => false),
  ]);

/** A streaming upstream that writes TOTAL bytes as fast as its socket takes them, recording when it was held back. */
function bulkUpstream() {
  const state = { written: 0, stalledAt: undefined as number | undefined, hash: createHash('sha256') };
  const script = async (_req: unknown, res: ServerResponse): Promise<void> => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    for (let i = 0; state.written < TOTAL && !res.destroyed; i++) {
      const chunk = chunkAt(i);
      state.hash.update(chunk);
      state.written += chunk.byteLength;
      if (res.write(chunk)) continue;
      // Held back: a second without drain means the slow client's pressure reached the upstream.
      if (!(await drained(res, 1_000))) {
        state.stalledAt ??= state.written;
        await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
      }
    }
    res.end();
  };
  return { state, script };
}

describe('gateway backpressure', () => {
  it('holds the upstream back while its client reads nothing, then delivers every byte in order', async () => {
    const bulk = bulkUpstream();
    const { endpoint } = await rig(bulk.script);
    const exchange = await open(endpoint, { method: 'POST', body: '{}', paused: true });

    await vi.waitFor(() => expect(bulk.state.stalledAt).toBeDefined(), { timeout: 10_000, interval: 100 });
    expect(bulk.state.stalledAt!).toBeLessThan(IN_FLIGHT_BOUND);
    // Still held: what the gateway read stays bounded while its client reads nothing.
    await delay(300);
    expect(bulk.state.written).toBeLessThan(IN_FLIGHT_BOUND);

    exchange.res.resume();
    expect(await exchange.ended).toEqual({ complete: true });
    const received = exchange.received();
    expect(received.byteLength).toBe(TOTAL);
    expect(createHash('sha256').update(received).digest('hex')).toBe(bulk.state.hash.digest('hex'));
  });

  it('aborts the upstream exchange when a held-back client disconnects', async () => {
    const bulk = bulkUpstream();
    const { upstream, gateway, endpoint } = await rig(bulk.script);
    const exchange = await open(endpoint, { method: 'POST', body: '{}', paused: true });
    await vi.waitFor(() => expect(bulk.state.stalledAt).toBeDefined(), { timeout: 10_000, interval: 100 });
    exchange.req.destroy();
    expect(await upstream.seen[0]!.closed).toEqual({ finished: false });
    await vi.waitFor(() => expect(gateway.counts().open).toBe(0), { timeout: 3_000 });
    expect(bulk.state.written).toBeLessThan(TOTAL);
  });

  it('aborts the upstream exchange when the client disconnects from an open SSE stream or before the headers', async () => {
    const { upstream, endpoint } = await rig((req, res) => {
      if (req.url?.includes('late')) return; // no headers yet
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\ndata: {}\n\n');
    });
    const stream = await open(endpoint, { headers: { accept: 'text/event-stream' } });
    await vi.waitFor(() => expect(stream.text()).toBe('id: 1\ndata: {}\n\n'), { timeout: 3_000 });
    stream.req.destroy();
    expect(await upstream.seen[0]!.closed).toEqual({ finished: false });

    const waiting = begin(`${endpoint}?late`, { method: 'POST', body: '{}' });
    waiting.on('error', () => undefined);
    await vi.waitFor(() => expect(upstream.seen).toHaveLength(2), { timeout: 3_000 });
    // The client gives up before the upstream answered: its request is cancelled upstream too.
    waiting.destroy();
    const closed = upstream.seen[1]!.closed;
    expect(await closed).toEqual({ finished: false });
  });

  it('never loses or reorders an SSE event through a client that reads in fits and starts', async () => {
    const count = 3_000;
    const pad = 'p'.repeat(900);
    const event = (n: number): string =>
      `id: ev-${n}\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"n":${n},"pad":"${pad}"}}\n\n`;
    let written = '';
    const { endpoint } = await rig(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let n = 1; n <= count; n++) {
        written += event(n);
        if (!res.write(event(n))) await new Promise((resolve) => res.once('drain', resolve));
      }
      res.end();
    });
    const exchange = await open(endpoint, { headers: { accept: 'text/event-stream' }, paused: true });
    // Read for a moment, stop for a moment: the gateway's writes meet a full socket again and again.
    let ended = false;
    void exchange.ended.then(() => (ended = true));
    // Until the response closed: `res.complete` is set once the parser has the whole body, while part of
    // it may still wait, paused, to be read.
    const reader = (async () => {
      while (!ended) {
        exchange.res.resume();
        await delay(5);
        exchange.res.pause();
        await delay(20);
      }
    })();
    expect(await exchange.ended).toEqual({ complete: true });
    await reader;
    const text = exchange.text();
    expect(text).toBe(written);
    const ids = [...text.matchAll(/^id: ev-(\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  });
});
