import { setTimeout as delay } from 'node:timers/promises';
import { GatewayErrorCode, GatewayRefusal } from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { busyClientTries } from '../../daemon/test/helpers/busy-client.js';
import { rawConnect, type RawConnection } from '../../daemon/test/helpers/raw-client.js';
import { send } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';

/*
 * Clients that hold the gateway's connections without finishing a request: slow or endless uploads,
 * header blocks that never end, more connections than it can keep. Every bound is shown by what was
 * counted or how many bytes were sent, never by how long something took.
 */
const rig = rigPerTest();

const ok = (_req: unknown, res: { writeHead(status: number): { end(body?: string): void } }): void =>
  res.writeHead(200).end('{}');

/** A POST head for /mcp with a declared body length; Expect: 100-continue makes Node answer 100 once the request reached the gateway. */
function postHead(length: number | 'chunked', expectContinue = false): string {
  return [
    'POST /mcp HTTP/1.1',
    'host: 127.0.0.1',
    'content-type: application/json',
    length === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${length}`,
    ...(expectContinue ? ['expect: 100-continue'] : []),
    '',
    '',
  ].join('\r\n');
}

/** The JSON-RPC error body at the end of a raw answer. */
function errorOf(answer: string): { id: unknown; error: { code: number; message: string } } {
  return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as {
    id: unknown;
    error: { code: number; message: string };
  };
}

/** Sends one byte every `everyMs` until the gateway answers (or `max` bytes went); how many were sent. */
async function trickle(connection: RawConnection, max: number, everyMs: number): Promise<number> {
  let sent = 0;
  while (sent < max && !connection.socket.destroyed && !/\r\n\r\n\{.*\}$/s.test(connection.received())) {
    connection.socket.write(' ');
    sent++;
    await delay(everyMs);
  }
  return sent;
}

describe('gateway: hostile connections', () => {
  it('trickling uploads hold no exchange slot: with maxStreams 3 and 3 uploads trickling, a real request gets 200', async () => {
    const { upstream, gateway, endpoint } = await rig(ok, { maxStreams: 3 });
    const call = '{"jsonrpc":"2.0","id":1,"method":"tools/call"}';
    const trickling: RawConnection[] = [];
    for (let i = 0; i < 3; i++) {
      const c = await rawConnect(gateway.port);
      c.socket.write(postHead(call.length, true) + call.slice(0, 5));
      // Node answers 100 Continue as it hands the request to the gateway: the upload is in its hands.
      await c.until(/^HTTP\/1\.1 100 /);
      trickling.push(c);
    }

    const served = await send(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: call,
    });
    expect(served.status).toBe(200);
    expect(upstream.seen).toHaveLength(1);
    expect(gateway.counts().refusals[GatewayRefusal.TOO_MANY_STREAMS]).toBeUndefined();
    expect(gateway.counts().open).toBe(0);

    // Each upload, once whole, is an exchange like any other.
    for (const c of trickling) c.socket.write(call.slice(5));
    for (const c of trickling) expect(await c.until(/HTTP\/1\.1 200 /)).toBeTruthy();
    expect(upstream.seen.map((s) => s.body.toString())).toEqual([call, call, call, call]);
    for (const c of trickling) c.socket.destroy();
  });

  it('a slow upload that keeps sending bytes is not cut by the idle timer', async () => {
    const { upstream, gateway } = await rig(ok, { streamIdleTimeoutMs: 300, bodyTimeoutMs: 30_000 });
    const body = ' '.repeat(60);
    const c = await rawConnect(gateway.port);
    c.socket.write(postHead(body.length));
    // A byte every 20 ms: three times the idle timeout in all, never silent for a tenth of it.
    for (let i = 0; i < body.length; i++) {
      c.socket.write(body[i]!);
      await delay(20);
    }
    expect(await c.until(/^HTTP\/1\.1 \d+ /)).toMatch(/^HTTP\/1\.1 200 /);
    expect(upstream.seen.map((s) => s.body.toString())).toEqual([body]);
    expect(gateway.counts().refusals[GatewayRefusal.STREAM_IDLE]).toBeUndefined();
    c.socket.destroy();
  });

  it('answers 408 with a JSON-RPC error and Connection: close to an upload slower than bodyTimeoutMs, and never forwards it', async () => {
    const { upstream, gateway } = await rig(ok, { bodyTimeoutMs: 200, streamIdleTimeoutMs: 0 });
    const c = await rawConnect(gateway.port);
    c.socket.write(postHead(1000));
    // A byte every 10 ms: the whole body would take ten seconds.
    const sent = await trickle(c, 999, 10);
    expect(sent).toBeLessThan(999);
    const answer = c.received();
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(errorOf(answer)).toMatchObject({ id: null, error: { code: GatewayErrorCode.TIMEOUT } });
    expect(errorOf(answer).error.message).toContain('--body-timeout');
    expect(upstream.seen).toHaveLength(0);
    expect(gateway.counts().refusals[GatewayRefusal.BODY_TIMEOUT]).toBe(1);
    expect(gateway.counts().open).toBe(0);
    c.socket.destroy();
  });

  it('answers 408 to a header block not in within headerTimeoutMs, and closes the connection', async () => {
    const { upstream, gateway } = await rig(ok, { headerTimeoutMs: 200 });
    const c = await rawConnect(gateway.port);
    c.socket.write('POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n');
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(errorOf(c.received()).error.code).toBe(GatewayErrorCode.TIMEOUT);
    expect(upstream.seen).toHaveLength(0);
    expect(gateway.counts().refusals[GatewayRefusal.HEADERS_TIMEOUT]).toBe(1);
  });

  it('closes a connection past maxConnections as it is accepted, counts it, and serves again once one closes', async () => {
    const { upstream, gateway, endpoint } = await rig(ok, { maxConnections: 3 });
    const held: RawConnection[] = [];
    for (let i = 0; i < 3; i++) held.push(await rawConnect(gateway.port));
    const fourth = await rawConnect(gateway.port);
    await fourth.closed;
    expect(fourth.received()).toBe('');
    await vi.waitFor(() => expect(gateway.counts().refusals[GatewayRefusal.TOO_MANY_CONNECTIONS]).toBe(1));

    // The held connections are served.
    held[0]!.socket.write('GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n');
    expect(await held[0]!.until(/^HTTP\/1\.1 200 /)).toBeTruthy();
    expect(upstream.seen).toHaveLength(1);

    // One closes: a new client is served (a try that still meets the cap is closed, and retried).
    held[0]!.socket.destroy();
    await vi.waitFor(async () => expect((await send(endpoint)).status).toBe(200), { timeout: 5_000 });
    for (const c of held) c.socket.destroy();
  });
});

describe('gateway: pipelining', () => {
  it('a pipelined request queued behind a response whose connection dies releases its exchange', async () => {
    // The first call's stream stays open; the second request waits behind it on the same connection.
    const held: (() => void)[] = [];
    const { gateway } = await rig((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n');
      held.push(() => res.end());
    });
    const body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}';
    const connection = await rawConnect(gateway.port);
    connection.socket.write(postHead(body.length) + body + postHead(body.length) + body);
    await connection.until(/notifications\/progress/);
    await vi.waitFor(() => expect(gateway.counts().open).toBe(2), { timeout: 5_000 });
    connection.socket.destroy();
    // Node never closes a response still queued behind another when the connection dies: the gateway
    // must see it go all the same, or each such connection keeps an exchange (--max-streams) for good.
    await vi.waitFor(() => expect(gateway.counts().open).toBe(0), { timeout: 5_000 });
    for (const end of held) end();
  });
});

describe('gateway: a refused body is answered so that its client reads the answer', () => {
  // The body crosses --max-body in the chunks sent before the client's event loop is busy, and the
  // whole body is under twice --max-body: the gateway reads and throws away the rest after its answer.
  const busy = { tries: 5, before: 5, after: 3, chunkBytes: 4 * 1024, busyMs: 150 } as const;
  const json = { 'content-type': 'application/json' };

  it('node:http (declared length and chunked) and fetch read 413 in every try', async () => {
    const { upstream, gateway, endpoint } = await rig(ok, { maxBodyBytes: 16 * 1024 });
    expect(await busyClientTries(endpoint, { ...busy, client: 'http', declared: true, headers: json })).toEqual(
      Array(5).fill(413),
    );
    expect(await busyClientTries(endpoint, { ...busy, client: 'http', headers: json })).toEqual(Array(5).fill(413));
    expect(await busyClientTries(endpoint, { ...busy, client: 'fetch', headers: json })).toEqual(Array(5).fill(413));
    expect(upstream.seen).toHaveLength(0);
    expect(gateway.counts().refusals[GatewayRefusal.BODY_TOO_LARGE]).toBe(15);
  });

  it('a client that keeps sending after its 413 is cut: the connection is not held', async () => {
    const { upstream, gateway } = await rig(ok, { maxBodyBytes: 16 * 1024 });
    const c = await rawConnect(gateway.port);
    c.socket.write(postHead('chunked'));
    const chunk = `${(16 * 1024).toString(16)}\r\n${' '.repeat(16 * 1024)}\r\n`;
    let sent = 0;
    // Up to 64 MiB: far past what the gateway reads of a refused body (twice --max-body) and what the
    // kernel buffers between the two hold.
    while (!c.socket.destroyed && sent < 4096) {
      sent++;
      if (!c.socket.write(chunk))
        await new Promise((resolve) => c.socket.once('drain', resolve).once('close', resolve));
    }
    await c.closed;
    expect(sent).toBeLessThan(4096);
    expect(c.received()).toMatch(/^HTTP\/1\.1 413 /);
    expect(upstream.seen).toHaveLength(0);
    expect(gateway.counts().refusals[GatewayRefusal.BODY_TOO_LARGE]).toBe(1);
  });
});
