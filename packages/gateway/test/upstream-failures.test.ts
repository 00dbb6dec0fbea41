import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { GatewayErrorCode, GatewayRefusal } from '@resumewatch/semconv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { refusedPort } from '@resumewatch/lab';
import { startGateway } from '../src/index.js';
import type { RunningGateway } from '../src/index.js';
import { open, send } from './helpers/raw-client.js';
import type { RawResponse } from './helpers/raw-client.js';
import { gatewayOptions, rigPerTest } from './helpers/scripted-upstream.js';

const rig = rigPerTest();
const closing: { close(): unknown }[] = [];
afterEach(async () => {
  for (const part of closing.splice(0)) await part.close();
});

const call = (id: string | number): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow' } });
const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

function rpcError(response: RawResponse): { jsonrpc: string; id: unknown; error: { code: number; message: string } } {
  expect(response.headers['content-type']).toBe('application/json');
  expect(response.headers['content-length']).toBe(String(response.body.byteLength));
  return JSON.parse(response.body.toString()) as {
    jsonrpc: string;
    id: unknown;
    error: { code: number; message: string };
  };
}

/** A raw TCP server on loopback that does `onSocket` with every connection (e.g. answers bytes that are no HTTP). */
async function tcpServer(onSocket: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> {
  const server = createServer(onSocket);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closing.push({ close: () => new Promise((resolve) => server.close(resolve)) });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server };
}

async function gatewayTo(upstream: string, options = {}): Promise<RunningGateway> {
  const gateway = await startGateway(gatewayOptions(upstream, options));
  closing.push(gateway);
  return gateway;
}

describe('gateway upstream failures', () => {
  it('answers 502 with a JSON-RPC error naming the request when nothing listens upstream', async () => {
    const gateway = await gatewayTo(`http://127.0.0.1:${await refusedPort()}/mcp`);
    const endpoint = new URL('/mcp', gateway.url).href;

    const post = await send(endpoint, { method: 'POST', headers: json, body: call(7) });
    expect(post.status).toBe(502);
    const body = rpcError(post);
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: GatewayErrorCode.UNAVAILABLE } });
    expect(body.error.message).toContain('ECONNREFUSED');

    const get = await send(endpoint, { headers: { accept: 'text/event-stream', 'mcp-session-id': 's' } });
    expect(get.status).toBe(502);
    expect(rpcError(get).id).toBeNull();

    // A batch names no single request; HEAD gets the status without a body.
    const batch = await send(endpoint, { method: 'POST', headers: json, body: `[${call(1)},${call(2)}]` });
    expect(rpcError(batch).id).toBeNull();
    const head = await send(endpoint, { method: 'HEAD' });
    expect(head.status).toBe(502);
    expect(head.body.byteLength).toBe(0);
    expect(gateway.counts().refusals[GatewayRefusal.UPSTREAM_UNREACHABLE]).toBe(4);
  });

  it('answers 504 when the upstream sends no headers within upstreamTimeoutMs, and cancels the upstream request', async () => {
    // The upstream never answers: only the 200 ms timeout can end the exchange (the idle timer's is 10 minutes).
    const { upstream, gateway, endpoint } = await rig(() => undefined, { upstreamTimeoutMs: 200 });
    const response = await send(endpoint, { method: 'POST', headers: json, body: call('call-9') });
    expect(response.status).toBe(504);
    expect(rpcError(response)).toMatchObject({ id: 'call-9', error: { code: GatewayErrorCode.TIMEOUT } });
    expect(await upstream.seen[0]!.closed).toEqual({ finished: false });
    expect(gateway.counts().refusals[GatewayRefusal.UPSTREAM_TIMEOUT]).toBe(1);
  });

  it('answers 502 when the upstream drops the connection or answers no HTTP before its headers', async () => {
    const { gateway, endpoint } = await rig((req) => req.socket.destroy());
    const dropped = await send(endpoint, { method: 'POST', headers: json, body: call(3) });
    expect(dropped.status).toBe(502);
    expect(rpcError(dropped).id).toBe(3);
    expect(gateway.counts().refusals[GatewayRefusal.UPSTREAM_UNREACHABLE]).toBe(1);

    const garbage = await tcpServer((socket) => {
      socket.once('data', () => socket.end('SSH-2.0-OpenSSH_9.6\r\n\r\n'));
    });
    const other = await gatewayTo(garbage.url);
    const parsed = await send(new URL('/mcp', other.url).href, { method: 'POST', headers: json, body: call(4) });
    expect(parsed.status).toBe(502);
    expect(rpcError(parsed).id).toBe(4);
  });

  it('passes the upstream’s own error answers through unchanged', async () => {
    const errorBody = JSON.stringify({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32001, message: 'Session not found' },
    });
    const { gateway, endpoint } = await rig((req, res) => {
      if (req.method === 'DELETE') return void res.writeHead(405, { allow: 'POST' }).end();
      res.writeHead(404, { 'content-type': 'application/json' }).end(errorBody);
    });
    const missing = await send(endpoint, { method: 'POST', headers: json, body: call(1) });
    expect(missing.status).toBe(404);
    expect(missing.body.toString()).toBe(errorBody);
    const deleted = await send(endpoint, { method: 'DELETE' });
    expect(deleted.status).toBe(405);
    expect(deleted.headers['allow']).toBe('POST');
    expect(gateway.counts().refusals).toEqual({});
  });

  it('breaks the client’s response when the upstream breaks mid-body, after passing what arrived', async () => {
    const first = 'id: 1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n';
    const { endpoint } = await rig((req, res) => {
      if (req.url?.includes('sized')) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"jsonrpc":"2.0",');
      } else {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(first);
      }
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const stream = await open(endpoint, { method: 'POST', headers: json, body: call(1) });
    // Never a clean end: a clean end tells an MCP client its stream is over, and it would not resume.
    expect(await stream.ended).toEqual({ complete: false });
    expect(stream.text()).toBe(first);

    const sized = await open(`${endpoint}?sized`, { method: 'POST', headers: json, body: call(2) });
    expect(await sized.ended).toEqual({ complete: false });
    expect(sized.text()).toBe('{"jsonrpc":"2.0",');
    await vi.waitFor(() => expect(sized.res.destroyed).toBe(true), { timeout: 1_000 });
  });
});
