import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { endAfterRefusedBody } from '../src/doors/refused-body.js';
import { busyClientTries } from './helpers/busy-client.js';
import { postHead, rawConnect, type RawConnection } from './helpers/raw-client.js';

/*
 * A refused request's answer reaches a client that is still sending its body (defect 11): closing at
 * once made node:http and fetch fail with EPIPE before they read the 413, and an OTLP exporter retries a
 * network error (it drops a 413), so the batch came back again and again. The rest of the body is read
 * and thrown away first, within bounds shown here by bytes.
 */
const KIB = 1024;
const TOKEN = 'refused';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const JSON_TYPE = { 'content-type': 'application/json' };

/** Writes a chunked body of 16 KiB chunks until the server closes (or `max` chunks went); how many went. */
async function sendForever(c: RawConnection, max: number): Promise<number> {
  const chunk = `${(16 * KIB).toString(16)}\r\n${' '.repeat(16 * KIB)}\r\n`;
  let sent = 0;
  while (!c.socket.destroyed && sent < max) {
    sent++;
    if (!c.socket.write(chunk)) await new Promise((resolve) => c.socket.once('drain', resolve).once('close', resolve));
  }
  await c.closed;
  return sent;
}

describe('serve answers a refused body so that its client reads the answer', () => {
  let server: RunningServer;
  afterEach(() => server.close());

  it('node:http (declared length and chunked) and fetch read 413, and 401 without the token, in every try', async () => {
    server = await startServer({
      port: 0,
      grpcPort: false,
      metricsPort: 0,
      output: null,
      token: TOKEN,
      maxBodyBytes: 16 * KIB,
      log: () => undefined,
    });
    const url = `http://127.0.0.1:${server.httpPort}/v1/traces`;
    // The body crosses --max-body in the chunks sent before the client's event loop is busy; the whole
    // body is under twice --max-body, which is what is read of a refused one.
    const busy = { tries: 5, before: 5, after: 3, chunkBytes: 4 * KIB, busyMs: 150 } as const;
    const headers = { ...JSON_TYPE, ...AUTH };
    const all413 = Array(5).fill(413);
    expect(await busyClientTries(url, { ...busy, client: 'http', declared: true, headers })).toEqual(all413);
    expect(await busyClientTries(url, { ...busy, client: 'http', headers })).toEqual(all413);
    expect(await busyClientTries(url, { ...busy, client: 'fetch', headers })).toEqual(all413);
    expect(await busyClientTries(url, { ...busy, client: 'http', declared: true, headers: JSON_TYPE })).toEqual(
      Array(5).fill(401),
    );
    expect(server.inflight.used).toBe(0);
  });

  it('a client that keeps sending after its 413 is cut, and a body declared past twice --max-body is not waited for', async () => {
    server = await startServer({
      port: 0,
      grpcPort: false,
      metricsPort: 0,
      output: null,
      maxBodyBytes: 16 * KIB,
      log: () => undefined,
    });
    const endless = await rawConnect(server.httpPort);
    endless.socket.write(postHead({ ...JSON_TYPE, 'transfer-encoding': 'chunked' }));
    // 4096 chunks are 64 MiB: far past twice --max-body and what the kernel buffers between the two hold.
    expect(await sendForever(endless, 4096)).toBeLessThan(4096);
    expect(endless.received()).toMatch(/^HTTP\/1\.1 413 /);

    const declared = await rawConnect(server.httpPort);
    declared.socket.write(postHead({ ...JSON_TYPE, 'content-length': 32 * KIB + 1 }));
    expect(await declared.until(/^HTTP\/1\.1 413 /)).toMatch(/connection: close/i);
    await declared.closed;
    expect(server.inflight.used).toBe(0);
  });
});

describe('endAfterRefusedBody', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server?.closeAllConnections();
  });

  /** A server that refuses every request with endAfterRefusedBody, and the bytes it read of each connection. */
  async function refusing(bounds: { maxBytes: number; maxMs?: number }) {
    const read: number[] = [];
    server = createServer((req, res) => {
      res.writeHead(413, { connection: 'close', 'content-length': 2 });
      endAfterRefusedBody(req, res, 'no', 0, bounds);
    });
    server.on('connection', (socket: Socket) => socket.once('close', () => read.push(socket.bytesRead)));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return { port: (server.address() as AddressInfo).port, read };
  }

  it('reads no more than maxBytes of body past the answer, then cuts the connection', async () => {
    const { port, read } = await refusing({ maxBytes: 256 * KIB });
    const c = await rawConnect(port);
    const head = postHead({ 'transfer-encoding': 'chunked' });
    c.socket.write(head);
    expect(await sendForever(c, 4096)).toBeLessThan(4096);
    expect(c.received()).toMatch(/^HTTP\/1\.1 413 [^]*\r\n\r\nno$/);
    await vi.waitFor(() => expect(read).toHaveLength(1));
    // The head, 256 KiB of body with its chunk framing, and at most one more read of the socket (64 KiB).
    const framing = (256 * KIB) / (16 * KIB) + 1;
    expect(read[0]).toBeGreaterThan(256 * KIB);
    expect(read[0]).toBeLessThanOrEqual(head.length + 256 * KIB + 64 * KIB + 16 * framing);
  });

  it('cuts a connection whose body is still not in after maxMs', async () => {
    const { port, read } = await refusing({ maxBytes: 256 * KIB, maxMs: 100 });
    const c = await rawConnect(port);
    c.socket.write(postHead({ 'content-length': 1000 }) + 'x');
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 413 /);
    await vi.waitFor(() => expect(read).toHaveLength(1));
  });

  it('closes the connection cleanly once a body within the bound is in: the client reads its answer to the end', async () => {
    const { port, read } = await refusing({ maxBytes: 256 * KIB });
    const c = await rawConnect(port);
    const head = postHead({ 'content-length': 100 * KIB });
    c.socket.write(head);
    expect(await c.until(/\r\n\r\nno$/)).toMatch(/^HTTP\/1\.1 413 /);
    c.socket.write(Buffer.alloc(100 * KIB, ' '));
    await c.closed;
    expect(c.socket.errored).toBeNull();
    await vi.waitFor(() => expect(read).toEqual([head.length + 100 * KIB]));
  });
});
