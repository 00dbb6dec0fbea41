import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { GatewayErrorCode, GatewayRefusal } from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { begin, open, rawExchange, send } from './helpers/raw-client.js';
import type { RawResponse } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';

const rig = rigPerTest();

const sseHeaders = { 'content-type': 'text/event-stream', 'mcp-session-id': 's' };

function rpcError(response: RawResponse): { id: unknown; error: { code: number; message: string } } {
  expect(response.headers['content-type']).toBe('application/json');
  return JSON.parse(response.body.toString()) as { id: unknown; error: { code: number; message: string } };
}

/** POSTs `size` bytes in `chunk`-sized writes without a Content-Length (chunked), as a streaming client does. */
function postChunked(url: string, size: number, chunk = 16 * 1024): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } });
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () =>
        resolve({
          status: res.statusCode!,
          statusMessage: res.statusMessage ?? '',
          rawHeaders: res.rawHeaders,
          headers: res.headers,
          body: Buffer.concat(chunks),
          complete: res.complete,
        }),
      );
    });
    let sent = 0;
    const pump = (): void => {
      while (sent < size && !req.destroyed) {
        sent += chunk;
        if (!req.write(Buffer.alloc(chunk, 0x20))) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

describe('gateway limits', () => {
  it('answers 413 to a body over maxBodyBytes (declared or streamed) and never forwards it', async () => {
    const { upstream, gateway, endpoint } = await rig((_req, res) => res.writeHead(200).end(), {
      maxBodyBytes: 64 * 1024,
    });
    const declared = await send(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(64 * 1024 + 1, 0x20),
    });
    expect(declared.status).toBe(413);
    expect(rpcError(declared).error.message).toContain('request body over 65536 bytes');

    const streamed = await postChunked(endpoint, 1024 * 1024);
    expect(streamed.status).toBe(413);
    expect(rpcError(streamed).error.code).toBe(GatewayErrorCode.UNAVAILABLE);

    // At the limit it passes, byte for byte.
    const fits = await send(endpoint, { method: 'POST', body: Buffer.alloc(64 * 1024, 0x41) });
    expect(fits.status).toBe(200);
    expect(upstream.seen).toHaveLength(1);
    expect(upstream.seen[0]!.body.equals(Buffer.alloc(64 * 1024, 0x41))).toBe(true);
    expect(gateway.counts().refusals[GatewayRefusal.BODY_TOO_LARGE]).toBe(2);
  });

  it('answers 431 to a header block over maxHeaderBytes without contacting the upstream', async () => {
    const { upstream, gateway, endpoint } = await rig((_req, res) => res.writeHead(200).end(), {
      maxHeaderBytes: 4 * 1024,
    });
    const answer = await rawExchange(
      gateway.url,
      `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${'a'.repeat(8 * 1024)}\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(gateway.counts().refusals[GatewayRefusal.HEADERS_TOO_LARGE]).toBe(1);
    const fits = await send(endpoint, { headers: { authorization: `Bearer ${'a'.repeat(1024)}` } });
    expect(fits.status).toBe(200);
    expect(upstream.seen).toHaveLength(1);
  });

  it('answers 503 with Retry-After once maxStreams exchanges are open, and serves again when one closes', async () => {
    const { upstream, gateway, endpoint } = await rig(
      (req, res) => {
        res.writeHead(200, sseHeaders);
        if (req.method === 'GET') res.write(': open\n\n');
        else res.end('id: 1\ndata: {}\n\n');
      },
      { maxStreams: 2 },
    );
    const first = await open(endpoint, { headers: { accept: 'text/event-stream' } });
    const second = await open(endpoint, { headers: { accept: 'text/event-stream' } });
    await vi.waitFor(() => expect(gateway.counts().open).toBe(2), { timeout: 3_000 });

    const refused = await send(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'call-3', method: 'tools/call' }),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(rpcError(refused).error.message).toContain('2 exchanges open');
    expect(upstream.seen).toHaveLength(2);
    expect(gateway.counts().refusals[GatewayRefusal.TOO_MANY_STREAMS]).toBe(1);

    first.req.destroy();
    await vi.waitFor(() => expect(gateway.counts().open).toBe(1), { timeout: 3_000 });
    const served = await send(endpoint, { method: 'POST', body: '{}' });
    expect(served.status).toBe(200);
    expect(served.body.toString()).toBe('id: 1\ndata: {}\n\n');
    second.req.destroy();
  });

  it('closes a stream that carries no byte for streamIdleTimeoutMs, and the upstream exchange with it', async () => {
    const { upstream, gateway, endpoint } = await rig(
      (req, res) => {
        res.writeHead(200, sseHeaders);
        res.write('id: 1\ndata: {}\n\n');
        if (req.url?.includes('chatty')) {
          // An event every 50 ms keeps its stream alive past the idle timeout (ten times that).
          const timer = setInterval(() => res.write(': keepalive\n\n'), 50);
          res.once('close', () => clearInterval(timer));
        }
      },
      { streamIdleTimeoutMs: 500 },
    );
    const chatty = await open(`${endpoint}?chatty`, { headers: { accept: 'text/event-stream' } });
    const silent = await open(endpoint, { headers: { accept: 'text/event-stream' } });

    // The silent stream is cut (never a clean end: that would tell the client its stream is over).
    expect(await silent.ended).toEqual({ complete: false });
    expect(silent.text()).toBe('id: 1\ndata: {}\n\n');
    const silentSeen = upstream.seen.find((s) => !s.url.includes('chatty'))!;
    expect(await silentSeen.closed).toEqual({ finished: false });
    expect(gateway.counts().refusals[GatewayRefusal.STREAM_IDLE]).toBe(1);

    // The chatty one is still open, and carrying, at twice the timeout.
    await delay(500);
    const before = chatty.text().length;
    await vi.waitFor(() => expect(chatty.text().length).toBeGreaterThan(before), { timeout: 3_000 });
    expect(chatty.res.destroyed).toBe(false);
    expect(gateway.counts().refusals[GatewayRefusal.STREAM_IDLE]).toBe(1);
    chatty.req.destroy();
  });

  it('answers 504 to an exchange whose upstream sends no headers within streamIdleTimeoutMs', async () => {
    const { upstream, gateway, endpoint } = await rig(() => undefined, {
      streamIdleTimeoutMs: 200,
      upstreamTimeoutMs: 10_000,
    });
    const response = await send(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call' }),
    });
    expect(response.status).toBe(504);
    expect(rpcError(response)).toMatchObject({ id: 5, error: { code: GatewayErrorCode.TIMEOUT } });
    expect(await upstream.seen[0]!.closed).toEqual({ finished: false });
    expect(gateway.counts().refusals[GatewayRefusal.STREAM_IDLE]).toBe(1);
  });

  it('answers 504 to a client that stops sending its body, and never forwards the request', async () => {
    const { upstream, gateway, endpoint } = await rig((_req, res) => res.writeHead(200).end(), {
      streamIdleTimeoutMs: 200,
    });
    const half = '{"jsonrpc":"2.0","id":6,';
    const req = begin(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(half.length + 40) },
      keepOpen: true,
    });
    req.on('error', () => undefined);
    req.write(half);
    const response = await new Promise<IncomingMessage>((resolve) => req.once('response', resolve));
    expect(response.statusCode).toBe(504);
    // The rest of the body arrives late: the request stays unforwarded.
    req.end(' '.repeat(40));
    await delay(100);
    expect(upstream.seen).toHaveLength(0);
    expect(gateway.counts().refusals[GatewayRefusal.STREAM_IDLE]).toBe(1);
  });
});
