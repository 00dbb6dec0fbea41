// An https upstream: the gateway trusts what --upstream-ca names besides Node's CAs, and answers 502
// naming the TLS failure when it cannot trust the upstream's certificate.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { GatewayRefusal } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../src/index.js';

const fixtures = join(import.meta.dirname, 'fixtures');
const cert = readFileSync(join(fixtures, 'upstream-cert.pem'), 'utf8');
const key = readFileSync(join(fixtures, 'upstream-key.pem'), 'utf8');

let upstream: Server;
let upstreamUrl: string;

beforeAll(async () => {
  upstream = createServer({ cert, key }, (req, res) => {
    req.resume();
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"result":{}}'),
    );
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
});
afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

const call = (url: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });

describe('an https upstream', () => {
  it('is reached with --upstream-ca naming its certificate', async () => {
    const gateway = await startGateway({ upstream: upstreamUrl, port: 0, upstreamCa: cert, detector: false });
    try {
      const res = await call(`${gateway.url}/mcp`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    } finally {
      await gateway.close();
    }
  });

  it('without it, is not trusted: 502 naming the TLS failure, counted', async () => {
    const gateway = await startGateway({ upstream: upstreamUrl, port: 0, detector: false });
    try {
      const res = await call(`${gateway.url}/mcp`);
      expect(res.status).toBe(502);
      const body = (await res.json()) as { id: unknown; error: { message: string } };
      expect(body.id).toBe(1);
      expect(body.error.message).toMatch(/SELF_SIGNED|CERT/);
      expect(gateway.counts().refusals[GatewayRefusal.UPSTREAM_UNREACHABLE]).toBe(1);
    } finally {
      await gateway.close();
    }
  });
});
